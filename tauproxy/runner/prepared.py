"""A run checked and loaded before its first model call, and how each finished trial is kept.

Executors and the submit loop work on a `PreparedRun`; runner/run.py builds one (`prepare`) and
executes it. Living here, below both, it lets them share it without importing each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tauproxy.data_model.result import RunInfo, SimulationRun
from tauproxy.data_model.task import Task
from tauproxy.domain.pack import DomainPack
from tauproxy.errors import ResultsWriteError
from tauproxy.proxy.pricing import Pricing
from tauproxy.results.run_dir import ResultsDir
from tauproxy.runner.config import RunConfig
from tauproxy.runner.interrupts import interrupt_deferred
from tauproxy.runner.plan_order import PlanOrder
from tauproxy.runner.trial import TrialSpec

# Called after each finished trial with it, the number of trials finished so far (resumed ones
# included) and the number planned.
ProgressCallback = Callable[[SimulationRun, int, int], None]


@dataclass
class PreparedRun:
    """Everything checked and loaded before the first model call, so bad input fails fast."""

    config: RunConfig
    pack: DomainPack
    tasks: list[Task]
    specs: list[TrialSpec]
    pricing: Pricing
    info: RunInfo
    results_dir: ResultsDir | None
    finished: dict[str, SimulationRun]

    @property
    def pending(self) -> list[TrialSpec]:
        return [spec for spec in self.specs if spec.run_id not in self.finished]

    def with_trials(self, plan: Mapping[str, int], finished: Mapping[str, SimulationRun] | None = None) -> PreparedRun:
        """The same run planning `plan[task id]` trials of each task (trials 0..n-1, each with the seed
        the config gives that trial; a task not in `plan` gets none), for a run that grows some tasks
        only (workflows/adaptive.py). The config must plan at least the largest count, so that every
        trial's spec and seed exist. `finished`: trials known done beyond the run directory's (a run
        without --save-to keeps them in memory between rounds)."""
        specs = [spec for spec in self.specs if spec.trial < plan.get(spec.task.id, 0)]
        missing = {task: n for task, n in plan.items() if n > sum(1 for spec in specs if spec.task.id == task)}
        if missing:
            raise ValueError(f"the config plans fewer trials than asked for: {missing}")
        done = {**(finished or {}), **self.finished}
        return dataclasses.replace(self, specs=specs, finished=done)

    def keep(
        self, simulation: SimulationRun, count: int, progress: ProgressCallback | None, order: PlanOrder | None
    ) -> None:
        """A trial finished (`count` of the plan so far, resumed ones included): hand it on to the
        run's results in plan order, save it at once (a crash loses nothing finished) and report it.

        It is handed on before it is appended to the run directory: a Ctrl-C landing between the
        two would otherwise leave a trial on disk that results.json and the "saved" count leave out;
        a trial that cannot be saved is still reported (it finished), the run stops, and a rerun
        runs it again. One JSON dump serves both. A Ctrl-C that arrives in between is held until
        both are done (interrupts.py): a trial counted as saved is one a resume finds."""
        line = simulation.model_dump_json()
        with interrupt_deferred():
            if order is not None:
                order.add(simulation, line)
            if self.results_dir:
                try:
                    self.results_dir.append_line(line)
                except OSError as exc:
                    raise ResultsWriteError(
                        f"cannot save trial {simulation.id} to {self.results_dir.path}: {exc.strerror or exc}; "
                        "stopping: fix it and rerun the same command to resume"
                    ) from None
        if progress:
            progress(simulation, count, len(self.specs))
