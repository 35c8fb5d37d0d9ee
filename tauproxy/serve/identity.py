"""Which sample a request to `tauproxy serve` is.

The key and the sample key are the in-process ones (`key.identify`), so one cassette serves both.
What the server cannot see is the harness's trial, so it is told, or it reads the request:

- With `X-Tauproxy-Scope: <task_id>/<trial>` (the last "/" splits, so task ids may contain slashes),
  occurrences count per request key within that scope, exactly as in-process: k identical calls in
  one trial are k samples.
- Without it, a request WITH a seed is one sample per (key, seed): the seed is the harness's sample
  signal (OpenAI's seed semantics: the same seed asks for the same draw), so identical seeded
  requests share one answer however many conversations send them, in whatever order. τ²-bench
  always sends one (a seed per trial, the same for every task of the trial).
- Without the header, a request WITHOUT a seed, from a harness that sends none, is a fresh draw
  each time it is sent, as from the real API: the n-th identical unseeded request of a session is
  occurrence n (from 0). Inspect's epochs, which send the byte-identical request k times with no
  seed and no header, get k samples, and the same k answers again on replay.
- Once a session has seen a seeded request, it is a seeded harness's session: its unseeded
  requests (τ²-bench's repetition and NL-assertion judges) are one sample per request too, as they
  always were, and as τ²-bench's own calls through tauproxy/tau2bench are identified in-process.
  Both kinds sit in the fixed scope ("serve", 0) (`key.SERVE_SCOPE`, which τ²-bench's own calls
  through tauproxy/tau2bench share). In every case a failed attempt (upstream error, replay miss, an
  answer that could not be recorded) gives its occurrence number back, so a client's retry is the
  same sample as its try.

A session is one pass of a harness; the occurrence counters of unseeded requests start again at 0
with each, so a second run against the same server asks for the samples the first one drew and
replays with 0 misses (auto and record mode share this server's own answers; replay reads them). The
session is never part of a key: sessions only say where counting starts again. A new one begins:
- when the server starts;
- when a client asks (`POST /v1/tauproxy/session`, e.g. between two runs in one process);
- in replay mode, when an unseeded request arrives with nothing else in flight and asks for a draw
  past the ones the cassette holds: the harness is starting over (how an unseeded harness run again
  against one replay server replays with 0 misses). A harness that asks for more draws than were
  recorded therefore gets the first ones again, not a miss; serve says so on stderr;
- when a request arrives after `--session-idle` seconds (DEFAULT_SESSION_IDLE_S) with nothing in
  flight: how two runs of an unseeded harness, one after the other, are told apart (0: off).

Why seeded requests are not counted. A counter in arrival order breaks when conversations start
with identical requests whose continuations depend on something the request does not show:
τ²-bench gives every task of a trial the same seed, and most telecom tasks share a user scenario
with another, so with counting the tasks would race for the numbers, a noisy model's recorded
answers would swap between tasks on replay, and the conversations would then miss at their own
tool results. With one sample per seeded request, a conversation's answers depend only on its own
messages: conversations that are identical so far get identical answers, and part ways exactly
when their requests do. The cassette layer sends concurrent identical misses upstream once (single
flight), so recording at any concurrency gives the same cassette shape, and replay at any
concurrency gives the same conversations. Identical requests of the SAME task (Inspect's epochs)
are interchangeable, so counting them is safe in any order: whichever epoch arrives first gets the
first recorded answer, and every later request of its conversation contains that answer, so it is
a distinct key that needs no counting.

The trade-offs:
- Unseeded identical requests from DIFFERENT tasks are counted too; if their conversations later
  part ways at a task's own tool result, a replay in another arrival order can hand one task the
  other's answer and then miss. A harness whose tasks open with identical requests sends a seed
  (or the scope header).
- A session is a seeded harness's from its first seeded request on: an unseeded harness sharing
  one server with a seeded one at the same time has its repeats answered alike until a new session
  begins (restart, POST, or the idle gap).
- A seeded harness that sends the identical request twice on purpose to draw two samples gets the
  same answer twice (the seed asks for that); vary the seed or send the scope header.
- The automatic session rules are guesses. A run that pauses longer than --session-idle with nothing
  in flight starts counting again mid-run: later identical unseeded requests then share earlier
  draws, and a replay that splits elsewhere can miss on one of them. Two runs of an
  unseeded harness closer together than --session-idle count as one (the second asks for new draws:
  auto pays for new draws; replay starts over as above). Ask for a session explicitly, or restart.
- A client that gives up on a call (its timeout) and sends it again gets a second draw; the first,
  recorded but never seen by the client, is what a replay answers with first.

`X-Tauproxy-Role: agent|user|judge` optionally names the caller's role; without it the role is
recognised from the system prompt (serve/roles.py). It is stored with recorded calls, steers the
nearest-call search of a miss report, and is never part of any key.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, get_args

from tauproxy.data_model.call import CallRole
from tauproxy.data_model.key import Occurrences, SampleIdentity, TrialScope, identify_unscoped, seed_of
from tauproxy.serve.errors import HttpError

SCOPE_HEADER = "x-tauproxy-scope"
ROLE_HEADER = "x-tauproxy-role"
SESSION_PATH = "/v1/tauproxy/session"  # POST: begin a new session
_ROLES: tuple[str, ...] = get_args(CallRole)
# Long enough that a run's own pauses (tools, scoring, a sample starting, a loaded machine) never
# reach it with nothing in flight: a 5 s gap was seen mid-run on a loaded 2-core box. A split
# mid-run would silently merge later draws into earlier ones; a missed split only costs new draws.
DEFAULT_SESSION_IDLE_S = 30.0


class Sessions:
    """The occurrence counters of unseeded requests without a scope header, one set per session.

    Every request the server answers is bracketed by `request()`, whose `InSession` identifies it.
    Thread-safe; `clock` is injectable so tests can pass time without waiting.
    """

    def __init__(self, idle_s: float | None = DEFAULT_SESSION_IDLE_S, clock: Callable[[], float] = time.monotonic):
        self.idle_s = idle_s if idle_s else None  # 0 or None: no idle rule
        self._clock = clock
        self._lock = threading.Lock()
        self._draws = Occurrences()
        self._seeded = False  # a seeded harness's session: its unseeded requests are not counted
        self._number = 1
        self._in_flight = 0
        self._idle_since: float | None = None  # when the last request in flight ended

    @property
    def number(self) -> int:
        """1 for the session the server started with, then one more for each new one."""
        with self._lock:
            return self._number

    def begin(self) -> int:
        """Start a new session now (a client asked): unseeded requests count from 0 again."""
        with self._lock:
            return self._begin()

    def _current(self) -> Occurrences:
        with self._lock:
            return self._draws

    def _begin(self) -> int:
        self._draws = Occurrences()
        self._seeded = False
        self._number += 1
        return self._number

    @contextmanager
    def request(self) -> Iterator[InSession]:
        """One request's place in its session, which begins first if the server sat idle long enough."""
        with self._lock:
            idle_since = self._idle_since
            idle = self._in_flight == 0 and idle_since is not None and self.idle_s is not None
            if idle and self._clock() - idle_since >= self.idle_s:  # type: ignore[operator]  # both set when idle
                self._begin()
            self._in_flight += 1
            draws, alone = self._draws, self._in_flight == 1
        try:
            yield InSession(self, draws, arrived_idle=alone)
        finally:
            with self._lock:
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._idle_since = self._clock()

    def _counter_for(self, draws: Occurrences, seeded: bool) -> Occurrences | None:
        """The counter an unseeded request draws from, or None in a seeded harness's session; a
        seeded request marks its session as one."""
        with self._lock:
            if seeded and draws is self._draws:
                self._seeded = True
            return None if seeded or (self._seeded and draws is self._draws) else draws


