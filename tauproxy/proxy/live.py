"""Live calls through litellm. litellm is imported here, on the first live call, and nowhere else."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from tauproxy.errors import ModelCallError
from tauproxy.redact import redact_text
from tauproxy.proxy.transport import Completion, PreparedCall
from tauproxy.data_model.wire import response_from_wire

_import_lock = threading.Lock()


def _litellm() -> Any:
    with _import_lock:
        # Without the local map litellm fetches prices over the network at import and stalls offline.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        # litellm prints a "Give Feedback" banner to stdout on every error.
        litellm.suppress_debug_info = True
        return litellm


def litellm_completion(kwargs: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """One non-streaming litellm call: the response body as a dict and the latency in seconds.

    Provider exceptions propagate as litellm raised them; each caller maps them its own way.
    """
    litellm = _litellm()
    started = time.perf_counter()
    raw = litellm.completion(**kwargs)
    latency = time.perf_counter() - started
    return (raw.model_dump() if hasattr(raw, "model_dump") else dict(raw)), latency


class LiteLLMTransport:
    def complete(self, call: PreparedCall) -> Completion:
        connection = call.request.connection
        kwargs: dict[str, Any] = dict(call.wire)
        for name in ("api_base", "api_key", "api_version", "timeout", "num_retries", "extra_headers"):
            value = getattr(connection, name)
            if value is not None:
                kwargs[name] = value
        try:
            body, latency = litellm_completion(kwargs)
        except Exception as exc:
            status = getattr(exc, "status_code", None)
            message = redact_text(f"{type(exc).__name__}: {exc}", (connection.api_key or "",))
            raise ModelCallError(f"{call.request.model}: {message}", status_code=status) from None
        try:
            response = response_from_wire(body)
        except ValueError as exc:
            raise ModelCallError(f"{call.request.model}: malformed response: {exc}") from None
        return Completion(response=response, source="live", latency_s=latency)

    def close(self) -> None:
        return None
