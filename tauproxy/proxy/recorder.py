"""The cassette layer: the one place where recorded samples are replayed and live ones recorded.

`tauproxy run` (threads), its Ray workers and `tauproxy serve` all answer through `CassetteTransport`;
only what happens to a new recording differs (appended at once, or collected for the Ray driver).

It wraps the live transport. In replay mode there is no live transport at all, so a replay can never
reach the network or import a provider SDK.

What a call costs is decided by the pricing step (priced.py), which this layer applies once: under
it to a live answer (so the cost is recorded with the call), here to a replay (at this run's prices,
what it saved, falling back to the price recorded with it when its model has no price now).

A live answer is returned in the form a replay of it will have (`wire_form.replay_form`), so the
first run and its replay see the same answers.

Serve looks a call up on its event loop and sends only a miss to a worker thread, so the layer has
the two halves as entry points too: `replay` (hit or None) and `complete_miss`.

Where an answer comes from (`Completion.source`):

    live    this call went to the provider (and was recorded)
    shared  an identical sample this run already sent live: its one answer, kept in memory (calls
            that name no trial are one sample per distinct request, serve/identity.py; so are a
            retried trial's calls). Never a second live call, never an older recording
    replay  read from the cassette: recorded before this run, or by it in auto and replay mode

In `record` mode nothing recorded before this run is ever read: every answer is this run's own, live
or shared. A shared answer is read back from the cassette, where its live call appended it: only for
a sample this layer recorded (`recorded_keys`), so what it finds is that line (the last line of a
sample wins), never an older recording. Nothing of the answer stays in memory: a serve that records
for days keeps a sample key per live call, not its bodies (kept, they cost twice the answer's size a
call: 3-7 KB of real answers). A Ray worker's recordings go to the driver, not into its copy of the
cassette, so there (`recorder` given) the answers a trial shares are kept in memory, for the trial's
length.

`rewrite` is `record` whose session ends with `keep_only_this_session`: the cassette is then pruned
(atomically, store/rewrite.py) to the samples this layer recorded, so a call no longer made is gone.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tauproxy.data_model.call import CallSource, Cost, ModelCall
from tauproxy.data_model.completion import CallRecording, Completion
from tauproxy.errors import CassetteError, CassetteWriteError, ReplayMiss, ReplayMissError
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.priced import PricedTransport, PriceStep, cost_of
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.transport import Transport
from tauproxy.store.cassette import Cassette
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.maintenance import prune
from tauproxy.store.miss import replay_miss
from tauproxy.store.wire_form import replay_form


@dataclass(frozen=True)
class _Sent:
    """This run's live answer to one sample, as a replay of it will be: what identical calls share."""

    body_json: str  # a fresh body per share: callers may change what they are given
    latency_s: float
    cost: Cost
    raw_body: str | None
    content_type: str | None


# What becomes of a new recording: the thread path and serve append it (Cassette.record); a Ray
# worker collects it for the driver, the single writer. It must raise if the recording is lost.
Recorder = Callable[[CallRecording], None]


