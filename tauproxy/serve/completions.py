"""The record/replay decision for one chat-completion request; HTTP-free, so tests and benches can
drive it directly.

Modes mean what they mean in-process (tauproxy.runner.config.RecordMode):
    replay  a hit is answered from the cassette; a miss is an HttpError 404 carrying the miss
            report (tauproxy.store.diff.miss_message) and never reaches the upstream
    auto    a hit replays; a miss goes live and is recorded before it is answered
    record  always live, always recorded
    off     no cassette: a plain proxy that still counts, prices and logs
A live answer is recorded (fsynced) before the client sees it, and is then answered exactly as a
replay of it would be, so a client cannot tell the first run from the replay. Upstream failures
are passed through with their status and are never recorded.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from tauproxy.data_model.call import CallRole, CallSource, TrialScope, Usage
from tauproxy.errors import CassetteError
from tauproxy.data_model.key import EXCLUDED_PARAMS, request_key, sample_key, seed_of
from tauproxy.proxy.pricing import Cost, Pricing
from tauproxy.proxy.recorder import CallRecording
from tauproxy.data_model.wire import usage_from_wire
from tauproxy.proxy.modes import RecordMode
from tauproxy.serve.errors import HttpError
from tauproxy.serve.fingerprint import request_fingerprints, system_sha256, wire_fingerprint
from tauproxy.serve.identity import CallSlot, Occurrences
from tauproxy.serve.runlog import RunLog, RunLogLine
from tauproxy.serve.stats import ServeStats
from tauproxy.serve.upstream import LiveAnswer, Upstream
from tauproxy.store.cassette import Cassette
from tauproxy.store.diff import miss_message

# Worker threads for live calls and cassette writes; replays never leave the event loop.
MAX_WORKERS = 64
REPLAY_MISS_CODE = "tauproxy_replay_miss"

T = TypeVar("T")


@dataclass(frozen=True)
class ServedCall:
    """One request with its identity worked out: what is keyed, recorded and forwarded."""

    wire: dict[str, Any]  # the body minus transport and connection fields (EXCLUDED_PARAMS)
    key: str
    sample_key: str
    seed: int | None
    scope: TrialScope
    role: CallRole
    slot: CallSlot

    @property
    def model(self) -> str:
        return str(self.wire["model"])


@dataclass(frozen=True)
class Outcome:
    body: dict[str, Any]
    source: CallSource
    usage: Usage
    cost: Cost
    recorded_latency_s: float | None = None


class CompletionService:
    def __init__(
        self,
        mode: RecordMode,
        cassette: Cassette | None,
        upstream: Upstream | None,
        pricing: Pricing,
        run_log: RunLog | None = None,
    ) -> None:
        if mode == RecordMode.ONCE or (cassette is None) != (mode == RecordMode.OFF):
            raise ValueError(f"mode {mode.value} with{'out' if cassette is None else ''} a cassette")
        if upstream is None and mode != RecordMode.REPLAY:
            raise ValueError(f"mode {mode.value} needs an upstream")
        self.mode = mode
        self.cassette = cassette
        self.upstream = upstream
        self.pricing = pricing
        self.run_log = run_log
        self.stats = ServeStats()
        self.occurrences = Occurrences()
        self._limiter: anyio.CapacityLimiter | None = None

    def identify(self, body: dict[str, Any], scope: TrialScope, role: CallRole) -> ServedCall:
        """Key the request and claim its occurrence now, in arrival order."""
        wire = {name: value for name, value in body.items() if name not in EXCLUDED_PARAMS}
        key = request_key(wire)
        seed = seed_of(wire)
        slot = self.occurrences.take(scope, key)
        skey = sample_key(key, seed, scope.task_id, scope.trial, slot.occurrence)
        return ServedCall(wire, key, skey, seed, scope, role, slot)

    async def complete(self, body: dict[str, Any], scope: TrialScope, role: CallRole) -> dict[str, Any]:
        """The chat.completion body for `body`, or an HttpError to send instead."""
        started = time.perf_counter()
        call = self.identify(body, scope, role)
        self.stats.request(call.model)
        source: list[CallSource] = ["replay"]  # where the answer came from, as far as we got
        try:
            outcome = await self._answer(call, source)
        except HttpError as error:
            self._log(call, source[0], started, None, error)
            raise
        self._log(call, outcome.source, started, outcome, None)
        return outcome.body

    async def _answer(self, call: ServedCall, source: list[CallSource]) -> Outcome:
        if self.cassette is not None and self.mode != RecordMode.RECORD:
            entry = self.cassette.lookup(call.sample_key)
            if entry is not None:
                cost = Cost(entry.cost_usd, entry.price_source or "recorded")
                self.stats.hit(call.model, entry.cost_usd)
                return Outcome(self.cassette.response_of(entry), "replay", entry.usage, cost, entry.latency_s)
            self.stats.miss(call.model)
            if self.mode == RecordMode.REPLAY:
                report = await self._in_thread(self._miss_report, call)
                raise HttpError(404, report, "replay_miss", REPLAY_MISS_CODE)
        source[0] = "live"
        assert self.upstream is not None  # checked in __init__: every mode but replay has one
        try:
            live = await self._in_thread(self.upstream.complete, call.wire)
        except HttpError:
            self.stats.error(call.model)
            raise
        usage = usage_from_wire(live.body.get("usage"))
        cost = self._price(live, call.model, usage)
        body = live.body
        if self.cassette is not None:
            body = await self._in_thread(self._record, call, live, usage, cost)
        self.stats.live(call.model, cost.usd)
        return Outcome(body, "live", usage, cost)

    def _miss_report(self, call: ServedCall) -> str:
        assert self.cassette is not None
        return miss_message(
            self.cassette,
            call.wire,
            task_id=call.scope.task_id,
            trial=call.scope.trial,
            role=call.role,
            call_index=call.slot.call_index,
        )

    def _price(self, live: LiveAnswer, asked: str, usage: Usage) -> Cost:
        # The upstream model is the real one; the asked name may be an alias a prices file names.
        cost = self.pricing.cost(live.upstream_model, usage)
        return cost if cost.usd is not None else self.pricing.cost(asked, usage)

    def _record(self, call: ServedCall, live: LiveAnswer, usage: Usage, cost: Cost) -> dict[str, Any]:
        assert self.cassette is not None
        try:
            recording = CallRecording(
                wire_request=call.wire,
                response_body=live.body,
                key=call.key,
                sample_key=call.sample_key,
                task_id=call.scope.task_id,
                trial=call.scope.trial,
                occurrence=call.slot.occurrence,
                seed=call.seed,
                role=call.role,
                call_index=call.slot.call_index,
                usage=usage,
                cost_usd=cost.usd,
                price_source=cost.source,
                latency_s=round(live.latency_s, 6),
            )
            entry = recording.write(self.cassette)
        except CassetteError as exc:
            # The call was paid for; answering it unrecorded would silently break the replay promise.
            print(f"tauproxy serve: {exc}", file=sys.stderr, flush=True)
            raise HttpError(
                500, f"the answer could not be recorded: {exc}", "server_error", "tauproxy_record_failed"
            ) from None
        # Answer exactly what a replay will answer, so the first run and its replay are identical.
        return self.cassette.response_of(entry)

    async def _in_thread(self, func: Callable[..., T], *args: Any) -> T:
        if self._limiter is None:  # created on the loop that uses it
            self._limiter = anyio.CapacityLimiter(MAX_WORKERS)
        return await anyio.to_thread.run_sync(functools.partial(func, *args), limiter=self._limiter)

    def _log(
        self,
        call: ServedCall,
        source: CallSource,
        started: float,
        outcome: Outcome | None,
        error: HttpError | None,
    ) -> None:
        if self.run_log is None:
            return
        messages = call.wire.get("messages") or []
        reply = outcome.body["choices"][0]["message"] if outcome is not None else None
        self.run_log.write(
            RunLogLine(
                ts=time.time(),
                sample_key=call.sample_key,
                key=call.key,
                model=call.model,
                scope=call.scope,
                occurrence=call.slot.occurrence,
                call_index=call.slot.call_index,
                seed=call.seed,
                role=call.role,
                source=source,
                status=error.status if error is not None else 200,
                error_code=error.code if error is not None else None,
                usage=outcome.usage if outcome is not None else None,
                cost_usd=outcome.cost.usd if outcome is not None else None,
                price_source=outcome.cost.source if outcome is not None else None,
                latency_s=round(time.perf_counter() - started, 6),
                recorded_latency_s=outcome.recorded_latency_s if outcome is not None else None,
                request_fp=request_fingerprints(messages),
                response_fp=wire_fingerprint(reply) if reply is not None else None,
                system_sha256=system_sha256(messages),
            )
        )
