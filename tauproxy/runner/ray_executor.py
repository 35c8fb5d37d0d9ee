"""`--executor ray`: run each (task, trial) as a Ray task, with the same cassette and identical results.

Where it runs. Without `--ray-address` the run starts a local Ray instance on this machine's CPUs
and stops it at the end; with one it joins that cluster as a driver (`ray.init(address=...)`) and
leaves it up. If the calling process already did `ray.init`, that session is used as it is. Every
node needs tauproxy (the same version), the domain pack (by name: installed or on
TAUPROXY_DOMAINS_PATH; by path: the same path), the `--tasks-file` and `--prices` files if given, and
provider keys in its environment; workers check the version, pack hash and price source before their
first trial. A worker on another node may not see the driver's environment variables.

Cassette access. Workers never read or write the cassette directory. The driver reads
`calls.jsonl` once and ships its bytes through the object store (`ray.put`, once per run); each
worker builds a read-only in-memory `Cassette.snapshot` from them. No shared mount is needed, and
a local instance behaves the same.

Recording. The driver is the cassette's single writer. A worker's cassette layer runs in the run's
mode (auto/record/replay, `once` resolved by the driver) with a collecting recorder
(proxy/collector.py): misses go live, and their records come back with the trial's SimulationRun. The
driver appends each with `Cassette.record` (file lock, one write, fsync), then saves the trial.
A trial whose worker dies is retried (up to MAX_RETRIES times); the dead attempt's calls were never
recorded, so the retry sends them live again, and only calls no finished trial recorded go live.
What this path does not have: the thread path's guarantee that a call is on disk before its
response is used. If the driver itself dies, the live calls of the trials running then are lost
and go live again on resume.

Budget and concurrency. The driver decides when to submit, in the loop every executor shares
(runner/executor.py: `--max-cost` is checked before each submission exactly as on the thread path).
This executor's window is one trial per cluster CPU, and under a budget the first trial runs alone,
so the guard has a cost to project from before the cluster fans out. `--max-concurrency` caps live
calls across the cluster (runner/ray_slots.py); how many trials run at once is the cluster's CPU count.

Ray is imported only in this module's functions and the two beside it (ray_worker, ray_slots).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from tauproxy.data_model.result import SimulationRun, TerminationReason
from tauproxy.errors import ConfigError
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.recorder import CassetteTransport
from tauproxy.proxy.transport import Transport
from tauproxy.runner.prepared import PreparedRun
from tauproxy.runner.ray_slots import start_live_slots
from tauproxy.runner.ray_worker import TEST_KILL_ENV, TrialOutcome, WorkerSetup, kill_marker, run_trial_task
from tauproxy.runner.trial import TrialSpec
from tauproxy.store.cassette import Cassette
from tauproxy.version import __version__

MAX_RETRIES = 2  # a trial whose worker died runs again, at most this many more times
INSTALL_HINT = "pip install 'tauproxy[ray]'"


def import_ray() -> ModuleType:
    """Ray, or a one-line ConfigError saying how to install it."""
    # Ray reports usage to its vendor by default; a tool that promises offline replay must not.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(f"--executor ray needs Ray, which cannot be imported ({exc}): {INSTALL_HINT}") from None
    # Typed here so the check does not depend on the extra: without Ray installed, mypy sees `ray` as Any.
    module: ModuleType = ray
    return module


class RayExecutor:
    """A `TrialExecutor` (runner/executor.py) whose handles are Ray ObjectRefs of `run_trial_task`.

    `transport` is the driver's cassette layer: only its cassette (the one writer's handle) and its
    resolved mode are used; the driver makes no model call itself."""

    @classmethod
    def start(cls, run: PreparedRun, transport: Transport) -> RayExecutor:
        """Join or start Ray and set the run up on it; `close` undoes both."""
        ray = import_ray()
        owned = _connect(ray, run.config.ray_address)
        try:
            return cls(ray, run, transport, owned)
        except BaseException:
            if owned:
                ray.shutdown()
            raise

    def __init__(self, ray: ModuleType, run: PreparedRun, transport: Transport, owned: bool) -> None:
        self._ray = ray
        self._owned = owned  # this run did `ray.init`, so it shuts Ray down
        self._task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(run_trial_task)
        # One trial in flight per CPU, no queue: a task blocked in ray.get (waiting for a live-call slot)
        # lends its CPU to a queued task, on a new worker process, so a queue would run more trials than
        # CPUs and start a worker (with its litellm import) per extra trial.
        self._cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._cassette, mode = _cassette_of(transport)
        # Set up last: it starts the run's slots actor, which only `close` removes.
        self._setup = _setup(ray, run, self._cassette, mode)
        self._in_flight: dict[Any, TrialSpec] = {}

    def window(self, budget_blind: bool) -> int:
        # Under a budget the first trial runs alone: BudgetGuard projects from finished trials, and
        # the cluster would otherwise start one trial per CPU with nothing to project from (the
        # thread path is bounded by --max-concurrency; here the cluster sets the window).
        return 1 if budget_blind else self._cpus

    def submit(self, spec: TrialSpec) -> Any:
        ref = self._task.remote(self._setup, spec)
        self._in_flight[ref] = spec
        return ref

    def wait_any(self, handles: Sequence[Any]) -> list[Any]:
        ready, _ = self._ray.wait(list(handles), num_returns=1)
        return list(ready)

    def result(self, handle: Any) -> SimulationRun:
        spec = self._in_flight.pop(handle)
        return _keep_calls(_outcome(self._ray, handle, spec), self._cassette)

    def close(self) -> None:
        try:
            _salvage(self._ray, self._in_flight, self._cassette)
        finally:
            try:
                _release(self._ray, self._setup)
            finally:
                if self._owned:
                    self._ray.shutdown()


def _connect(ray: ModuleType, address: str | None) -> bool:
    """Join or start Ray; True when this call did `ray.init` (and so must shut it down)."""
    if ray.is_initialized():
        return False
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
    if address is None:
        # "local" starts a fresh instance even if another one runs on this machine.
        ray.init(address="local", num_cpus=os.cpu_count() or 1, include_dashboard=False, **quiet)
        return True
    try:
        ray.init(address=address, **quiet)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"cannot join the Ray cluster at {address!r}: {_root_cause(exc)}{_AUTH_HINT}") from None
    return True


# Ray 2.5x clusters require a token by default; an explicit address does not pick it up by itself.
_AUTH_HINT = " (if the cluster uses token auth, set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN or ~/.ray/auth_token)"


def _root_cause(exc: BaseException) -> str:
    """The innermost error's message on one line. Ray nests the useful one two levels deep, sometimes
    as text inside another error's message ("Last connection error: Traceback ... XError: why")."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    text = f"{type(exc).__name__}: {exc}"
    named = [line.strip() for line in text.splitlines() if _ERROR_LINE.match(line.strip())]
    return (named[-1] if named else text.splitlines()[0]).split(". ")[0]


