"""Money: live spend, replayed (saved) spend and shared (saved) spend, split by role, model and task.
Unknown stays unknown.

A shared call is one the run answered with its own earlier live answer to the identical sample
(proxy/recorder.py): it cost nothing of its own, like a replay, but came from no cassette.
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel, Field

from tauproxy.data_model.call import CallRecord
from tauproxy.data_model.result import SimulationRun


class Tally(BaseModel):
    """The calls on one side, live, replayed or shared, of one group (or of all calls)."""

    # None as soon as one call has no price; the priced part stays visible in known_usd.
    usd: float | None
    known_usd: float
    unknown_price_calls: int
    calls: int
    prompt_tokens: int
    completion_tokens: int

    @classmethod
    def none(cls) -> Tally:
        """No calls (a report made before shared calls were counted apart has none)."""
        return cls(usd=0.0, known_usd=0.0, unknown_price_calls=0, calls=0, prompt_tokens=0, completion_tokens=0)


class CostSplit(BaseModel):
    """One role, model or task: what its live calls spent and its replayed and shared calls saved."""

    live_usd: float | None
    replayed_usd: float | None
    live: Tally
    replayed: Tally
    shared: Tally = Field(default_factory=Tally.none)


class Latency(BaseModel):
    """Seconds of model latency, as recorded."""

    live: float
    replayed: float
    shared: float = 0.0


class UnattributedCost(BaseModel):
    """Cost that runs without call records report themselves (τ²'s agent_cost/user_cost), per role."""

    simulations: int
    by_role: dict[str, float | None]


class CostSummary(BaseModel):
    """All calls' money, in total and by role, model and task, plus what call-less runs report."""

    live_usd: float | None
    replayed_usd: float | None
    unknown_price_calls: int
    live: Tally
    replayed: Tally
    by_role: dict[str, CostSplit]
    by_model: dict[str, CostSplit]
    by_task: dict[str, CostSplit]
    latency_s: Latency
    unattributed: UnattributedCost
    shared: Tally = Field(default_factory=Tally.none)


class _Adder:
    """Adds calls up into a Tally."""

    def __init__(self) -> None:
        self.usd = 0.0
        self.unknown = 0
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.latency_s = 0.0

    def add(self, call: CallRecord) -> None:
        self.add_numbers(call.usage.prompt_tokens, call.usage.completion_tokens, call.latency_s, call.cost_usd)

    def add_numbers(self, prompt_tokens: int, completion_tokens: int, latency_s: float, usd: float | None) -> None:
        self.calls += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.latency_s += latency_s
        if usd is None:
            self.unknown += 1
        else:
            self.usd += usd

    def tally(self) -> Tally:
        return Tally(
            usd=None if self.unknown else round(self.usd, 10),
            known_usd=round(self.usd, 10),
            unknown_price_calls=self.unknown,
            calls=self.calls,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
        )


class _Sides:
    """Adds a group's calls up, live, replayed and shared apart."""

    def __init__(self) -> None:
        self.live = _Adder()
        self.replayed = _Adder()
        self.shared = _Adder()
        # By CallRecord.source; built once: a run adds every call to four groups.
        self.by_source = {"live": self.live, "replay": self.replayed, "shared": self.shared}

    def split(self) -> CostSplit:
        live, replayed = self.live.tally(), self.replayed.tally()
        return CostSplit(
            live_usd=live.usd, replayed_usd=replayed.usd, live=live, replayed=replayed, shared=self.shared.tally()
        )


def cost_summary(runs: list[SimulationRun]) -> CostSummary:
    adder = CostAdder()
    for run in runs:
        adder.add(run)
    return adder.summary()


class CostAdder:
    """`cost_summary`, one trial at a time: what a long run keeps instead of its trials. Trials added
    in the same order give the same summary, to the last digit (the same additions in the same order)."""

    def __init__(self) -> None:
        self._total = _Sides()
        self._by_role: dict[str, _Sides] = defaultdict(_Sides)
        self._by_model: dict[str, _Sides] = defaultdict(_Sides)
        self._by_task: dict[str, _Sides] = defaultdict(_Sides)
        # What runs without call records report they cost (agent, user, judge): all they add.
        self._callless: list[tuple[float | None, float | None, float | None]] = []

    def add(self, run: SimulationRun) -> None:
        if not run.calls:
            self._callless.append((run.agent_cost, run.user_cost, run.judge_cost))
            return
        task = self._by_task[run.task_id]  # only a task with calls gets a row
        for call in run.calls:
            # A call's numbers read once for its four groups: a run adds every trial as it finishes.
            usage, source = call.usage, call.source
            numbers = (usage.prompt_tokens, usage.completion_tokens, call.latency_s, call.cost_usd)
            for sides in (self._total, self._by_role[call.role], self._by_model[call.model], task):
                sides.by_source[source].add_numbers(*numbers)

    def summary(self) -> CostSummary:
        total = self._total
        live, replayed, shared = total.live.tally(), total.replayed.tally(), total.shared.tally()
        return CostSummary(
            live_usd=live.usd,
            replayed_usd=replayed.usd,
            unknown_price_calls=live.unknown_price_calls + replayed.unknown_price_calls + shared.unknown_price_calls,
            live=live,
            replayed=replayed,
            by_role=_splits(self._by_role),
            by_model=_splits(self._by_model),
            by_task=_splits(self._by_task),
            latency_s=Latency(
                live=round(total.live.latency_s, 6),
                replayed=round(total.replayed.latency_s, 6),
                shared=round(total.shared.latency_s, 6),
            ),
            unattributed=_unattributed(self._callless),
            shared=shared,
        )


class LiveTallyAdder:
    """`CostAdder(...).summary().live` alone, one trial at a time (the same additions in the same
    order): what a run tells of its own spend, without adding every call to every group."""

    def __init__(self) -> None:
        self._live = _Adder()

    def add(self, run: SimulationRun) -> None:
        for call in run.calls:
            if call.source == "live":
                self._live.add(call)

    def tally(self) -> Tally:
        return self._live.tally()


def _splits(table: dict[str, _Sides]) -> dict[str, CostSplit]:
    return {name: sides.split() for name, sides in sorted(table.items())}


def _unattributed(costs: list[tuple[float | None, float | None, float | None]]) -> UnattributedCost:
    def total(values: list[float | None]) -> float | None:
        # One missing value makes the total unknown: a partial sum would read as the whole bill.
        if not values or any(v is None for v in values):
            return None
        return round(sum(v for v in values if v is not None), 10)

    return UnattributedCost(
        simulations=len(costs),
        by_role={role: total([cost[index] for cost in costs]) for index, role in enumerate(("agent", "user", "judge"))},
    )