@dataclass(frozen=True)
class InSession:
    """One request without a scope header, in the session it arrived in."""

    sessions: Sessions
    draws: Occurrences  # its session's counters, kept so a failed attempt gives its number back there
    arrived_idle: bool  # nothing else was in flight when it arrived

    def identify(self, wire: dict[str, Any]) -> tuple[SampleIdentity, int]:
        """The request's sample identity (`key.identify_unscoped`) and call index, counted in this
        session unless it is a seeded harness's."""
        counter = self.sessions._counter_for(self.draws, seed_of(wire) is not None)
        return identify_unscoped(wire, draws=counter)

    def starting_over(self, identity: SampleIdentity) -> InSession | None:
        """In replay mode, an unseeded request that missed: if it arrived with nothing in flight and
        asked for a draw past the ones recorded, the harness is starting over; the new session it
        begins, or None. (A harness that asks for more draws than were recorded gets the first ones
        again instead of a miss, one line on stderr saying so.)"""
        if identity.seed is not None or identity.occurrence == 0 or not self.arrived_idle:  # 0: never counted
            return None
        number = self.sessions.begin()
        print(
            f"tauproxy serve: session {number} begins: a request asked for draw {identity.occurrence + 1} "
            "with nothing in flight and the cassette holds fewer; its draws count from the first again",
            file=sys.stderr,
            flush=True,
        )
        return InSession(self.sessions, self.sessions._current(), arrived_idle=True)

    def give_back(self, identity: SampleIdentity) -> None:
        """The attempt failed and recorded nothing: a counted occurrence is free again for the retry."""
        if identity.seed is None:  # (uncounted in a seeded harness's session: that counter is never read again)
            self.draws.give_back(identity)


def parse_scope(value: str | None) -> TrialScope | None:
    """The trial scope a client named, or None when it named none."""
    if value is None or not value.strip():
        return None
    task_id, slash, trial = value.strip().rpartition("/")
    if not slash or not task_id or not trial.strip().lstrip("-").isdigit():
        raise HttpError(400, f"{SCOPE_HEADER} must be '<task_id>/<trial>' with an integer trial, got {value!r}")
    return TrialScope(task_id=task_id, trial=int(trial))


def parse_role(value: str | None) -> CallRole | None:
    """The role a client named, or None (then serve/roles.py recognises it)."""
    if value is None or not value.strip():
        return None
    role = value.strip().lower()
    if role not in _ROLES:
        raise HttpError(400, f"{ROLE_HEADER} must be one of {', '.join(_ROLES)}, got {value!r}")
    return role  # type: ignore[return-value]  # checked against CallRole's values just above
