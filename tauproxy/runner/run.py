"""Run tasks x trials, save each finished trial at once (fsynced in batches), and write results.

`prepare` checks and loads everything a run needs; `execute_prepared` runs its pending trials on the
executor the config names (runner/executors.py) through the loop every executor shares
(runner/executor.py), so results, resume and progress do not depend on the executor.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field

from tauproxy.data_model.result import Results, RunInfo, SimulationRun
from tauproxy.data_model.task import Task
from tauproxy.domain.pack import DomainPack
from tauproxy.engine.agent import load_agent_factory
from tauproxy.errors import ConfigError, ResultsWriteError
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.preflight import check_model
from tauproxy.proxy.pricing import Pricing
from tauproxy.results.run_dir import SIMULATIONS_FILE, ResultsDir, ResultsWriter, utc_now
from tauproxy.runner.collector import paused_collector
from tauproxy.runner.config import RunConfig, check_trial_plan
from tauproxy.runner.executor import RunStop, run_pending
from tauproxy.runner.executors import check_executor, open_executor
from tauproxy.runner.plan_order import PlanOrder
from tauproxy.runner.prepared import PreparedRun, ProgressCallback
from tauproxy.runner.stack import build_transport, transport_warnings
from tauproxy.runner.trial import TrialSpec
from tauproxy.sources.protocol import DomainSource
from tauproxy.sources.registry import check_source_options, source_for_domain
from tauproxy.store.cassette import check_writable
from tauproxy.store.format import CALLS_FILE
from tauproxy.version import __version__


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
    """What the run is, as results.json states it: ours, with what the domain's source adds."""
    return source_for_domain(config.domain).run_info(_run_info(pack, config, seeds, pricing), config)


def _run_info(pack: DomainPack, config: RunConfig, seeds: list[int], pricing: Pricing) -> RunInfo:
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
    stop: RunStop | None = None  # why the run ended before every planned trial ran
    warnings: list[str] = field(default_factory=list)

    @property
    def stopped_reason(self) -> str | None:
        return self.stop.reason if self.stop is not None else None


@dataclass
class StreamedOutcome:
    """A run whose trials were handed on one at a time (`execute_streamed`) instead of held: its
    results without their simulations (the settings, tasks and timestamp a report heads them with)."""

    header: Results
    new_trials: int
    stop: RunStop | None = None
    warnings: list[str] = field(default_factory=list)


def goes_live(config: RunConfig) -> bool:
    """Whether any call of this run may reach a provider (decides what the preflight checks)."""
    if config.cassette is None or config.record_mode == RecordMode.OFF:
        return True
    if config.record_mode == RecordMode.ONCE:
        calls = config.cassette / CALLS_FILE
        return not calls.exists() or calls.stat().st_size == 0
    return config.record_mode.goes_live


def check_models(config: RunConfig, tasks: list[Task]) -> None:
    """Fail fast (proxy/preflight.py): each model this run will call, once, before the first trial."""
    live = goes_live(config)
    for role, model in source_for_domain(config.domain).models(config, tasks):
        check_model(role, model.model, model.connection(), live)


def prepare(
    config: RunConfig, preflight: bool = True, before_preflight: Callable[[], None] | None = None
) -> PreparedRun:
    """Check and load everything a run needs. `preflight=False` skips the model checks, for callers
    that plan a run without making a call (estimate). `before_preflight` is called once the cheap
    checks (flags, domain, tasks) have passed and just before the models are checked, which may take
    seconds: the CLI says so there, and not before a one-line refusal of the domain.

    The garbage collector is paused meanwhile (runner/collector.py): what a run loads lives as long
    as the run, and scanning it as it arrives was a sixteenth of a strict replay's CPU."""
    with paused_collector():
        return _prepare(config, preflight, before_preflight)


def _prepare(config: RunConfig, preflight: bool, before_preflight: Callable[[], None] | None) -> PreparedRun:
    check_replay_has_cassette(config)
    if config.agent_impl:
        load_agent_factory(config.agent_impl)  # fail before the first trial, not inside it
    check_executor(config)
    source = source_for_domain(config.domain)
    pack = _load_domain(source, config)
    tasks = select_tasks(pack, config)
    check_trial_plan(config, len(tasks))  # before anything per trial is built
    if preflight:
        if before_preflight is not None:
            before_preflight()
        check_models(config, tasks)
    if config.cassette is not None and config.record_mode != RecordMode.OFF and goes_live(config):
        check_writable(config.cassette)  # before the first trial, not at its first paid answer
    seeds = source.trial_seeds(config.seed, config.num_trials)
    pricing = Pricing.from_file(config.prices)
    info = run_info(pack, config, seeds, pricing)
    results_dir = ResultsDir(config.save_to) if config.save_to else None
    finished = results_dir.prepare(info, tasks) if results_dir else {}
    specs = [TrialSpec(task, trial, seeds[trial]) for task in tasks for trial in range(config.num_trials)]
    return PreparedRun(config, pack, tasks, specs, pricing, info, results_dir, finished)


