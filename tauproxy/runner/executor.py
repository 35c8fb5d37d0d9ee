"""What runs trials (an executor) and the one loop that decides what to run when.

An executor only starts trials and hands back their results. `run_pending` owns everything else:
the queue in spec order, the number of trials in flight, `--max-cost` (BudgetGuard, checked before
each submission, counting every submitted trial as running) and saving each finished trial through
`PreparedRun.keep`. So results, resume, progress and budget stops do not depend on the executor.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, TypeVar

from tauproxy.data_model.result import SimulationRun, TerminationReason
from tauproxy.errors import CassetteWriteError, ResultsWriteError
from tauproxy.runner.budget import BudgetGuard
from tauproxy.runner.plan_order import PlanOrder
from tauproxy.runner.prepared import PreparedRun, ProgressCallback
from tauproxy.runner.trial import TrialSpec

Handle = TypeVar("Handle")


class TrialExecutor(Protocol[Handle]):
    """Runs trials somewhere; a `Handle` names one submitted trial until its result is taken."""

    def window(self, budget_blind: bool) -> int:
        """How many trials may be in flight now. `budget_blind`: a budget is set and no trial has
        finished yet, so BudgetGuard has no cost to project from."""
        ...

    def submit(self, spec: TrialSpec) -> Handle: ...

    def wait_any(self, handles: Sequence[Handle]) -> Sequence[Handle]:
        """Block until at least one of `handles` has finished; return those that have."""
        ...

    def result(self, handle: Handle) -> SimulationRun:
        """A finished trial, its calls recorded; raises what the trial raised."""
        ...

    def close(self) -> None:
        """Let trials still in flight (left by an error or Ctrl-C) finish, so the calls they paid for
        are recorded, then release what the executor holds. Their results are not saved."""
        ...


class StopKind(StrEnum):
    """Why a run ended before every planned trial ran. Each maps to its own exit code (cli/run.py)."""

    BUDGET = "budget"  # --max-cost would be passed
    INFRASTRUCTURE = "infrastructure"  # the cassette or the results could not be written, or the
    # same infrastructure error ended --max-infra-errors trials in a row
    INTERRUPTED = "interrupted"  # Ctrl-C


@dataclass(frozen=True)
class RunStop:
    kind: StopKind
    reason: str


class _InfraStreak:
    """Counts trials in a row that ended in an infrastructure error with the same cause."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.cause: str | None = None
        self.count = 0

    def add(self, simulation: SimulationRun) -> RunStop | None:
        if simulation.termination_reason != TerminationReason.INFRASTRUCTURE_ERROR:
            self.cause, self.count = None, 0
            return None
        cause = _cause_of(simulation.error)
        self.count = self.count + 1 if cause == self.cause else 1
        self.cause = cause
        if self.count < self.limit:
            return None
        return RunStop(
            StopKind.INFRASTRUCTURE,
            f"stopped after {self.count} trials in a row ended in the same infrastructure error: {simulation.error}",
        )


def _cause_of(error: str | None) -> str:
    """An error's cause without what differs per call (ids, numbers), so repeats compare equal."""
    first = (error or "").strip().splitlines()[0] if (error or "").strip() else ""
    return re.sub(r"\d+", "N", first)[:200]


def run_pending(
    run: PreparedRun,
    executor: TrialExecutor[Handle],
    progress: ProgressCallback | None,
    order: PlanOrder | None = None,
    collect: bool = True,
) -> tuple[list[SimulationRun], RunStop | None]:
    """Run the trials not finished yet; returns them in the order they finished (none unless
    `collect`: a caller streaming them through `order` holds no list), and why the run stopped
    early, if it did.

    Trials already running when the run stops (budget, an infrastructure stop) still finish and are
    saved. A cassette or results write failure stops the run: the trials in flight finish (their calls
    are recorded if the cassette takes them), nothing more starts, and the error becomes the stop
    reason. Ctrl-C stops it at once: what finished is saved, the caller closes the executor.
    """
    budget = BudgetGuard(run.config.max_cost)
    streak = _InfraStreak(run.config.max_infra_errors)
    queue = run.pending
    finished = len(run.specs) - len(queue)
    running: list[Handle] = []
    done: list[SimulationRun] = []
    stopped: RunStop | None = None
    try:
        while queue or running:
            while queue and stopped is None and len(running) < executor.window(budget.blind()):
                refusal = budget.refusal(len(running))
                if refusal is not None:
                    stopped = RunStop(StopKind.BUDGET, refusal)
                else:
                    running.append(executor.submit(queue.pop(0)))
            if not running:
                break
            for handle in executor.wait_any(tuple(running)):
                running.remove(handle)
                try:
                    simulation = executor.result(handle)
                    finished += 1
                    budget.add(simulation)
                    if collect:
                        done.append(simulation)
                    run.keep(simulation, finished, progress, order)
                except (CassetteWriteError, ResultsWriteError) as exc:
                    if stopped is None or stopped.kind is not StopKind.INFRASTRUCTURE:
                        stopped = RunStop(StopKind.INFRASTRUCTURE, str(exc))  # the first such error says why
                    queue = []
                    continue
                stopped = stopped or streak.add(simulation)
                if stopped is not None and stopped.kind is StopKind.INFRASTRUCTURE:
                    queue = []
    except KeyboardInterrupt:
        stopped = RunStop(StopKind.INTERRUPTED, "interrupted")
    return done, stopped
