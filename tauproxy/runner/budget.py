"""`--max-cost`: when to stop starting trials, judged from the trials that finished."""

from __future__ import annotations

from tauproxy.data_model.result import SimulationRun


class BudgetGuard:
    """Stops starting trials when the projected live spend would pass `--max-cost`.

    The projection is the live spend so far plus, for each trial already running and the next one,
    the mean live cost of a finished trial. Unknown prices count as a stop: we cannot promise a bound.
    Finished trials are added as they finish (`add`): the guard keeps their sum, not the trials.
    """

    def __init__(self, max_cost: float | None) -> None:
        self.max_cost = max_cost
        self._finished = 0
        self._spent = 0.0
        self._unknown_price = False

    def add(self, run: SimulationRun) -> None:
        self._finished += 1
        for call in run.calls:
            if call.source != "live":
                continue
            if call.cost_usd is None:
                self._unknown_price = True
            else:
                self._spent += call.cost_usd

    def blind(self) -> bool:
        """A budget is set and no trial has finished: there is no cost to project from yet."""
        return self.max_cost is not None and not self._finished

    def refusal(self, running: int) -> str | None:
        if self.max_cost is None:
            return None
        if self._unknown_price:
            return f"a live call had an unknown price; --max-cost {self.max_cost} cannot be kept"
        spent = self._spent
        mean = spent / self._finished if self._finished else 0.0
        projected = spent + mean * (running + 1)
        if projected > self.max_cost:
            return (
                f"stopped before the budget: ${spent:.4f} spent, next trial projected to reach "
                f"${projected:.4f} > --max-cost ${self.max_cost:.4f}; rerun with the same --save-to to resume"
            )
        return None
