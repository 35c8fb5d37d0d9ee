"""`--executor thread` in process on the mock domain with scripted models: the results a plain
sequential loop over the trials gives, a pool bounded by --max-concurrency, and a close that waits."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import strip_volatile

from tauproxy.data_model.result import Results, SimulationRun
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import Pricing
from tauproxy.runner import thread_executor
from tauproxy.runner.config import RunConfig
from tauproxy.runner.executor import run_pending
from tauproxy.runner.run import execute, prepare
from tauproxy.runner.stack import build_transport
from tauproxy.runner.thread_executor import ThreadExecutor
from tauproxy.runner.trial import TrialSpec, run_trial


def slips(tmp_path: Path, **changes: Any) -> RunConfig:
    """Seeded slips, so trials differ in reward and a mix-up between trials would show."""
    config = RunConfig(
        domain="mock",
        agent=LLMConfig(model="scripted/oracle?error_rate=0.3"),
        num_trials=3,
        max_concurrency=4,
        cassette=tmp_path / "cassette",
    )
    return config.model_copy(update=changes)


def comparable(simulations: list[SimulationRun]) -> list[Any]:
    return [strip_volatile(json.loads(sim.model_dump_json())) for sim in simulations]


def sequential(config: RunConfig) -> list[SimulationRun]:
    """The reference: every trial in spec order, one after another, on one transport."""
    run = prepare(config)
    transport = build_transport(config, run.pack, run.pricing)
    try:
        return [run_trial(spec, run.pack, config, transport, run.pricing) for spec in run.specs]
    finally:
        transport.close()


def test_threads_give_what_a_sequential_loop_gives(tmp_path: Path) -> None:
    outcome = execute(slips(tmp_path / "threads"))
    expected = sequential(slips(tmp_path / "sequential"))
    assert comparable(outcome.results.simulations) == comparable(expected)
    rewards = {sim.reward_info.reward for sim in expected if sim.reward_info}
    assert rewards == {0.0, 1.0}, "the comparison covers passing and failing trials"
    assert sorted(sim.id for sim in outcome.new_runs) == sorted(sim.id for sim in expected)


def test_a_resumed_run_gives_what_one_uninterrupted_run_gives(tmp_path: Path) -> None:
    # No cassette: the resumed trials would replay what the first attempt recorded, and differ in
    # each call's live/replay mark.
    whole = execute(slips(tmp_path, cassette=None, save_to=tmp_path / "whole"))
    config = slips(tmp_path, cassette=None, save_to=tmp_path / "cut")
    execute(config)
    saved = config.save_to / "simulations.jsonl"  # type: ignore[operator]
    saved.write_text("".join(saved.read_text().splitlines(keepends=True)[:7]))
    resumed = execute(config)
    assert len(resumed.new_runs) == len(whole.results.simulations) - 7
    written = Results.model_validate_json((config.save_to / "results.json").read_text())  # type: ignore[operator]
    assert comparable(written.simulations) == comparable(whole.results.simulations)


def test_the_pool_runs_at_most_max_concurrency_trials_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lock = threading.Lock()
    now = peak = 0

    def counted(spec: TrialSpec, *args: Any) -> SimulationRun:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
        time.sleep(0.02)  # long enough for the pool to start everything it is allowed to
        try:
            return run_trial(spec, *args)
        finally:
            with lock:
                now -= 1

    monkeypatch.setattr(thread_executor, "run_trial", counted)
    config = slips(tmp_path, max_concurrency=3, num_trials=2)
    run = prepare(config)
    transport = build_transport(config, run.pack, run.pricing)
    executor = ThreadExecutor(run, transport)
    assert executor.window(budget_blind=True) == executor.window(budget_blind=False) == 3
    try:
        done, stop = run_pending(run, executor, None)
    finally:
        executor.close()
        transport.close()
    assert stop is None and len(done) == 20
    assert peak == 3


def test_close_waits_for_the_trials_still_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After an error the pool is closed, not abandoned: trials in flight finish (and so record
    their calls) before the error reaches the caller."""
    release = threading.Event()
    finished: list[str] = []

    def slow(spec: TrialSpec, *args: Any) -> SimulationRun:
        release.wait(5)
        finished.append(spec.run_id)
        return run_trial(spec, *args)

    monkeypatch.setattr(thread_executor, "run_trial", slow)
    config = slips(tmp_path, max_concurrency=2)
    run = prepare(config)
    executor = ThreadExecutor(run, build_transport(config, run.pack, Pricing.from_file(None)))
    futures = [executor.submit(spec) for spec in run.specs[:2]]
    threading.Timer(0.1, release.set).start()
    executor.close()
    assert all(future.done() for future in futures)
    assert sorted(finished) == sorted(spec.run_id for spec in run.specs[:2])


