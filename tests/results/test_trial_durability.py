"""Saved trials are fsynced in batches, not one by one, and a run still loses nothing it paid for:
a trial whose line was lost before its fsync runs again from the cassette, and a run killed with
SIGKILL resumes to the results an unkilled run gets, no call paid twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli, load_stripped, tauproxy_bin

from tauproxy.results import run_dir as run_dir_module
from tauproxy.results.run_dir import RESULTS_FILE, SIMULATIONS_FILE, ResultsDir

FAKE_KEY = "sk-test-" + "not-a-real-key"  # built, so no key-like literal sits in the tree


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def run_args(url: str, cassette: Path, run_dir: Path) -> list[str]:
    return [
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "openai/stub",
        "--agent-llm-args",
        json.dumps({"api_base": url, "api_key": FAKE_KEY, "num_retries": 0}),
        "--num-tasks",
        "3",
        "--num-trials",
        "2",
        "--cassette",
        str(cassette),
        "--save-to",
        str(run_dir),
    ]


def comparable(run_dir: Path) -> Any:
    """results.json minus wall-clock fields (a call's latency too), the cassette's path and the
    live/replay marks: what two runs of the same trials share."""
    data = load_stripped(run_dir / RESULTS_FILE)
    data["info"].pop("cassette")
    for simulation in data["simulations"]:
        for call in simulation["calls"]:
            call.pop("source")
            call.pop("latency_s")
    return data


def saved_lines(run_dir: Path) -> list[bytes]:
    path = run_dir / SIMULATIONS_FILE
    return [line for line in path.read_bytes().split(b"\n") if line] if path.exists() else []


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished run, for trials to append."""
    run_dir = tmp_path_factory.mktemp("finished") / "run"
    invoke_cli(
        "run", "--domain", "mock", "--agent-llm", "scripted/oracle", "--num-trials", "2", "--save-to", str(run_dir)
    )
    return run_dir


def test_trials_saved_close_together_share_one_fsync(
    finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = list(ResultsDir(finished).finished().values())[:5]
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(run_dir_module.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    clock = FakeClock()
    target = ResultsDir(tmp_path, sync_interval_s=0.25, clock=clock)

    target.append(runs[0])
    assert len(synced) == 1, "the first trial is fsynced at once"
    for run, now in zip(runs[1:4], (100.1, 100.2, 100.24), strict=True):
        clock.now = now
        target.append(run)
    assert len(synced) == 1, "trials within the interval wait for the batch's fsync"
    assert saved_lines(tmp_path) == [run.model_dump_json().encode() for run in runs[:4]], "written at once"

    clock.now = 100.3
    target.append(runs[4])
    assert len(synced) == 2, "the interval passed: this fsync makes the whole batch durable"
    target.sync()
    assert len(synced) == 2, "nothing written since the last fsync"
    clock.now = 100.31
    target.append(runs[0])
    target.sync()
    assert len(synced) == 3, "the end of a run fsyncs what the batch holds"
    assert set(ResultsDir(tmp_path).finished()) == {run.id for run in runs}


def test_a_failed_write_starts_a_fresh_line_on_the_next_append(
    finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = list(ResultsDir(finished).finished().values())[:2]
    target = ResultsDir(tmp_path)
    real_write = os.write

    def cut_write(fd: int, data: Any) -> int:
        real_write(fd, bytes(data[:40]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(run_dir_module.os, "write", cut_write)
    with pytest.raises(OSError):
        target.append(first)
    monkeypatch.setattr(run_dir_module.os, "write", real_write)
    target.append(second)
    target.sync()
    assert saved_lines(tmp_path) == [first.model_dump_json().encode()[:40], second.model_dump_json().encode()]
    assert set(ResultsDir(tmp_path).finished()) == {second.id}


def test_trials_lost_before_their_fsync_run_again_from_the_cassette(tmp_path: Path, stub) -> None:
    """What a machine going down between two batch fsyncs leaves: the last saved lines are gone (and
    results.json was never written). The resume re-runs those trials with every call replayed."""
    cassette, run_dir = tmp_path / "cassette", tmp_path / "run"
    invoke_cli(*run_args(stub.url, cassette, run_dir))
    whole = comparable(run_dir)
    lines = saved_lines(run_dir)
    (run_dir / SIMULATIONS_FILE).write_bytes(b"".join(line + b"\n" for line in lines[:-2]))
    (run_dir / RESULTS_FILE).unlink()

    before = stub.request_count
    invoke_cli(*run_args(stub.url, cassette, run_dir))
    assert stub.request_count == before, "every call of the lost trials replays from the cassette"
    assert len(saved_lines(run_dir)) == len(lines), "exactly the lost trials ran again"
    assert comparable(run_dir) == whole


def test_a_run_killed_with_sigkill_resumes_to_the_unkilled_results(tmp_path: Path, stub) -> None:
    before = stub.request_count
    invoke_cli(*run_args(stub.url, tmp_path / "cassette-whole", tmp_path / "whole"))
    unkilled_requests = stub.request_count - before

    cassette, run_dir = tmp_path / "cassette", tmp_path / "run"
    stub.configure(delay_s=0.02)  # slow enough to be killed mid-run
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    started = stub.request_count
    args = run_args(stub.url, cassette, run_dir)
    proc = subprocess.Popen([tauproxy_bin(), *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(saved_lines(run_dir)) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "killed mid-run, not finished"
    killed_requests = stub.request_count - started
    assert len(saved_lines(run_dir)) >= 2 and not (run_dir / RESULTS_FILE).exists()

    stub.configure(delay_s=0)
    resumed_from = stub.request_count
    invoke_cli(*args)
    resumed_requests = stub.request_count - resumed_from
    assert comparable(run_dir) == comparable(tmp_path / "whole")
    # Every call recorded before the kill replays; only one in flight at the kill (sent, its answer
    # not yet recorded: one trial at a time, one call at a time) can have been sent twice.
    assert 0 <= killed_requests + resumed_requests - unkilled_requests <= 1
    assert resumed_requests < unkilled_requests
