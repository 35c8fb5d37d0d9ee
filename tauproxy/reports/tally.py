"""What a report counts of a run's trials, added one trial at a time.

`summarize` feeds a results file's simulations through a `RunTally`; `tauproxy run` feeds its trials
as they come (in plan order, the order results.json lists them), so a run of any length holds these
counts instead of its trials, and both get the same report: the same additions in the same order.
What the tally keeps per trial is what the report shows per trial (a grid cell, a reward).
"""

from __future__ import annotations

from collections import Counter, OrderedDict

from tauproxy.data_model.result import SimulationRun
from tauproxy.data_model.task import RewardType
from tauproxy.reports.costs import CostAdder, CostSummary
from tauproxy.reports.grid import GridCell, GridRow, grid_cell
from tauproxy.reports.metrics import (
    BASIS_ORDER,
    EXCLUDED_TERMINATIONS,
    BasisMean,
    TaskCount,
    TerminationCounts,
    is_success,
)


class RunTally:
    """pass^k counts, rewards, terminations, the grid, call counts and money of the trials added."""

    def __init__(self, task_order: list[str]) -> None:
        self._listed = frozenset(task_order)
        # task id -> [successes, counted trials]; listed tasks first, others in the order first seen.
        self._counts: OrderedDict[str, list[int]] = OrderedDict((task_id, [0, 0]) for task_id in task_order)
        self._rewards: list[float] = []  # of the counted trials, summed once at the end as average_reward does
        self._bases: dict[RewardType, list[float]] = {basis: [] for basis in BASIS_ORDER}
        self._counted: Counter[str] = Counter()
        self._excluded: Counter[str] = Counter()
        # task id -> (trial, arrival, cell): the grid sorts each task's cells by trial, ties in arrival order.
        self._cells: OrderedDict[str, list[tuple[int, int, GridCell]]] = OrderedDict((t, []) for t in task_order)
        self._calls: Counter[str] = Counter()
        self._costs = CostAdder()
        self.trials = 0
        self._with_calls = 0

    def add(self, run: SimulationRun) -> None:
        excluded = run.termination_reason in EXCLUDED_TERMINATIONS
        (self._excluded if excluded else self._counted)[run.termination_reason.value] += 1
        if not excluded:
            counts = self._counts.setdefault(run.task_id, [0, 0])
            counts[0] += int(is_success(run))
            counts[1] += 1
            self._rewards.append(run.reward_info.reward if run.reward_info else 0.0)
            breakdown = run.reward_info.reward_breakdown if run.reward_info else None
            for basis, value in (breakdown or {}).items():
                self._bases.setdefault(RewardType(basis), []).append(value)
        cell = grid_cell(run)
        self._cells.setdefault(run.task_id, []).append((run.trial, self.trials, cell))
        self._calls.update(call.source for call in run.calls)
        self._costs.add(run)
        self.trials += 1
        self._with_calls += bool(run.calls)

    def task_counts(self) -> list[TaskCount]:
        return [
            TaskCount(task_id=task_id, successes=successes, trials=trials)
            for task_id, (successes, trials) in self._counts.items()
            if trials
        ]

    def average_reward(self) -> float:
        return sum(self._rewards) / len(self._rewards) if self._rewards else float("nan")

    def reward_breakdown(self) -> dict[RewardType, BasisMean]:
        return {
            basis: BasisMean(mean=sum(values) / len(values), runs=len(values))
            for basis, values in self._bases.items()
            if values
        }

    def termination_counts(self) -> TerminationCounts:
        return TerminationCounts(
            counted=dict(sorted(self._counted.items())), excluded=dict(sorted(self._excluded.items()))
        )

    def grid(self) -> list[GridRow]:
        """`trial_grid`: the listed tasks in their order, then the others in the order their lowest trial came."""
        others = sorted((t for t in self._cells if t not in self._listed), key=lambda t: min(self._cells[t])[:2])
        ordered = [t for t in self._cells if t in self._listed] + others
        return [
            GridRow(task_id=t, trials=[cell for _, _, cell in sorted(self._cells[t])])
            for t in ordered
            if self._cells[t]
        ]

    def calls(self) -> Counter[str]:
        """Calls by where their answer came from: "live", "replay", "shared"."""
        return self._calls

    def costs(self) -> CostSummary:
        return self._costs.summary()

    @property
    def has_call_records(self) -> bool:
        """Whether any trial kept call records (a τ²-bench file keeps none)."""
        return self._with_calls > 0