def check_replay_has_cassette(config: RunConfig) -> None:
    """Strict replay is offline, always: with no cassette to read, it refuses before anything runs
    instead of calling every model live (and paying, with a provider model). So does `once`, which
    replays strictly once its cassette holds calls: without one it would go live on every run. And so
    does `record`, whose every call is paid to be recorded: without a cassette nothing would be."""
    if config.record_mode is RecordMode.REWRITE:
        # A run resumes and a Ray worker records apart: neither makes one session whose calls alone
        # should stay. Tests (the pytest plugin), intercept and serve delimit one.
        raise ConfigError(
            "--record-mode rewrite is for the pytest plugin, tauproxy.intercept and serve; a run re-records "
            "with --record-mode record (then `tauproxy cassette prune DIR --runs RUN` keeps only its calls)"
        )
    if config.cassette is not None:
        return
    if config.record_mode is RecordMode.REPLAY:
        raise ConfigError(
            "--record-mode replay reads every call from a cassette and never goes live: add --cassette DIR "
            "(or --record-mode off to call the models without one)"
        )
    if config.record_mode is RecordMode.ONCE:
        raise ConfigError(
            "--record-mode once records a cassette on the first run and replays it strictly after: add "
            "--cassette DIR (or --record-mode off to call the models without one)"
        )
    if config.record_mode is RecordMode.RECORD:
        raise ConfigError(
            "--record-mode record records every call into a cassette: add --cassette DIR "
            "(or --record-mode off to call the models without recording)"
        )


def _load_domain(source: DomainSource, config: RunConfig) -> DomainPack:
    """The domain as its source loads it, after the source has refused what it cannot run."""
    check_source_options(config.domain, config.source_options)
    source.check(config)
    return source.load(config.domain, config)


def execute(config: RunConfig, progress: ProgressCallback | None = None) -> RunOutcome:
    return execute_prepared(prepare(config), progress)


def execute_prepared(run: PreparedRun, progress: ProgressCallback | None = None) -> RunOutcome:
    """Run the pending trials and write the results, also when the run stops early or is interrupted
    (results.json then holds what finished, so `report` and `view` work and a rerun resumes)."""
    ordered: list[SimulationRun] = []
    streamed, new_runs = _execute(run, progress, lambda simulation: ordered.append(simulation), collect=True)
    results = streamed.header.model_copy(update={"simulations": ordered})
    return RunOutcome(results=results, new_runs=new_runs, stop=streamed.stop, warnings=streamed.warnings)


def execute_streamed(
    run: PreparedRun, on_result: Callable[[SimulationRun], None], progress: ProgressCallback | None = None
) -> StreamedOutcome:
    """`execute_prepared` without holding the trials: each simulation results.json lists goes to
    `on_result`, in its order (task, then trial), as soon as the ones before it have finished, and
    results.json is written as they come. What the run holds stays flat in its number of trials."""
    return _execute(run, progress, on_result, collect=False)[0]


def _execute(
    run: PreparedRun, progress: ProgressCallback | None, on_result: Callable[[SimulationRun], None], collect: bool
) -> tuple[StreamedOutcome, list[SimulationRun]]:
    writer = _results_writer(run)

    def emit(simulation: SimulationRun, line: str | None) -> None:
        on_result(simulation)
        if writer is not None:
            try:
                writer.add(simulation, line)
            except OSError as exc:  # stops the run like a trial that cannot be saved
                raise ResultsWriteError(f"cannot write {writer.path}: {exc.strerror or exc}; stopping") from None

    order = PlanOrder([spec.run_id for spec in run.specs], run.finished, emit)
    try:
        try:
            new_runs, stop, warnings, count = _run_trials(run, progress, order, collect)
        finally:
            _sync_trials(run)
        order.close()
    except BaseException:
        if writer is not None:
            writer.discard()
        raise
    timestamp = _finish_results(run, writer) if writer is not None else utc_now()
    header = Results(timestamp=timestamp, info=run.info, tasks=run.tasks, simulations=[])
    return StreamedOutcome(header=header, new_trials=count, stop=stop, warnings=warnings), new_runs


def _results_writer(run: PreparedRun) -> ResultsWriter | None:
    if run.results_dir is None:
        return None
    try:
        return run.results_dir.results_writer()
    except OSError as exc:
        raise ResultsWriteError(f"cannot write in {run.results_dir.path}: {exc.strerror or exc}") from None


def _finish_results(run: PreparedRun, writer: ResultsWriter) -> str:
    try:
        return writer.finish(run.info, run.tasks)
    except OSError as exc:
        raise ResultsWriteError(
            f"cannot write {writer.path}: {exc.strerror or exc}; the finished trials "
            f"are in {writer.path.parent / SIMULATIONS_FILE}: rerun the same command to write it"
        ) from None


def _sync_trials(run: PreparedRun) -> None:
    """The saved trials made durable (they are fsynced in batches while the run goes on)."""
    if run.results_dir is None:
        return
    try:
        run.results_dir.sync()
    except OSError as exc:
        raise ResultsWriteError(
            f"cannot save the trials to {run.results_dir.path / SIMULATIONS_FILE}: {exc.strerror or exc}; "
            "fix it and rerun the same command to resume"
        ) from None


def _run_trials(
    run: PreparedRun, progress: ProgressCallback | None, order: PlanOrder, collect: bool
) -> tuple[list[SimulationRun], RunStop | None, list[str], int]:
    # The transport (and the cassette it holds in memory) is released when this returns, so
    # writing and summarising the results reuse its memory instead of adding to the peak.
    transport = build_transport(run.config, run.pack, run.pricing)
    new_trials = 0

    def counted(simulation: SimulationRun, done: int, total: int) -> None:
        nonlocal new_trials
        new_trials += 1
        if progress:
            progress(simulation, done, total)

    try:
        with closing(open_executor(run, transport)) as executor:
            new_runs, stopped = run_pending(run, executor, counted, order, collect)
    finally:
        transport.close()
    return new_runs, stopped, transport_warnings(transport), new_trials
