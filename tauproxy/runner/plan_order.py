"""A run's trials handed on in plan order (task, then trial: results.json's order), whatever order
they finish in.

Only a trial that finished ahead of an earlier one waits here, until the earlier one comes (one
trial at a time: none ever waits), so what a run holds does not grow with its number of trials.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tauproxy.data_model.result import SimulationRun

# A trial in plan order, with its saved JSON line when it was saved by this invocation (None for a
# trial resumed from an earlier one).
Emit = Callable[[SimulationRun, str | None], None]


class PlanOrder:
    def __init__(self, run_ids: list[str], resumed: Mapping[str, SimulationRun], emit: Emit) -> None:
        self._run_ids = run_ids
        self._resumed = resumed
        self._emit = emit
        self._next = 0
        self._waiting: dict[str, tuple[SimulationRun, str | None]] = {}

    def add(self, simulation: SimulationRun, line: str | None) -> None:
        """A trial this invocation finished."""
        self._waiting[simulation.id] = (simulation, line)
        while self._next < len(self._run_ids):
            ready = self._take(self._run_ids[self._next])
            if ready is None:
                return  # the plan waits for this trial
            self._next += 1  # before the emit: a trial is handed on once, even if the emit raises
            self._emit(*ready)

    def close(self) -> None:
        """The run ended: hand on what is left, in plan order; a trial that never ran is skipped."""
        while self._next < len(self._run_ids):
            ready = self._take(self._run_ids[self._next])
            self._next += 1
            if ready is not None:
                self._emit(*ready)

    def _take(self, run_id: str) -> tuple[SimulationRun, str | None] | None:
        if run_id in self._waiting:
            return self._waiting.pop(run_id)
        if run_id in self._resumed:
            return self._resumed[run_id], None
        return None
