"""Match the calls in a `tauproxy serve` run log to the simulations of a run another harness made.

A harness such as tau2-bench saves conversations, not calls; the run log saves calls, not
conversations. They meet on what both know: every successful call's answer became one message
of one simulation, and the request that produced it held (a view of) the conversation before it.

The rule, per log line in file order (only lines with status 200 take part):
1. Candidates are the messages, in every simulation whose seed equals the request's seed (any
   simulation when the request had no seed), whose role-blind fingerprint (`fingerprint.py`: the
   text, or the tool-call ids of a text-less message) equals the answer's, and that no earlier line
   has claimed. A message is produced by exactly one call, so claims never overlap.
2. An exact match is a candidate at position p where the request's non-system messages, by
   fingerprint, occur in order within the simulation's messages before p (a subsequence, not a
   prefix: the user simulator sees the agent's text but not its tool traffic, and its own system
   prompt is left out on both sides). The first simulation in file order wins, and within it the
   earliest such p after the request's messages.
3. Failing that, the first candidate is taken as a loose match (`exact=False`): a harness that
   rewrote its messages before sending them still joins on seed and answer.
4. Anything else is left unmatched (e.g. a judge's calls, whose answers are not in the transcript).

The role of a matched call is the side that said the matched message: an assistant message is the
agent's call, a user message the user simulator's. No system prompt has to be known for that; the
request's system-prompt hash is kept in the run log for harnesses whose transcripts lack roles.
A replayed or shared call's latency is its recorded one, as in-process records have it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from tauproxy.data_model.call import CallRecord, CallRole, Usage
from tauproxy.data_model.result import Results, SimulationRun
from tauproxy.results.fingerprint import message_fingerprint
from tauproxy.results.run_log import RunLogLine, parse_run_log, read_run_log


@dataclass(frozen=True)
class JoinedCall:
    simulation_id: str
    position: int  # index of the answer in the simulation's messages
    role: CallRole
    exact: bool
    line: RunLogLine

    def record(self, index: int) -> CallRecord:
        line = self.line
        assert line.key is not None and line.sample_key is not None  # only identified calls join
        latency = line.recorded_latency_s if line.source != "live" and line.recorded_latency_s else line.latency_s
        return CallRecord(
            index=index,
            role=self.role,
            model=line.model,
            key=line.key,
            sample_key=line.sample_key,
            source=line.source,
            usage=line.usage or Usage(),
            cost_usd=line.cost_usd,
            price_source=line.price_source,
            latency_s=latency,
        )


@dataclass
class JoinResult:
    by_simulation: dict[str, list[JoinedCall]] = field(default_factory=dict)
    unmatched: list[RunLogLine] = field(default_factory=list)
    failed: list[RunLogLine] = field(default_factory=list)  # calls answered with an error status

    def records(self, simulation_id: str) -> list[CallRecord]:
        joined = sorted(self.by_simulation.get(simulation_id, []), key=lambda call: call.position)
        return [call.record(index) for index, call in enumerate(joined)]

    @property
    def matched(self) -> int:
        return sum(len(calls) for calls in self.by_simulation.values())


class _Transcript:
    """One simulation's messages as fingerprints, with their roles."""

    def __init__(self, simulation: SimulationRun) -> None:
        self.simulation = simulation
        self.prints = [message_fingerprint(m) for m in simulation.messages]

    def end_of(self, request_fp: list[str]) -> int | None:
        """Index just past the leftmost in-order occurrence of `request_fp`, or None if absent."""
        position = 0
        for wanted in request_fp:
            while position < len(self.prints) and self.prints[position] != wanted:
                position += 1
            if position == len(self.prints):
                return None
            position += 1
        return position

    def role_at(self, position: int) -> CallRole | None:
        role = self.simulation.messages[position].role
        return "agent" if role == "assistant" else "user" if role == "user" else None


def _lines(log_lines: Iterable[RunLogLine | str]) -> list[RunLogLine]:
    items = list(log_lines)
    texts = [item for item in items if isinstance(item, str)]
    parsed = parse_run_log(texts) if texts else []
    return [*[item for item in items if isinstance(item, RunLogLine)], *parsed]


def join_run_log(results: Results, log_lines: Iterable[RunLogLine | str]) -> JoinResult:
    """Assign each successful logged call to the simulation message it produced (rule: module doc)."""
    transcripts = [_Transcript(sim) for sim in results.simulations]
    spots: dict[str, list[tuple[int, int]]] = {}  # fingerprint -> (transcript, position), file order
    for t_index, transcript in enumerate(transcripts):
        for position, print_ in enumerate(transcript.prints):
            if print_ is not None and transcript.role_at(position) is not None:
                spots.setdefault(print_, []).append((t_index, position))
    claimed: set[tuple[int, int]] = set()
    joined = JoinResult()
    for line in _lines(log_lines):
        if not line.ok:
            joined.failed.append(line)
            continue
        spot = _choose(line, transcripts, spots.get(line.response_fp or "", []), claimed)
        if spot is None:
            joined.unmatched.append(line)
            continue
        (t_index, position), exact = spot
        claimed.add((t_index, position))
        transcript = transcripts[t_index]
        role = transcript.role_at(position)
        assert role is not None  # spots only holds agent and user messages
        sim_id = transcript.simulation.id
        joined.by_simulation.setdefault(sim_id, []).append(JoinedCall(sim_id, position, role, exact, line))
    return joined


def _choose(
    line: RunLogLine,
    transcripts: list[_Transcript],
    candidates: list[tuple[int, int]],
    claimed: set[tuple[int, int]],
) -> tuple[tuple[int, int], bool] | None:
    free = [
        (t, p)
        for t, p in candidates
        if (t, p) not in claimed and (line.seed is None or transcripts[t].simulation.seed == line.seed)
    ]
    for t, p in free:
        end = transcripts[t].end_of(line.request_fp)
        if end is not None and p >= end:
            return (t, p), True
    return (free[0], False) if free else None


R = TypeVar("R", bound=Results)


def annotate_results_with_log(results: R, log_path: Path) -> R:
    """`results` with each simulation's `calls` filled from a serve run log (kept where none join)."""
    return with_joined_calls(results, join_run_log(results, read_run_log(log_path)))


def with_joined_calls(results: R, joined: JoinResult) -> R:
    """`results` with the calls of `joined` as the `calls` of the simulations they joined."""
    simulations = [
        sim.model_copy(update={"calls": joined.records(sim.id)}) if sim.id in joined.by_simulation else sim
        for sim in results.simulations
    ]
    return results.model_copy(update={"simulations": simulations})
