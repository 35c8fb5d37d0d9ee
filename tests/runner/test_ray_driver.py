"""The Ray executor's driver side against a fake `ray` module: its window, recording a trial's calls
before handing the trial back, and what `close` does after an error or Ctrl-C (record the calls of
the trials still in flight, remove the run's actor, shut down a Ray it started). The real cluster
runs are in tests/ray/."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tauproxy.data_model.result import SimulationRun, TerminationReason
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.router import ProviderRouter
from tauproxy.runner import ray_executor
from tauproxy.runner.config import RunConfig
from tauproxy.runner.prepared import PreparedRun
from tauproxy.runner.ray_executor import RayExecutor
from tauproxy.runner.ray_worker import TrialOutcome
from tauproxy.runner.run import prepare
from tauproxy.runner.trial import TrialSpec


@dataclass
class FakeCassette:
    directory: Path = Path("cassette")
    written: list[str] = field(default_factory=list)

    def read_bytes(self) -> bytes:
        return b""

    @property
    def writer(self) -> FakeCassette:  # the driver appends a trial's calls through the cassette's writer
        return self

    def record_all(self, recordings: list[FakeRecording]) -> None:
        self.written.extend(recording.run_id for recording in recordings)


@dataclass(frozen=True)
class FakeRecording:
    run_id: str


class RayError(Exception):
    pass


class RayTaskError(RayError):
    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class FakeRay:
    """Just what the driver calls. Every trial is finished the moment it is submitted."""

    class exceptions:
        RayError = RayError
        RayTaskError = RayTaskError

    def __init__(self, cpus: int = 4) -> None:
        self.cpus = cpus
        self.outcomes: dict[str, TrialOutcome | BaseException] = {}
        self.fail: dict[str, BaseException] = {}  # run id -> what ray.get raises for it
        self.interrupt_wait = False
        self.killed: list[Any] = []
        self.shut_down = False

    def remote(self, **options: Any) -> Any:
        fake = self

        class Task:
            @staticmethod
            def remote(setup: Any, spec: TrialSpec) -> str:
                ref = f"ref:{spec.run_id}"
                fake.outcomes[ref] = fake.fail.get(spec.run_id) or outcome(spec)
                return ref

        return lambda function: Task

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": float(self.cpus)}

    def put(self, data: bytes) -> str:
        return "bytes-ref"

    def wait(self, refs: list[str], num_returns: int) -> tuple[list[str], list[str]]:
        if self.interrupt_wait:
            raise KeyboardInterrupt
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref: str) -> TrialOutcome:
        result = self.outcomes[ref]
        if isinstance(result, BaseException):
            raise result
        return result

    def kill(self, actor: Any) -> None:
        self.killed.append(actor)

    def shutdown(self) -> None:
        self.shut_down = True


def outcome(spec: TrialSpec) -> TrialOutcome:
    simulation = SimulationRun(
        id=spec.run_id,
        task_id=spec.task.id,
        trial=spec.trial,
        seed=spec.seed,
        termination_reason=TerminationReason.AGENT_STOP,
        messages=[],
    )
    return TrialOutcome(simulation, [FakeRecording(spec.run_id)])  # type: ignore[list-item]


@pytest.fixture
def run() -> PreparedRun:
    return prepare(RunConfig(domain="mock", agent=LLMConfig(model="scripted/oracle")))


@pytest.fixture
def cassette(monkeypatch: pytest.MonkeyPatch) -> FakeCassette:
    fake = FakeCassette()
    monkeypatch.setattr(ray_executor, "_cassette_of", lambda transport: (fake, RecordMode.AUTO))
    monkeypatch.setattr(ray_executor, "start_live_slots", lambda limit, token: "slots-actor")
    return fake


def executor(ray: FakeRay, run: PreparedRun, owned: bool = True) -> RayExecutor:
    return RayExecutor(ray, run, ProviderRouter({}), owned)  # type: ignore[arg-type]


def test_one_trial_per_cpu_and_one_alone_while_the_budget_is_blind(run: PreparedRun, cassette: FakeCassette) -> None:
    ray = executor(FakeRay(cpus=4), run)
    assert ray.window(budget_blind=False) == 4
    assert ray.window(budget_blind=True) == 1


def test_a_trial_comes_back_after_its_calls_are_recorded(run: PreparedRun, cassette: FakeCassette) -> None:
    ray = executor(FakeRay(), run)
    refs = [ray.submit(spec) for spec in run.specs[:2]]
    (ready,) = ray.wait_any(refs)
    assert ray.result(ready).id == run.specs[0].run_id
    assert cassette.written == [run.specs[0].run_id]


@pytest.mark.parametrize("owned", [True, False])
def test_close_records_the_trials_in_flight_and_cleans_up(
    run: PreparedRun, cassette: FakeCassette, owned: bool
) -> None:
    fake = FakeRay()
    ray = executor(fake, run, owned)
    refs = [ray.submit(spec) for spec in run.specs[:3]]
    ray.result(refs[0])
    ray.close()  # as after an error or Ctrl-C in the loop: two trials still in flight
    assert cassette.written == [spec.run_id for spec in run.specs[:3]], "their calls are paid for"
    assert fake.killed == ["slots-actor"]
    assert fake.shut_down is owned, "a caller's own Ray session is left up"


def test_a_second_ctrl_c_gives_up_on_the_trials_in_flight_but_still_cleans_up(
    run: PreparedRun, cassette: FakeCassette
) -> None:
    fake = FakeRay()
    ray = executor(fake, run)
    ray.submit(run.specs[0])
    fake.interrupt_wait = True
    with pytest.raises(KeyboardInterrupt):
        ray.close()
    assert cassette.written == []
    assert fake.killed == ["slots-actor"] and fake.shut_down


def test_an_error_the_trial_raised_is_raised_as_itself(run: PreparedRun, cassette: FakeCassette) -> None:
    fake = FakeRay()
    fake.fail[run.specs[0].run_id] = RayTaskError(ValueError("replay miss"))
    ray = executor(fake, run)
    with pytest.raises(ValueError, match="replay miss"):
        ray.result(ray.submit(run.specs[0]))


def test_a_trial_ray_could_not_finish_is_an_infrastructure_error(run: PreparedRun, cassette: FakeCassette) -> None:
    fake = FakeRay()
    fake.fail[run.specs[0].run_id] = RayError("worker died\nmore")
    ray = executor(fake, run)
    simulation = ray.result(ray.submit(run.specs[0]))
    assert simulation.termination_reason == TerminationReason.INFRASTRUCTURE_ERROR
    assert simulation.error is not None and "RayError: worker died" in simulation.error
    assert cassette.written == []
