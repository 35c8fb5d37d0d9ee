"""The submit/budget loop every executor shares (runner/executor.py), driven by an in-memory executor.

No threads and no Ray: `FakeExecutor` finishes trials when the loop waits for them, in the order the
test chooses, and records what the loop asked of it. The run is a real prepared mock-domain run, so
saving goes through the real results directory.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tauproxy.data_model.call import CallRecord, CallSource
from tauproxy.data_model.result import SimulationRun, TerminationReason
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.results.run_dir import load_results
from tauproxy.runner import run as run_module
from tauproxy.runner.config import RunConfig
from tauproxy.runner.executor import StopKind, run_pending
from tauproxy.runner.prepared import PreparedRun
from tauproxy.runner.run import execute_prepared, prepare
from tauproxy.runner.trial import TrialSpec


def prepared(tmp_path: Path | None = None, max_cost: float | None = None, num_trials: int = 2) -> PreparedRun:
    config = RunConfig(
        domain="mock",
        agent=LLMConfig(model="scripted/oracle"),
        num_trials=num_trials,
        max_cost=max_cost,
        save_to=tmp_path / "run" if tmp_path else None,
    )
    return prepare(config)


def simulation(spec: TrialSpec, cost: float | None, source: CallSource = "live") -> SimulationRun:
    calls = [CallRecord(index=0, role="agent", model="m", key="k", sample_key="s", source=source, cost_usd=cost)]
    return SimulationRun(
        id=spec.run_id,
        task_id=spec.task.id,
        trial=spec.trial,
        seed=spec.seed,
        termination_reason=TerminationReason.AGENT_STOP,
        messages=[],
        calls=calls,
    )


@dataclass
class FakeExecutor:
    """Handles are submission numbers. `wait_any` finishes the oldest trial in flight (or the newest,
    with `newest_first`); `result` raises `fail_with` on the `fail_at`-th result (1-based)."""

    size: int = 3
    alone_while_blind: bool = False  # Ray's rule: one trial until the budget has a cost to go on
    cost: float | None = 1.0
    source: CallSource = "live"
    newest_first: bool = False
    fail_at: int | None = None
    fail_with: BaseException = field(default_factory=lambda: RuntimeError("trial blew up"))
    submitted: list[TrialSpec] = field(default_factory=list)
    in_flight: list[int] = field(default_factory=list)
    peak: int = 0
    starts: list[int] = field(default_factory=list)  # trials in flight when each one was submitted
    blind_asked: list[bool] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    closed: bool = False

    def window(self, budget_blind: bool) -> int:
        self.blind_asked.append(budget_blind)
        return 1 if self.alone_while_blind and budget_blind else self.size

    def submit(self, spec: TrialSpec) -> int:
        self.starts.append(len(self.in_flight))
        self.submitted.append(spec)
        handle = len(self.submitted) - 1
        self.in_flight.append(handle)
        self.peak = max(self.peak, len(self.in_flight))
        return handle

    def wait_any(self, handles: Sequence[int]) -> list[int]:
        assert sorted(handles) == sorted(self.in_flight), "the loop waits on exactly what is in flight"
        return [max(handles) if self.newest_first else min(handles)]

    def result(self, handle: int) -> SimulationRun:
        self.in_flight.remove(handle)
        spec = self.submitted[handle]
        self.finished.append(spec.run_id)
        if self.fail_at is not None and len(self.finished) == self.fail_at:
            raise self.fail_with
        return simulation(spec, self.cost, self.source)

    def close(self) -> None:
        self.closed = True


def saved_ids(run: PreparedRun) -> list[str]:
    assert run.results_dir is not None
    lines = (run.results_dir.path / "simulations.jsonl").read_text().splitlines()
    return [json.loads(line)["id"] for line in lines]


def test_every_pending_trial_is_submitted_once_in_spec_order_within_the_window() -> None:
    run = prepared()
    executor = FakeExecutor(size=3)
    done, stop = run_pending(run, executor, None)
    stopped = stop.reason if stop is not None else None
    assert stopped is None
    assert [spec.run_id for spec in executor.submitted] == [spec.run_id for spec in run.specs]
    assert executor.peak == 3, "the window is filled, and never passed"
    assert [sim.id for sim in done] == executor.finished
    assert len(done) == len(run.specs) == 20


def test_each_trial_is_saved_before_it_is_reported_in_the_order_it_finished(tmp_path: Path) -> None:
    run = prepared(tmp_path)
    executor = FakeExecutor(size=4, newest_first=True)
    reported: list[tuple[str, int, int]] = []

    def progress(sim: SimulationRun, done: int, total: int) -> None:
        assert saved_ids(run)[-1] == sim.id, "on disk before anyone is told"
        reported.append((sim.id, done, total))

    done, _ = run_pending(run, executor, progress)
    order = [sim.id for sim in done]
    assert order == executor.finished != [spec.run_id for spec in run.specs], "finish order differs from spec order"
    assert saved_ids(run) == order
    assert reported == [(run_id, count, 20) for count, run_id in enumerate(order, start=1)]


def test_a_crashed_run_resumes_with_only_the_unfinished_trials(tmp_path: Path) -> None:
    first = prepared(tmp_path)
    with pytest.raises(RuntimeError, match="trial blew up"):
        run_pending(first, FakeExecutor(size=2, fail_at=6), None)
    kept = saved_ids(first)
    assert len(kept) == 5, "the five trials that finished before the crash were saved"

    again = prepared(tmp_path)
    assert set(again.finished) == set(kept)
    executor = FakeExecutor(size=2)
    reported: list[int] = []
    done, _ = run_pending(again, executor, lambda sim, count, total: reported.append(count))
    assert [spec.run_id for spec in executor.submitted] == [s.run_id for s in again.specs if s.run_id not in kept]
    assert len(done) == 15
    assert reported == list(range(6, 21)), "progress counts the resumed trials too"
    assert sorted(saved_ids(again)) == sorted(spec.run_id for spec in again.specs)


def test_nothing_to_do_submits_nothing(tmp_path: Path) -> None:
    run_pending(prepared(tmp_path, num_trials=1), FakeExecutor(), None)
    executor = FakeExecutor()
    assert run_pending(prepared(tmp_path, num_trials=1), executor, None) == ([], None)
    assert executor.submitted == []


def test_the_budget_stops_before_the_trial_that_would_pass_it() -> None:
    run = prepared(max_cost=2.5)
    executor = FakeExecutor(size=1, cost=1.0)
    done, stop = run_pending(run, executor, None)
    stopped = stop.reason if stop is not None else None
    assert [sim.id for sim in done] == [spec.run_id for spec in run.specs[:2]]
    assert stopped == (
        "stopped before the budget: $2.0000 spent, next trial projected to reach $3.0000 > --max-cost $2.5000; "
        "rerun with the same --save-to to resume"
    )


def test_the_budget_counts_running_trials_and_lets_them_finish() -> None:
    run = prepared(max_cost=3.5)
    executor = FakeExecutor(size=3, cost=1.0)
    done, stop = run_pending(run, executor, None)
    stopped = stop.reason if stop is not None else None
    # Three start at once (nothing to project from yet); after the first finishes, $1 spent plus
    # $1 for each of the two running and the next one is $4.
    assert len(executor.submitted) == 3 and len(done) == 3
    assert stopped is not None
    assert "$1.0000 spent, next trial projected to reach $4.0000 > --max-cost $3.5000" in stopped


def test_under_a_budget_the_first_trial_can_run_alone() -> None:
    """The loop tells the window when the budget has no finished trial to project from; an
    executor that then allows one trial (Ray's rule) starts one, and fills its window after."""
    executor = FakeExecutor(size=3, alone_while_blind=True, cost=1.0)
    run_pending(prepared(max_cost=100.0), executor, None)
    assert executor.starts[:4] == [0, 0, 1, 2], "one alone, then up to the window"
    assert executor.peak == 3
    blind_until = executor.blind_asked.index(False)
    assert blind_until > 0 and all(executor.blind_asked[:blind_until]) and not any(executor.blind_asked[blind_until:])


def test_without_a_budget_the_window_is_never_blind() -> None:
    executor = FakeExecutor(size=3, alone_while_blind=True)
    run_pending(prepared(), executor, None)
    assert not any(executor.blind_asked)
    assert executor.starts[:3] == [0, 1, 2]


def test_an_unknown_live_price_stops_the_run_after_the_first_trial() -> None:
    done, stop = run_pending(prepared(max_cost=10.0), FakeExecutor(size=1, cost=None), None)
    stopped = stop.reason if stop is not None else None
    assert len(done) == 1
    assert stopped == "a live call had an unknown price; --max-cost 10.0 cannot be kept"


def test_replayed_calls_cost_nothing_against_the_budget() -> None:
    done, stop = run_pending(prepared(max_cost=0.5), FakeExecutor(size=2, cost=1.0, source="replay"), None)
    stopped = stop.reason if stop is not None else None
    assert stopped is None and len(done) == 20


def test_an_error_closes_the_executor_and_keeps_what_finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`execute_prepared` closes the executor whatever happens: that is where Ray records the calls
    of the trials still in flight and the thread pool waits for them."""
    executor = FakeExecutor(size=2, fail_at=3, fail_with=RuntimeError("trial blew up"))
    monkeypatch.setattr(run_module, "open_executor", lambda run, transport: executor)
    run = prepared(tmp_path)
    with pytest.raises(RuntimeError):
        execute_prepared(run)
    assert executor.closed
    assert saved_ids(run) == executor.finished[:2]


def test_ctrl_c_stops_the_run_and_writes_what_finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    executor = FakeExecutor(size=2, fail_at=3, fail_with=KeyboardInterrupt())
    monkeypatch.setattr(run_module, "open_executor", lambda run, transport: executor)
    run = prepared(tmp_path)
    outcome = execute_prepared(run)
    assert executor.closed
    assert outcome.stop is not None and outcome.stop.kind is StopKind.INTERRUPTED
    assert saved_ids(run) == executor.finished[:2]
    # results.json holds what finished, so report and view work on the interrupted run.
    assert [sim.id for sim in load_results(tmp_path / "run").simulations] == sorted(
        executor.finished[:2], key=[spec.run_id for spec in run.specs].index
    )


def test_a_finished_run_closes_the_executor_and_orders_results_by_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    executor = FakeExecutor(size=4, newest_first=True)
    monkeypatch.setattr(run_module, "open_executor", lambda run, transport: executor)
    run = prepared(tmp_path)
    outcome = execute_prepared(run)
    assert executor.closed
    assert [sim.id for sim in outcome.results.simulations] == [spec.run_id for spec in run.specs]
    assert [sim.id for sim in outcome.new_runs] == executor.finished
