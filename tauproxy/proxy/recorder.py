"""The cassette layer: a Transport that replays recorded samples and records live ones.

It wraps the live transport (router). In replay mode there is no live transport at all, so a
replay can never reach the network or import a provider SDK.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tauproxy.data_model.call import CallRole, Usage
from tauproxy.errors import ReplayMissError
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.transport import Completion, PreparedCall, Transport
from tauproxy.data_model.wire import response_from_wire, response_to_wire
from tauproxy.store.cassette import Cassette
from tauproxy.store.diff import miss_message
from tauproxy.store.entry import CassetteEntry


class CassetteMode(StrEnum):
    REPLAY = "replay"  # hits only; a miss is an error
    RECORD = "record"  # always live; every call recorded
    AUTO = "auto"  # hits replay; misses go live and are recorded


@dataclass(frozen=True)
class CallRecording:
    """Everything `Cassette.record` needs for one live call, as one value.

    The thread path writes it at once; a Ray worker returns it to the driver, the single writer
    (proxy/collector.py). It holds the canonical wire request, never connection settings, so it can
    travel between processes without carrying a key.
    """

    wire_request: dict[str, Any]
    response_body: dict[str, Any]
    key: str
    sample_key: str
    task_id: str
    trial: int
    occurrence: int
    seed: int | None
    role: CallRole
    call_index: int
    usage: Usage
    cost_usd: float | None
    price_source: str | None
    latency_s: float

    @classmethod
    def of(cls, call: PreparedCall, completion: Completion, pricing: Pricing) -> CallRecording:
        response = completion.response
        cost = pricing.cost(call.request.model, response.usage)
        return cls(
            wire_request=call.wire,
            response_body=response_to_wire(response, call.request.model),
            key=call.key,
            sample_key=call.sample_key,
            task_id=call.context.scope.task_id,
            trial=call.context.scope.trial,
            occurrence=call.occurrence,
            seed=call.request.seed,
            role=call.context.role,
            call_index=call.context.call_index,
            usage=response.usage,
            cost_usd=cost.usd,
            price_source=cost.source,
            latency_s=completion.latency_s,
        )

    def write(self, cassette: Cassette) -> CassetteEntry:
        """Append durably (fsynced before return), exactly as a direct `Cassette.record` would."""
        return cassette.record(
            wire_request=self.wire_request,
            response_body=self.response_body,
            key=self.key,
            sample_key=self.sample_key,
            task_id=self.task_id,
            trial=self.trial,
            occurrence=self.occurrence,
            seed=self.seed,
            role=self.role,
            call_index=self.call_index,
            usage=self.usage,
            cost_usd=self.cost_usd,
            price_source=self.price_source,
            latency_s=self.latency_s,
        )


class CassetteTransport:
    def __init__(self, cassette: Cassette, mode: CassetteMode, live: Transport | None, pricing: Pricing) -> None:
        self.cassette = cassette
        self.mode = mode
        self._live = live
        self._pricing = pricing

    def complete(self, call: PreparedCall) -> Completion:
        if self.mode != CassetteMode.RECORD:
            entry = self.cassette.lookup(call.sample_key)
            if entry is not None:
                response = response_from_wire(self.cassette.response_of(entry))
                return Completion(response=response, source="replay", latency_s=entry.latency_s)
            if self.mode == CassetteMode.REPLAY or self._live is None:
                scope = call.context.scope
                raise ReplayMissError(
                    miss_message(
                        self.cassette,
                        call.wire,
                        task_id=scope.task_id,
                        trial=scope.trial,
                        role=call.context.role,
                        call_index=call.context.call_index,
                    )
                )
        assert self._live is not None
        completion = self._live.complete(call)
        self._record(call, completion)
        return completion

    def _record(self, call: PreparedCall, completion: Completion) -> None:
        CallRecording.of(call, completion, self._pricing).write(self.cassette)

    def close(self) -> None:
        if self._live is not None:
            self._live.close()
