"""One model request, of any wire API, answered through the cassette layer; HTTP-free, so tests and
benches can drive it directly.

The record/replay decision is not made here: it is `proxy.recorder.CassetteTransport`'s, the same
code `tauproxy run` uses, over serve's live transport (the provider's own endpoint for every wire
API, chat completions on an OpenAI-compatible route included; litellm for other providers' chat
completions, as in a run: wire_apis/registry.py). This module only turns a checked request
(wire_apis.base.ApiRequest) into a `ModelCall` (identity via `key.identify` over its keyed
form, where to go via the upstream map), and the layer's outcomes into HTTP:

    replay  a hit is answered from the cassette; a miss is an HttpError 404 carrying the miss
            report and never reaches the upstream
    auto    a hit replays; a miss goes live and is recorded before it is answered
    record  always live, always recorded, never read from the cassette
    (auto and record: a request that repeats a sample this server already sent live, as identical
    seeded requests without a scope header do, or a second run's, shares that answer: `shared`)
    off     no cassette: a plain proxy that still counts, prices and logs
A live answer is recorded (fsynced) before the client sees it, and is answered exactly as a replay
of it will be. Upstream failures are passed through with their status and are never recorded.
Replays are answered on the event loop, with no thread hop; live calls and cassette writes run in
daemon threads (serve/threads.py: reused, and left behind by a shutdown). Concurrent misses share
fsyncs: the cassette group-commits the calls recorded while an fsync runs (store/writer.py), and
each thread returns only after the fsync covering its call.
"""

from __future__ import annotations

import functools
import sys
import time
from typing import Any

from tauproxy.data_model.call import CallRole, CallSource, ModelCall, NativeRequest
from tauproxy.data_model.completion import Completion
from tauproxy.data_model.key import (
    Occurrences,
    TrialScope,
    identify,
    identify_unscoped,
    wire_api_of,
    without_connection_settings,
)
from tauproxy.errors import CassetteError, ModelCallError, ReplayMissError
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.priced import PricedTransport, cost_of
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.recorder import CassetteTransport
from tauproxy.proxy.transport import Transport
from tauproxy.results.fingerprint import request_fingerprints, system_sha256, wire_fingerprint
from tauproxy.serve.answered import AnsweredBodies
from tauproxy.serve.config import UpstreamMap
from tauproxy.serve.errors import HttpError
from tauproxy.serve.identity import InSession, Sessions
from tauproxy.serve.roles import recognise_role
from tauproxy.serve.runlog import RunLog, RunLogLine
from tauproxy.serve.stats import ServeStats
from tauproxy.serve.threads import OffLoop
from tauproxy.store.cassette import Cassette
from tauproxy.wire_apis.base import ApiRequest
from tauproxy.wire_apis.chat import ChatApi

# Threads at once for live calls and cassette writes; replays never leave the event loop.
MAX_WORKERS = 64
REPLAY_MISS_CODE = "tauproxy_replay_miss"
CHAT = ChatApi()