def test_a_strict_replay_at_concurrency_1_runs_its_trials_on_the_calling_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No pool of one: the trials run where run_pending runs, and give what the pool gives."""
    recorded = execute(slips(tmp_path))
    threads: set[str] = set()

    def noted(spec: TrialSpec, *args: Any) -> SimulationRun:
        threads.add(threading.current_thread().name)
        return run_trial(spec, *args)

    monkeypatch.setattr(thread_executor, "run_trial", noted)
    replayed = execute(slips(tmp_path, record_mode=RecordMode.REPLAY, max_concurrency=1))
    assert threads == {threading.current_thread().name}
    threads.clear()
    pooled = execute(slips(tmp_path, record_mode=RecordMode.REPLAY, max_concurrency=2))
    assert threads and threading.current_thread().name not in threads
    assert comparable(replayed.results.simulations) == comparable(pooled.results.simulations)
    assert [sim.id for sim in replayed.results.simulations] == [sim.id for sim in recorded.results.simulations]


def test_once_over_a_recorded_cassette_is_a_strict_replay_on_the_calling_thread(tmp_path: Path) -> None:
    """`once` decides when the cassette opens: recorded, it replays strictly, so no call can go live."""
    execute(slips(tmp_path, record_mode=RecordMode.ONCE))
    config = slips(tmp_path, record_mode=RecordMode.ONCE, max_concurrency=1)
    run = prepare(config)
    executor = ThreadExecutor(run, build_transport(config, run.pack, run.pricing))
    try:
        assert executor.inline
        handle = executor.submit(run.specs[0])
        assert handle.done() and executor.result(handle).id == run.specs[0].run_id
    finally:
        executor.close()


@pytest.mark.parametrize("mode", ["auto", "record", "once", "off"])
def test_a_run_that_may_go_live_keeps_its_trials_off_the_calling_thread(tmp_path: Path, mode: str) -> None:
    """A Ctrl-C must never land between a paid answer and its recording: only the waiting thread gets it."""
    config = slips(tmp_path, record_mode=RecordMode(mode), max_concurrency=1)
    run = prepare(config)
    executor = ThreadExecutor(run, build_transport(config, run.pack, run.pricing))
    try:
        assert not executor.inline
        handle = executor.submit(run.specs[0])
        assert executor.result(handle).id == run.specs[0].run_id
    finally:
        executor.close()


def test_an_inline_trial_raises_where_the_pool_would(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trial's exception waits in its handle for `result`, as a pool's future holds it; a Ctrl-C
    inside a trial stops run_pending at once, the trials finished before it kept."""
    execute(slips(tmp_path))
    config = slips(tmp_path, record_mode=RecordMode.REPLAY, max_concurrency=1)
    run = prepare(config)
    executor = ThreadExecutor(run, build_transport(config, run.pack, run.pricing))
    assert executor.inline

    def failing(spec: TrialSpec, *args: Any) -> SimulationRun:
        raise RuntimeError(f"trial {spec.run_id} broke")

    monkeypatch.setattr(thread_executor, "run_trial", failing)
    handle = executor.submit(run.specs[0])
    assert handle.done()
    with pytest.raises(RuntimeError, match="broke"):
        executor.result(handle)

    calls = 0

    def interrupted(spec: TrialSpec, *args: Any) -> SimulationRun:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt
        return run_trial(spec, *args)

    monkeypatch.setattr(thread_executor, "run_trial", interrupted)
    done, stop = run_pending(run, executor, None)
    executor.close()
    assert stop is not None and stop.kind.value == "interrupted"
    assert [sim.id for sim in done] == [spec.run_id for spec in run.specs[:2]]
