"""Run tasks x trials, save each finished trial at once, and write results.

Trials run on a thread pool in this process (`--executor thread`, the default, here) or as Ray tasks
(`--executor ray`, runner/ray_executor.py, imported only when asked for). Both save and report a
finished trial the same way (`PreparedRun.keep`), so results, resume and progress do not depend on
the executor.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from tauproxy import __version__
from tauproxy.data_model.result import Results, RunInfo, SimulationRun
from tauproxy.data_model.task import Task
from tauproxy.domain.pack import DomainPack, load_pack
from tauproxy.engine.agent import load_agent_factory
from tauproxy.errors import ConfigError
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.transport import Transport
from tauproxy.runner.config import RunConfig
from tauproxy.results.run_dir import ResultsDir, utc_now
from tauproxy.runner.stack import build_transport, transport_warnings
from tauproxy.runner.trial import TrialSpec, run_trial

ProgressCallback = Callable[[SimulationRun, int, int], None]


def trial_seeds(run_seed: int, num_trials: int) -> list[int]:
    """One seed per trial from the run seed, with a private RNG: no global state, no races."""
    rng = random.Random(run_seed)
    return [rng.randint(0, 2**31 - 1) for _ in range(num_trials)]


def select_tasks(pack: DomainPack, config: RunConfig) -> list[Task]:
    tasks = pack.tasks
    if config.task_ids:
        known = {t.id for t in tasks}
        missing = [t for t in config.task_ids if t not in known]
        if missing:
            raise ConfigError(f"domain {pack.name!r} has no task(s): {', '.join(missing)}")
        wanted = set(config.task_ids)
        tasks = [t for t in tasks if t.id in wanted]
    if config.num_tasks is not None:
        tasks = tasks[: config.num_tasks]
    if not tasks:
        raise ConfigError("no tasks selected")
    return tasks


def run_info(pack: DomainPack, config: RunConfig, seeds: list[int], pricing: Pricing) -> RunInfo:
    return RunInfo(
        tauproxy_version=__version__,
        domain=pack.name,
        domain_sha256=pack.content_sha256,
        num_trials=config.num_trials,
        seed=config.seed,
        trial_seeds=seeds,
        max_steps=config.max_steps,
        max_errors=config.max_errors,
        agent_info=config.agent.info(config.agent_prompt.sha256(pack.policy), config.agent_impl),
        user_info=config.user.info(),
        judge_info=config.judge.info(),
        solo=config.solo,
        cassette=str(config.cassette) if config.cassette else None,
        record_mode=config.record_mode.value if config.cassette else None,
        price_source=pricing.source,
    )


@dataclass
class RunOutcome:
    results: Results
    new_runs: list[SimulationRun] = field(default_factory=list)
    stopped_reason: str | None = None
    warnings: list[str] = field(default_factory=list)


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

    def keep(
        self, done: list[SimulationRun], simulation: SimulationRun, already: int, progress: ProgressCallback | None
    ) -> None:
        """A trial finished: save it at once (a crash loses nothing finished) and report progress."""
        done.append(simulation)
        if self.results_dir:
            self.results_dir.append(simulation)
        if progress:
            progress(simulation, already + len(done), len(self.specs))

    def execute(self, progress: ProgressCallback | None = None) -> RunOutcome:
        new_runs, stopped, warnings = self._run_trials(progress)
        by_id = {**self.finished, **{run.id: run for run in new_runs}}
        ordered = [by_id[spec.run_id] for spec in self.specs if spec.run_id in by_id]
        if self.results_dir:
            results = self.results_dir.write_results(self.info, self.tasks, ordered)
        else:
            results = Results(timestamp=utc_now(), info=self.info, tasks=self.tasks, simulations=ordered)
        return RunOutcome(results=results, new_runs=new_runs, stopped_reason=stopped, warnings=warnings)

    def _run_trials(self, progress: ProgressCallback | None) -> tuple[list[SimulationRun], str | None, list[str]]:
        # The transport (and the cassette it holds in memory) is released when this returns, so
        # writing and summarising the results reuse its memory instead of adding to the peak.
        transport = build_transport(self.config, self.pack, self.pricing)
        try:
            new_runs, stopped = _run_pending(self, transport, progress)
        finally:
            transport.close()
        return new_runs, stopped, transport_warnings(transport)


def prepare(config: RunConfig) -> PreparedRun:
    if config.agent_impl:
        load_agent_factory(config.agent_impl)  # fail before the first trial, not inside it
    if config.executor == "ray":
        from tauproxy.runner.ray_executor import import_ray

        import_ray()  # the install hint now, not after the progress bar has started
    pack = load_pack(config.domain, config.tasks_file)
    tasks = select_tasks(pack, config)
    seeds = trial_seeds(config.seed, config.num_trials)
    pricing = Pricing.from_file(config.prices)
    info = run_info(pack, config, seeds, pricing)
    results_dir = ResultsDir(config.save_to) if config.save_to else None
    finished = results_dir.prepare(info) if results_dir else {}
    specs = [TrialSpec(task, trial, seeds[trial]) for task in tasks for trial in range(config.num_trials)]
    return PreparedRun(config, pack, tasks, specs, pricing, info, results_dir, finished)


def execute(config: RunConfig, progress: ProgressCallback | None = None) -> RunOutcome:
    return prepare(config).execute(progress)


def _run_pending(
    run: PreparedRun, transport: Transport, progress: ProgressCallback | None
) -> tuple[list[SimulationRun], str | None]:
    """Run the trials not finished yet; returns them and why the run stopped early, if it did."""
    if run.config.executor == "ray":
        from tauproxy.runner.ray_executor import run_on_ray

        return run_on_ray(run, transport, progress)
    return _run_on_threads(run, transport, progress)


def _run_on_threads(
    run: PreparedRun, transport: Transport, progress: ProgressCallback | None
) -> tuple[list[SimulationRun], str | None]:
    done: list[SimulationRun] = []
    config = run.config
    budget = BudgetGuard(config.max_cost)
    queue = run.pending
    already = len(run.specs) - len(queue)
    running: dict[Future[SimulationRun], TrialSpec] = {}
    stopped: str | None = None
    with ThreadPoolExecutor(max_workers=config.max_concurrency) as pool:
        while queue or running:
            while queue and len(running) < config.max_concurrency and stopped is None:
                stopped = budget.refusal(done, len(running))
                if stopped is None:
                    spec = queue.pop(0)
                    future = pool.submit(run_trial, spec, run.pack, config, transport, run.pricing)
                    running[future] = spec
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                running.pop(future)
                run.keep(done, future.result(), already, progress)
    return done, stopped


class BudgetGuard:
    """Stops starting trials when the projected live spend would pass `--max-cost`.

    The projection is the live spend so far plus, for each trial already running and the next one,
    the mean live cost of a finished trial. Unknown prices count as a stop: we cannot promise a bound.
    """

    def __init__(self, max_cost: float | None) -> None:
        self.max_cost = max_cost

    def refusal(self, done: list[SimulationRun], running: int) -> str | None:
        if self.max_cost is None:
            return None
        spent = 0.0
        for run in done:
            for call in run.calls:
                if call.source != "live":
                    continue
                if call.cost_usd is None:
                    return f"a live call had an unknown price; --max-cost {self.max_cost} cannot be kept"
                spent += call.cost_usd
        mean = spent / len(done) if done else 0.0
        projected = spent + mean * (running + 1)
        if projected > self.max_cost:
            return (
                f"stopped before the budget: ${spent:.4f} spent, next trial projected to reach "
                f"${projected:.4f} > --max-cost ${self.max_cost:.4f}; rerun with the same --save-to to resume"
            )
        return None
