"""Ctrl-C: the run says how many trials it saved and how to resume, exits 130, leaves a run that
`report` reads, and the same command resumes where it stopped.

The interrupted run is a real process (the signal is the point); reading and resuming it are not."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import invoke_cli

from tauproxy_cli import exit_codes

pytestmark = pytest.mark.slow


def run_args(tmp_path: Path, num_tasks: int) -> list[str]:
    return [
        "run",
        "--domain",
        "airline",
        "--num-tasks",
        str(num_tasks),
        "--num-trials",
        "40",
        "--agent-llm",
        "scripted/oracle",
        "--cassette",
        str(tmp_path / "c"),
        "--save-to",
        str(tmp_path / "run"),
    ]


def saved(tmp_path: Path) -> int:
    path = tmp_path / "run" / "simulations.jsonl"
    return sum(1 for line in path.read_bytes().split(b"\n") if line.strip()) if path.exists() else 0


def interrupted(tmp_path: Path, args: list[str]) -> str:
    """`tauproxy ARGS` as a process, sent SIGINT once it has saved three trials; its stderr, once it
    has exited as interrupted."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    command = [sys.executable, "-m", "tauproxy_cli", *args]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while saved(tmp_path) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == exit_codes.INTERRUPTED, err
    return err


def test_ctrl_c_saves_says_and_resumes(tmp_path: Path) -> None:
    err = interrupted(tmp_path, run_args(tmp_path, 60))
    kept = saved(tmp_path)
    assert f"interrupted: {kept} of 2400 trials saved; rerun the same command to resume" in err
    assert "Traceback" not in err
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert len(results["simulations"]) == kept  # what report and view need
    invoke_cli("report", str(tmp_path / "run"), "--json")
    # Resume a smaller selection: its finished trials are counted, not the whole directory's.
    first_task = sum(1 for sim in results["simulations"] if sim["task_id"] == results["tasks"][0]["id"])
    again = invoke_cli(*run_args(tmp_path, 1))
    if first_task:
        assert f"resuming: {first_task} of 40 trials done" in again.stderr


def test_ctrl_c_in_a_strict_replay_stops_inside_a_trial_and_resumes(tmp_path: Path) -> None:
    """A strict replay at concurrency 1 runs its trials on the main thread, so the signal lands inside
    one: the run stops there, keeps what finished and resumes to the same results as a whole run."""
    args = [*run_args(tmp_path, 3), "--num-trials", "300"]  # the last --num-trials wins
    invoke_cli(*args, "--save-to", str(tmp_path / "whole"))  # records the cassette
    replay = [*args, "--record-mode", "replay"]
    err = interrupted(tmp_path, replay)
    kept = saved(tmp_path)
    assert 3 <= kept < 900 and f"interrupted: {kept} of 900 trials saved" in err
    assert "Traceback" not in err
    again = invoke_cli(*replay)
    assert f"resuming: {kept} of 900 trials done" in again.stderr
    ids = [json.loads(line)["id"] for line in (tmp_path / "run" / "simulations.jsonl").read_text().splitlines()]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 900
    resumed = json.loads((tmp_path / "run" / "results.json").read_text())
    whole = json.loads((tmp_path / "whole" / "results.json").read_text())
    rewards = [[sim["id"], sim["reward_info"]["reward"]] for sim in resumed["simulations"]]
    assert rewards == [[sim["id"], sim["reward_info"]["reward"]] for sim in whole["simulations"]]
