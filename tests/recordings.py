"""`CallRecording`s for store tests: a request and a response body, with the identity worked out."""

from __future__ import annotations

from typing import Any

from tauproxy.data_model.call import CallRole, Usage
from tauproxy.data_model.completion import CallRecording
from tauproxy.data_model.key import SampleIdentity, TrialScope, request_key, sample_key, seed_of


def recording(
    request: dict[str, Any],
    response: dict[str, Any],
    *,
    task_id: str = "t1",
    trial: int = 0,
    occurrence: int = 0,
    role: CallRole = "agent",
    call_index: int = 0,
    usage: Usage | None = None,
    cost_usd: float | None = None,
    price_source: str | None = None,
    latency_s: float = 0.0,
    key: str | None = None,
    sample: str | None = None,
) -> CallRecording:
    """`key` and `sample` override the computed ones (to test that the cassette refuses a wrong one)."""
    key = key or request_key(request)
    seed = seed_of(request)
    identity = SampleIdentity(
        key=key,
        seed=seed,
        scope=TrialScope(task_id=task_id, trial=trial),
        occurrence=occurrence,
        sample_key=sample or sample_key(key, seed, task_id, trial, occurrence),
    )
    return CallRecording(
        wire=request,
        identity=identity,
        role=role,
        call_index=call_index,
        response_body=response,
        usage=usage or Usage(),
        cost_usd=cost_usd,
        price_source=price_source,
        latency_s=latency_s,
    )
