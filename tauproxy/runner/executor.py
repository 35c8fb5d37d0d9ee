"""What runs trials (an executor) and the one loop that decides what to run when.

An executor only starts trials and hands back their results. `run_pending` owns everything else:
the queue in spec order, the number of trials in flight, `--max-cost` (BudgetGuard, checked before
each submission, counting every submitted trial as running) and saving each finished trial through
`PreparedRun.keep`. So results, resume, progress and budget stops do not depend on the executor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from tauproxy.data_model.result import SimulationRun
from tauproxy.runner.budget import BudgetGuard
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


def run_pending(
    run: PreparedRun, executor: TrialExecutor[Handle], progress: ProgressCallback | None
) -> tuple[list[SimulationRun], str | None]:
    """Run the trials not finished yet; returns them in the order they finished, and why the run
    stopped early, if it did. Trials already running when the budget stops the run still finish
    and are saved. The caller closes the executor."""
    budget = BudgetGuard(run.config.max_cost)
    queue = run.pending
    already = len(run.specs) - len(queue)
    running: list[Handle] = []
    done: list[SimulationRun] = []
    stopped: str | None = None
    while queue or running:
        while queue and stopped is None and len(running) < executor.window(budget.blind(done)):
            stopped = budget.refusal(done, len(running))
            if stopped is None:
                running.append(executor.submit(queue.pop(0)))
        if not running:
            break
        for handle in executor.wait_any(tuple(running)):
            running.remove(handle)
            run.keep(done, executor.result(handle), already, progress)
    return done, stopped