_ERROR_LINE = re.compile(r"^[\w.]*(Error|Exception): ")


def _cassette_of(transport: Transport) -> tuple[Cassette | None, RecordMode | None]:
    if isinstance(transport, CassetteTransport):
        return transport.cassette, transport.mode
    return None, None


def _setup(ray: ModuleType, run: PreparedRun, cassette: Cassette | None, mode: RecordMode | None) -> WorkerSetup:
    token = uuid.uuid4().hex[:12]
    config = run.config
    # Record mode never looks anything up, so its workers need no copy of the cassette.
    shipped = ray.put(cassette.read_bytes()) if cassette is not None and mode != RecordMode.RECORD else None
    given = Path(config.domain)
    # A pack given by path travels as an absolute path; a name is looked up on each node's install.
    domain = str(run.pack.root) if given.is_dir() and (given / "tasks.json").exists() else config.domain
    paths = {"tasks_file": config.tasks_file, "prices": config.prices}
    absolute = {name: path.resolve() for name, path in paths.items() if path is not None}
    return WorkerSetup(
        token=token,
        config=config.model_copy(update=absolute),  # a worker's working directory is not ours
        domain=domain,
        domain_sha256=run.info.domain_sha256,
        price_source=run.info.price_source,
        version=__version__,
        mode=mode,
        cassette_dir=cassette.directory if cassette is not None else None,
        cassette_bytes=shipped,
        slots=start_live_slots(config.max_concurrency, token) if mode != RecordMode.REPLAY else None,
        kill_trial=os.environ.get(TEST_KILL_ENV) or None,
    )


def _outcome(ray: ModuleType, ref: Any, spec: TrialSpec) -> TrialOutcome:
    """The trial's outcome. An error the trial raised is raised here as itself, as on the thread
    path (a strict replay miss stays a one-line ReplayMissError); a trial Ray could not finish after
    its retries (workers or nodes died) becomes an infrastructure error, which reports exclude and a
    resumed run retries."""
    try:
        outcome: TrialOutcome = ray.get(ref)
        return outcome
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise
    except ray.exceptions.RayError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        simulation = SimulationRun(
            id=spec.run_id,
            task_id=spec.task.id,
            trial=spec.trial,
            seed=spec.seed,
            termination_reason=TerminationReason.INFRASTRUCTURE_ERROR,
            messages=[],
            error=(
                f"Ray could not finish this trial in {MAX_RETRIES + 1} attempts ({type(exc).__name__}: {reason}); "
                "the live calls of those attempts were not recorded"
            ),
            agent_cost=0.0,
            user_cost=0.0,
            judge_cost=0.0,
        )
        return TrialOutcome(simulation, [])


def _keep_calls(outcome: TrialOutcome, cassette: Cassette | None) -> SimulationRun:
    """Append the trial's live calls to the cassette (durably) before the trial itself is saved."""
    if cassette is not None:  # without one, workers have no recorder and return no calls
        cassette.writer.record_all(outcome.recordings)  # one write and one fsync for the trial's calls
    return outcome.simulation


def _release(ray: ModuleType, setup: WorkerSetup) -> None:
    """Remove what the run left on the cluster and this machine."""
    if setup.slots is not None:  # a caller's own Ray session outlives the run; its actor must not
        with contextlib.suppress(Exception):
            ray.kill(setup.slots)
    if setup.kill_trial is not None:
        kill_marker(setup.token).unlink(missing_ok=True)


def _salvage(ray: ModuleType, running: dict[Any, TrialSpec], cassette: Cassette | None) -> None:
    """On an error or Ctrl-C: let the trials in flight finish and record their calls (they are paid
    for), as the thread path does when its pool shuts down. Their results are not saved. A second
    Ctrl-C gives up on them."""
    if not running:
        return
    ready, _ = ray.wait(list(running), num_returns=len(running))
    for ref in ready:
        with contextlib.suppress(Exception):
            _keep_calls(ray.get(ref), cassette)
