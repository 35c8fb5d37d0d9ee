"""What runs inside a Ray worker: one trial, with a read-only cassette and a collecting recorder.

A worker process may run many trials of a run (and, on a long-lived cluster, of several runs one
after another). It keeps one `_WorkerState` per run token: the domain pack, the prices, the cassette
snapshot and the provider router, built on its first trial of the run, so later trials start at once.

Before its first trial of a run, a worker checks that it computes what the driver would: the same
tauproxy version, domain pack content hash and price source. A cluster node with another version
would otherwise produce different results silently.

Ray is imported only inside functions: this module is loaded before we know Ray is installed.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tauproxy.data_model.completion import CallRecording
from tauproxy.data_model.result import SimulationRun
from tauproxy.domain.pack import DomainPack
from tauproxy.errors import ConfigError
from tauproxy.proxy.collector import CollectingTransport
from tauproxy.proxy.gate import GatedTransport
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.router import ProviderRouter
from tauproxy.proxy.transport import Transport
from tauproxy.runner.config import RunConfig
from tauproxy.runner.ray_slots import RaySlotGate
from tauproxy.runner.trial import TrialSpec, run_trial
from tauproxy.sources.registry import source_for_domain
from tauproxy.store.cassette import Cassette
from tauproxy.version import __version__

# Test-only fault injection: "TASK_ID:TRIAL" makes the worker that first finishes that trial exit
# with os._exit(1) before returning it, as a worker killed mid-run would (every call of that attempt
# made and none recorded). Read by the driver, honoured once per run (a marker file in the temp dir
# of the worker's machine), and only by the Ray executor; tests/ray/test_ray_executor.py uses it.
TEST_KILL_ENV = "TAUPROXY_TEST_KILL_TRIAL"


@dataclass(frozen=True)
class WorkerSetup:
    """What every trial task of one run receives. Passed inline with each task (it is small), never
    `ray.put`: it can hold connection settings from `--*-llm-args`, and inlined arguments are not
    put in the object store, which may spill to disk."""

    token: str  # names this run on the cluster
    config: RunConfig
    domain: str  # the pack as the worker should load it: a built-in name or an absolute path
    domain_sha256: str
    price_source: str | None
    version: str
    mode: RecordMode | None  # None: no cassette (record mode off)
    cassette_dir: Path | None
    cassette_bytes: Any  # ObjectRef of the driver's calls.jsonl bytes; None when there is no cassette
    slots: Any  # ActorHandle of the run's LiveSlots; None when no call can go live
    kill_trial: str | None = None  # TEST_KILL_ENV, see above


@dataclass(frozen=True)
class TrialOutcome:
    """A finished trial and the live calls it made, for the driver to record before saving it."""

    simulation: SimulationRun
    recordings: list[CallRecording]


@dataclass
class _WorkerState:
    pack: DomainPack
    pricing: Pricing
    cassette: Cassette | None
    router: ProviderRouter


_states: dict[str, _WorkerState] = {}  # run token -> state; only the latest run's is kept


def run_trial_task(setup: WorkerSetup, spec: TrialSpec) -> TrialOutcome:
    """The body of one Ray task: run the trial, return it with the calls to record."""
    state = _state_for(setup)
    gate = RaySlotGate(setup.slots, spec.run_id) if setup.slots is not None else None
    if gate is not None:
        gate.forget()  # a slot that an earlier, dead attempt of this trial still held
    transport, collector = _transport_for(setup, state, gate)
    simulation = run_trial(spec, state.pack, setup.config, transport, state.pricing)
    _test_kill_hook(setup, spec)
    return TrialOutcome(simulation, collector.collected if collector is not None else [])


def _transport_for(
    setup: WorkerSetup, state: _WorkerState, gate: RaySlotGate | None
) -> tuple[Transport, CollectingTransport | None]:
    """The thread path's stack (stack.build_transport) with a collecting recorder and gated live calls."""
    live: Transport = GatedTransport(state.router, gate) if gate is not None else state.router
    if setup.mode is None or state.cassette is None:
        return live, None  # no cassette: every call is live and nothing is recorded
    collector = CollectingTransport(
        state.cassette, setup.mode, None if setup.mode == RecordMode.REPLAY else live, state.pricing
    )
    return collector, collector


def _state_for(setup: WorkerSetup) -> _WorkerState:
    state = _states.get(setup.token)
    if state is not None:
        return state
    for old in _states.values():
        old.router.close()
        if old.cassette is not None:
            old.cassette.close()  # and its snapshot's directory (a long-lived worker runs many runs)
    _states.clear()
    state = _build_state(setup)
    _states[setup.token] = state
    return state


def _build_state(setup: WorkerSetup) -> _WorkerState:
    where = f"Ray worker pid {os.getpid()}"
    if setup.version != __version__:
        raise ConfigError(
            f"{where} has tauproxy {__version__}, the driver {setup.version}: install the same on every node"
        )
    config = setup.config
    # As the driver loaded it, from this node's install (a τ²-bench domain from its installed τ²,
    # whose version is in the content hash, so a node with another τ² is refused below).
    pack = source_for_domain(config.domain).load(setup.domain, config)
    if pack.content_sha256 != setup.domain_sha256:
        raise ConfigError(
            f"{where} loads domain {setup.domain!r} with content hash {pack.content_sha256[:12]}, the driver "
            f"{setup.domain_sha256[:12]}: every node needs the same domain pack and tasks file"
        )
    pricing = Pricing.from_file(config.prices)
    if setup.price_source is not None and pricing.source != setup.price_source:
        raise ConfigError(f"{where} prices calls from {pricing.source!r}, the driver from {setup.price_source!r}")
    cassette = None
    if setup.cassette_dir is not None:
        import ray

        data = ray.get(setup.cassette_bytes) if setup.cassette_bytes is not None else b""
        cassette = Cassette.snapshot(setup.cassette_dir, data)
    router = ProviderRouter({task.id: task for task in pack.tasks})
    return _WorkerState(pack, pricing, cassette, router)


def kill_marker(token: str) -> Path:
    return Path(tempfile.gettempdir()) / f"tauproxy-test-kill-{token}"


def _test_kill_hook(setup: WorkerSetup, spec: TrialSpec) -> None:
    if setup.kill_trial != spec.run_id:
        return
    try:
        fd = os.open(kill_marker(setup.token), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return  # this trial was killed once already: let the retry finish
    os.close(fd)
    os._exit(1)