class CompletionService:
    def __init__(
        self,
        mode: RecordMode,
        cassette: Cassette | None,
        live: Transport | None,
        pricing: Pricing,
        routes: UpstreamMap | None = None,
        run_log: RunLog | None = None,
        sessions: Sessions | None = None,
    ) -> None:
        if mode == RecordMode.ONCE or (cassette is None) != (mode == RecordMode.OFF):
            raise ValueError(f"mode {mode.value} with{'out' if cassette is None else ''} a cassette")
        if live is None and mode != RecordMode.REPLAY:
            raise ValueError(f"mode {mode.value} needs a live transport")
        self.mode = mode
        self.cassette = cassette
        self.cache = CassetteTransport(cassette, mode, live, pricing) if cassette is not None else None
        # Without a cassette the pricing step sits on the live transport; the cache layer prices its own.
        self._live = PricedTransport(live, pricing) if live is not None and cassette is None else None
        self.routes = routes or UpstreamMap({})
        self.run_log = run_log
        self.stats = ServeStats()
        self.occurrences = Occurrences()  # per scope header, for the server's lifetime
        self.sessions = sessions or Sessions()  # unseeded requests without one (serve/identity.py)
        self._answered = AnsweredBodies()
        self._off_loop = OffLoop(MAX_WORKERS)

    def identify(
        self,
        body: dict[str, Any],
        scope: TrialScope | None,
        role: CallRole,
        native: NativeRequest | None = None,
        session: InSession | None = None,
    ) -> ModelCall:
        """Key the request (a chat body, or another wire API's keyed form with its `native` request);
        with a scope, claim its occurrence in that scope now, in arrival order.

        Without one (serve/identity.py), identical seeded requests are one sample, whatever their
        order; an unseeded one claims its next occurrence in its session (none given: occurrence 0).
        """
        wire = without_connection_settings(body)
        if scope is None:
            identity, call_index = session.identify(wire) if session is not None else identify_unscoped(wire)
        else:
            identity, call_index = identify(wire, scope, self.occurrences)
        route = self.routes.route(str(wire["model"]))
        return ModelCall(
            wire,
            identity,
            role,
            call_index,
            connection=route.connection(),
            upstream_model=route.litellm_model(str(wire["model"])),
            native=native,
        )

    async def complete(self, body: dict[str, Any], scope: TrialScope | None, role: CallRole | None) -> dict[str, Any]:
        """The chat.completion body for a chat-completions `body`, or an HttpError to send instead."""
        return (await self.answer(CHAT.request(body, {}), scope, role)).body

    def close(self) -> None:
        """End the threads that make live calls and cassette writes, once the calls they hold are done
        (threads.py). The cassette and the live transport are their owner's to close."""
        self._off_loop.close()

    async def answer(self, request: ApiRequest, scope: TrialScope | None, role: CallRole | None) -> Completion:
        """The answer to `request` (its `raw_body` set for APIs answered in their own shape), or an
        HttpError to send instead."""
        started = time.perf_counter()
        with self.sessions.request() as session:
            role = role or recognise_role(request.conversation)
            call = self.identify(request.keyed, scope, role, request.native, session)
            self.stats.request(call.model)
            try:
                completion = self.cache.replay(call) if self.cache is not None else None
                if completion is None and scope is None and self.mode == RecordMode.REPLAY:
                    restarted = session.starting_over(call.identity)
                    if restarted is not None:  # a harness run again against this replay server
                        session, call = restarted, self.identify(request.keyed, scope, role, request.native, restarted)
                        completion = self.cache.replay(call) if self.cache is not None else None
                if completion is None:
                    completion = await self._off_loop.run(functools.partial(self._complete_off_loop, call))
            except HttpError as error:
                # Nothing was recorded under its occurrence: the client's retry is the same sample.
                if scope is not None:
                    self.occurrences.give_back(call.identity)
                else:
                    session.give_back(call.identity)
                self._log(request, call, "replay" if error.code == REPLAY_MISS_CODE else "live", started, None, error)
                raise
        self._count(call, completion)
        self._log(request, call, completion.source, started, completion, None)
        if completion.raw_body is not None:
            self._answered.remember(call.api, completion)
        return completion

    def recorded_answer(self, api: str, response_id: str) -> str | None:
        """The body of an answer of `api` with this id, as its upstream sent it: one this server
        answered, else one the cassette holds (GET /v1/responses/{id}); None if neither has it."""
        found = self._answered.get(api, response_id)
        if found is not None or self.cassette is None:
            return found
        for entry in self.cassette.iter_entries():
            if entry.response.response_id == response_id and wire_api_of(entry.request.params) == api:
                return self.cassette.raw_body_of(entry)
        return None

    def _complete_off_loop(self, call: ModelCall) -> Completion:
        """A miss just looked up (or record mode, or no cassette): the cassette layer goes live and
        records, without looking the call up again; errors become HTTP."""
        try:
            if self.cache is not None:
                return self.cache.complete_miss(call)
            assert self._live is not None  # checked in __init__
            return self._live.complete(call)
        except ReplayMissError as exc:
            self.stats.miss(call.model)
            raise HttpError(404, str(exc), "replay_miss", REPLAY_MISS_CODE) from None
        except ModelCallError as exc:
            if self.mode.looks_up:
                self.stats.miss(call.model)
            self.stats.error(call.model)
            raise upstream_http_error(exc) from None
        except CassetteError as exc:
            # The call was paid for; answering it unrecorded would silently break the replay promise.
            print(f"tauproxy serve: {exc}", file=sys.stderr, flush=True)
            raise HttpError(
                500, f"the answer could not be recorded: {exc}", "server_error", "tauproxy_record_failed"
            ) from None

    def _count(self, call: ModelCall, completion: Completion) -> None:
        cost = cost_of(completion)
        if completion.source == "replay":
            self.stats.hit(call.model, cost.usd)
            return
        if completion.source == "shared":
            self.stats.shared(call.model, cost.usd)
            return
        if self.mode.looks_up:
            self.stats.miss(call.model)
        self.stats.live(call.model, cost.usd)

    def _log(
        self,
        request: ApiRequest,
        call: ModelCall,
        source: CallSource,
        started: float,
        completion: Completion | None,
        error: HttpError | None,
    ) -> None:
        if self.run_log is None:
            return
        messages = request.conversation
        reply = completion.body["choices"][0]["message"] if completion is not None else None
        cost = cost_of(completion) if completion is not None else None
        self.run_log.write(
            RunLogLine(
                ts=time.time(),
                sample_key=call.sample_key,
                key=call.key,
                model=call.model,
                api=call.api,
                scope=call.scope,
                occurrence=call.identity.occurrence,
                call_index=call.call_index,
                seed=call.identity.seed,
                role=call.role,
                source=source,
                status=error.status if error is not None else 200,
                error_code=error.code if error is not None else None,
                usage=completion.usage if completion is not None else None,
                cost_usd=cost.usd if cost is not None else None,
                price_source=cost.source if cost is not None else None,
                latency_s=round(time.perf_counter() - started, 6),
                recorded_latency_s=completion.latency_s
                if completion is not None and completion.source != "live"
                else None,
                request_fp=request_fingerprints(messages),
                response_fp=wire_fingerprint(reply) if reply is not None else None,
                system_sha256=system_sha256(messages),
            )
        )


def upstream_http_error(exc: ModelCallError) -> HttpError:
    """The HTTP error a client should see for a failed upstream call."""
    message = f"upstream {exc}"
    if exc.code == "upstream_timeout":
        return HttpError(504, message, "timeout_error", exc.code)
    if exc.code is not None or exc.status_code is None:
        return HttpError(502, message, "server_error", exc.code or "upstream_unreachable")
    headers = {"Retry-After": exc.retry_after} if exc.retry_after is not None else {}
    return HttpError(exc.status_code, message, headers=headers)