class CassetteTransport:
    """Replays what `cassette` holds and records what `live` answers, as `mode` says.

    `mode` is resolved (never ONCE, never OFF: a run without a cassette has no cassette layer).
    """

    def __init__(
        self,
        cassette: Cassette,
        mode: RecordMode,
        live: Transport | None,
        pricing: Pricing,
        recorder: Recorder | None = None,
    ) -> None:
        if mode in (RecordMode.ONCE, RecordMode.OFF):
            raise ValueError(f"the cassette layer needs a resolved mode, not {mode.value}")
        if live is None and mode != RecordMode.REPLAY:
            raise ValueError(f"mode {mode.value} needs a live transport")
        self.cassette = cassette
        self.mode = mode
        self._live = PricedTransport(live, pricing) if live is not None else None
        self._price = PriceStep(pricing)
        self._recorder: Recorder = recorder if recorder is not None else self._append
        # Single flight: concurrent calls of one sample key (possible only when callers share sample
        # identities, as serve's clients without a scope header do) send one live call; the others
        # wait and share its answer. Later ones share it too, in every mode, so one run never holds
        # two different answers to one sample.
        self._lock = threading.Lock()
        self._in_flight: dict[str, threading.Event] = {}
        # This run's live answers, kept only when they are not appended to `cassette` (a collector);
        # None: they are read back from the cassette.
        self._sent: dict[str, _Sent] | None = None if recorder is None else {}
        self.recorded_keys: set[str] = set()  # sample keys this layer recorded (what `rewrite` keeps)

    def _append(self, recording: CallRecording) -> None:
        self.cassette.record(recording)

    def replay(self, call: ModelCall) -> Completion | None:
        """The answer `call` has without going live (priced), or None: shared from this run's own
        live call, else (auto, replay) read from the cassette. Cheap: a dict or an index lookup."""
        shared = self._shared(call)
        if shared is not None or not self.mode.looks_up:
            return shared
        entry = self.cassette.lookup(call.sample_key)
        if entry is None:
            return None
        with self._lock:
            # A live call of this run records before it keeps its answer to share, and stays in flight
            # until it has kept it: an entry found in that window is this run's own, so it is shared
            # (or waited for, in complete_miss), never counted as a recording made before this run.
            ours = call.sample_key in self._in_flight or call.sample_key in self.recorded_keys
        return self._shared(call) if ours else self._answer_of(call, entry, "replay")

    def _answer_of(self, call: ModelCall, entry: CassetteEntry, source: CallSource) -> Completion:
        """A recorded call's answer, as a replay gives it (priced)."""
        answer = Completion(
            body=self.cassette.response_of(entry),
            source=source,
            latency_s=entry.latency_s,
            raw_body=self.cassette.raw_body_of(entry),
            content_type=entry.response.content_type,
        )
        return self._price.apply(call, answer, Cost(entry.cost_usd, entry.price_source or "recorded"))

    def complete(self, call: ModelCall) -> Completion:
        replayed = self.replay(call)
        return replayed if replayed is not None else self.complete_miss(call)

    def complete_miss(self, call: ModelCall) -> Completion:
        """Answer `call`, which `replay` just missed: live and recorded, or a ReplayMissError in replay mode."""
        if self._live is None:
            raise ReplayMissError(self.miss(call))
        while True:
            with self._lock:
                # A leader may have answered this sample since `replay` missed it (serve looks a
                # call up on its loop, then waits for a thread). A leader records its answer before
                # it leaves, so a new miss costs no second lookup.
                answered = call.sample_key in self.recorded_keys
                leader = None if answered else self._in_flight.get(call.sample_key)
                if not answered and leader is None:
                    done = self._in_flight[call.sample_key] = threading.Event()
                    break
            if answered:
                shared = self._shared(call)  # outside the lock: it may read the cassette
                assert shared is not None  # a sample this layer recorded is always shared
                return shared
            assert leader is not None
            leader.wait()  # then share what it answered, or, if it failed, try ourselves
        try:
            return self._go_live(call)
        finally:
            with self._lock:
                del self._in_flight[call.sample_key]
            done.set()

    def _go_live(self, call: ModelCall) -> Completion:
        assert self._live is not None
        completion = self._live.complete(call)
        cost = cost_of(completion)
        recording = CallRecording.of(call, completion, cost)
        try:
            self._recorder(recording)  # durably, before the answer is used
        except CassetteWriteError:
            raise
        except CassetteError as exc:
            raise CassetteWriteError(
                f"cassette {self.cassette.directory} is not writable ({exc}); stopping so that no further "
                "paid answer goes unrecorded: fix it and rerun the same command to resume"
            ) from None
        body = replay_form(recording)
        with self._lock:
            self.recorded_keys.add(call.sample_key)
            if self._sent is not None:
                self._sent[call.sample_key] = _Sent(
                    json.dumps(body), recording.latency_s, cost, recording.raw_body, recording.content_type
                )
        return Completion(
            body=body,
            source="live",
            latency_s=recording.latency_s,  # as recorded, so that the live run and its replay agree
            cost=cost,
            raw_body=recording.raw_body,
            content_type=recording.content_type,
        )

    def _shared(self, call: ModelCall) -> Completion | None:
        """This run's live answer to `call`'s sample, for a call that repeats it, or None. One source
        decides (the cassette's record of keys, or the kept answers), so a leader adding its answer
        meanwhile is seen whole or not at all."""
        if self._sent is None:
            return self._read_back(call) if call.sample_key in self.recorded_keys else None
        sent = self._sent.get(call.sample_key)
        if sent is None:
            return None
        answer = Completion(
            body=json.loads(sent.body_json),
            source="shared",
            latency_s=sent.latency_s,
            raw_body=sent.raw_body,
            content_type=sent.content_type,
        )
        return self._price.apply(call, answer, sent.cost)

    def _read_back(self, call: ModelCall) -> Completion:
        """The answer this layer recorded for `call`'s sample, read from the cassette."""
        entry = self.cassette.lookup(call.sample_key)
        if entry is None:
            raise CassetteWriteError(
                f"cassette {self.cassette.directory} no longer holds the call this run recorded for sample "
                f"{call.sample_key[:12]} (pruned or rewritten by another command while this one recorded); "
                "stopping rather than paying for it again: rerun the same command to resume"
            )
        return self._answer_of(call, entry, "shared")

    def miss(self, call: ModelCall) -> ReplayMiss:
        """Why `call` is not in the cassette: the nearest recorded call and how it differs."""
        return replay_miss(
            self.cassette,
            call.wire,
            task_id=call.scope.task_id,
            trial=call.scope.trial,
            role=call.role,
            call_index=call.call_index,
            occurrence=call.identity.occurrence,
            made_in=call.made_in,
        )

    def keep_only_this_session(self, also: set[str] | None = None) -> int:
        """Prune the cassette to the samples this layer recorded (and `also`: other layers' of the same
        session); the number of calls removed. What `rewrite` does when its session ends."""
        with self._lock:
            keep = self.recorded_keys | (also or set())
        return prune(self.cassette, keep)

    def close(self) -> None:
        """Close the live transport and release the cassette's file and index connection."""
        if self._live is not None:
            self._live.close()
        self.cassette.close()


def over_cassette(path: Path, mode: RecordMode, live: Transport, pricing: Pricing) -> CassetteTransport:
    """The cassette layer over the cassette at `path`, its mode resolved (`once`) from what it holds.

    The live transport is kept only when the resolved mode can go live, so a replay holds none.
    """
    cassette = Cassette.open(path, create=mode != RecordMode.REPLAY)
    resolved = mode.resolved(cassette.is_empty())
    return CassetteTransport(cassette, resolved, live if resolved.goes_live else None, pricing)
