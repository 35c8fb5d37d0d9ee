"""Issue 3 acceptance: record through a stub upstream, replay offline, and the edge cases around it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli, load_stripped, report_json, run_cli, strip_volatile, tauproxy_bin

from tauproxy.store.cassette import Cassette

STUB_ARGS = {"api_key": "sk-test-not-a-real-key", "num_retries": 0}


def agent_args(url: str) -> str:
    return json.dumps({"api_base": url, **STUB_ARGS})


def record_args(url: str, cassette: Path, run_dir: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "openai/stub",
        "--agent-llm-args",
        agent_args(url),
        "--num-trials",
        "4",
        "--cassette",
        str(cassette),
        "--save-to",
        str(run_dir),
        *extra,
    ]


def comparable(path: Path) -> object:
    """A results file minus wall-clock fields and the live/replay marks, which differ by design."""
    data = load_stripped(path)
    data["info"].pop("record_mode", None)
    for simulation in data["simulations"]:
        for call in simulation["calls"]:
            call.pop("source")
    return data


@dataclass
class Recorded:
    """Mock, 4 trials, recorded from a stub upstream that has been stopped since."""

    cassette: Path
    run_dir: Path
    url: str
    stub: Any
    requests: int  # what the stub was sent


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """One recording for the tests that read it (each run of mock's 4 trials costs seconds)."""
    from stub_upstream import StubUpstream

    tmp = tmp_path_factory.mktemp("recorded")
    cassette, run_dir = tmp / "cassette", tmp / "rec"
    stub = StubUpstream().start()
    try:
        invoke_cli(*record_args(stub.url, cassette, run_dir), "--record-mode", "record")
    finally:
        stub.stop()  # replay must not need the upstream at all
    return Recorded(cassette, run_dir, stub.url, stub, stub.request_count)


def test_record_then_replay_offline_is_identical(tmp_path: Path, recorded: Recorded) -> None:
    cassette, url = recorded.cassette, recorded.url
    assert recorded.requests > 0
    invoke_cli(*record_args(url, cassette, tmp_path / "rep1"), "--record-mode", "replay")
    invoke_cli(*record_args(url, cassette, tmp_path / "rep2"), "--record-mode", "replay")
    assert recorded.stub.request_count == recorded.requests
    assert comparable(recorded.run_dir / "results.json") == comparable(tmp_path / "rep1" / "results.json")
    # Replaying twice gives identical results files, timestamps aside.
    assert load_stripped(tmp_path / "rep1" / "results.json") == load_stripped(tmp_path / "rep2" / "results.json")
    recorded_report, replayed = report_json(recorded.run_dir), report_json(tmp_path / "rep1")
    assert recorded_report["pass_hat_k"] == replayed["pass_hat_k"]
    assert replayed["calls"]["live"] == 0 and replayed["calls"]["replayed"] == recorded_report["calls"]["live"]


def test_four_trials_are_four_samples(recorded: Recorded) -> None:
    results = json.loads((recorded.run_dir / "results.json").read_text())
    for task_id in {s["task_id"] for s in results["simulations"]}:
        first_agent_calls = [
            next(c for c in s["calls"] if c["role"] == "agent")
            for s in results["simulations"]
            if s["task_id"] == task_id
        ]
        assert len({c["sample_key"] for c in first_agent_calls}) == 4
    entries = Cassette.open(recorded.cassette, create=False).entries()
    assert len({e.sample_key for e in entries}) == len(entries)
    assert len(entries) == sum(len(s["calls"]) for s in results["simulations"])


def test_prompt_change_misses_agent_calls_only(tmp_path: Path, stub) -> None:
    cassette = tmp_path / "cassette"
    base = [
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "openai/stub",
        "--agent-llm-args",
        agent_args(stub.url),
        "--num-trials",
        "2",
        "--num-tasks",
        "4",
        "--cassette",
        str(cassette),
    ]
    invoke_cli(*base, "--save-to", str(tmp_path / "base"))
    config = tmp_path / "agent.toml"
    config.write_text('model = "openai/stub"\nsystem_prompt = "Always double-check ids."\n')
    invoke_cli(*base, "--agent-config", str(config), "--save-to", str(tmp_path / "changed"))
    results = json.loads((tmp_path / "changed" / "results.json").read_text())
    for simulation in results["simulations"]:
        agent_calls = [c for c in simulation["calls"] if c["role"] == "agent"]
        user_calls = [c for c in simulation["calls"] if c["role"] == "user"]
        assert agent_calls and all(c["source"] == "live" for c in agent_calls)
        assert user_calls[0]["source"] == "replay", "the first user call sees only the fixed greeting"
    by_role = report_json(tmp_path / "changed")["cost"]["by_role"]
    assert by_role["agent"]["replayed"]["calls"] == 0 and by_role["user"]["replayed"]["calls"] > 0


def test_judge_change_misses_judge_calls_only(tmp_path: Path, stub) -> None:
    cassette = tmp_path / "cassette"

    def run(judge: str, name: str) -> dict:
        invoke_cli(
            "run",
            "--domain",
            "mock",
            "--agent-llm",
            "scripted/oracle",
            "--task-ids",
            "explain_order,count_open_tasks",
            "--num-trials",
            "2",
            "--judge-llm",
            judge,
            "--judge-llm-args",
            agent_args(stub.url),
            "--cassette",
            str(cassette),
            "--save-to",
            str(tmp_path / name),
        )
        return report_json(tmp_path / name)

    run("openai/stub-judge", "first")
    second = run("openai/stub-judge-v2", "second")
    roles = second["cost"]["by_role"]
    assert roles["judge"]["live"]["calls"] == 2 and roles["judge"]["replayed"]["calls"] == 0
    assert roles["agent"]["live"]["calls"] == 0 and roles["user"]["live"]["calls"] == 0
    stats = json.loads(invoke_cli("cassette", "stats", str(cassette), "--json").stdout)
    assert stats["calls_by_role"]["judge"] == 4


def test_kill_9_loses_nothing_finished(tmp_path: Path, stub) -> None:
    cassette = tmp_path / "cassette"
    stub.configure(delay_s=0.05)
    args = record_args(stub.url, cassette, tmp_path / "killed")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.Popen([tauproxy_bin(), *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    calls_file = cassette / "calls.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if calls_file.exists() and calls_file.read_text().count('"t":"call"') >= 15:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    recorded_before = len(Cassette.open(cassette, create=False))
    assert recorded_before >= 15
    stub.configure(delay_s=0)
    before = stub.request_count
    invoke_cli(*record_args(stub.url, cassette, tmp_path / "again"))
    report = report_json(tmp_path / "again")
    sent_upstream = stub.request_count - before
    assert report["calls"]["replayed"] == recorded_before, "every call finished before the kill is reused"
    live_upstream = report["cost"]["by_model"]["openai/stub"]["live"]["calls"]
    assert live_upstream == sent_upstream, "the upstream sees only calls not recorded before"


def test_secret_never_written(tmp_path: Path, stub) -> None:
    secret = "sk-test-SECRET-0123456789abcdef"
    args = json.dumps({"api_base": stub.url, "num_retries": 0})
    invoke_cli(
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "openai/stub",
        "--agent-llm-args",
        args,
        "--num-tasks",
        "3",
        "--cassette",
        str(tmp_path / "cassette"),
        "--save-to",
        str(tmp_path / "run"),
        env={"OPENAI_API_KEY": secret},
    )
    assert any(h.get("authorization") == f"Bearer {secret}" for h in stub.request_headers), "the key was used"
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written
    for path in written:
        assert secret not in path.read_text(errors="replace"), path


def test_replay_works_with_litellm_blocked(tmp_path: Path) -> None:
    cassette = tmp_path / "cassette"
    args = [
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "scripted/oracle",
        "--num-trials",
        "2",
        "--cassette",
        str(cassette),
    ]
    invoke_cli(*args, "--save-to", str(tmp_path / "rec"))
    blocker = tmp_path / "blocker"
    (blocker / "litellm").mkdir(parents=True)
    (blocker / "litellm" / "__init__.py").write_text("raise ImportError('litellm is blocked in this test')\n")
    run_cli(*args, "--record-mode", "replay", "--save-to", str(tmp_path / "rep"), env={"PYTHONPATH": str(blocker)})
    assert report_json(tmp_path / "rep")["calls"]["live"] == 0
    probe = subprocess.run(
        [sys.executable, "-c", "import litellm"],
        env={**os.environ, "PYTHONPATH": str(blocker)},
        capture_output=True,
        text=True,
    )
    assert probe.returncode != 0, "the blocker must really block the import"


def test_replay_miss_names_the_call_and_the_difference(tmp_path: Path) -> None:
    cassette = tmp_path / "cassette"
    base = [
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "scripted/oracle",
        "--task-ids",
        "create_task",
        "--cassette",
        str(cassette),
    ]
    invoke_cli(*base, "--save-to", str(tmp_path / "rec"))
    config = tmp_path / "agent.toml"
    config.write_text('model = "scripted/oracle"\nsystem_prompt = "Be terse."\n')
    proc = invoke_cli(
        *base, "--agent-config", str(config), "--record-mode", "replay", "--save-to", str(tmp_path / "rep"), check=False
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    message = proc.stderr
    assert "create_task" in message and "trial 0" in message and "call #1 (agent)" in message
    assert "Be terse." in message, message


def test_vcrpy_mode_names_are_aliases(tmp_path: Path) -> None:
    cassette = tmp_path / "cassette"
    args = [
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "scripted/oracle",
        "--num-tasks",
        "2",
        "--cassette",
        str(cassette),
    ]
    invoke_cli(*args, "--record-mode", "once", "--save-to", str(tmp_path / "a"))
    invoke_cli(*args, "--record-mode", "none", "--save-to", str(tmp_path / "b"))
    assert report_json(tmp_path / "b")["calls"]["live"] == 0
    invoke_cli(*args, "--record-mode", "all", "--save-to", str(tmp_path / "c"))
    assert report_json(tmp_path / "c")["calls"]["replayed"] == 0
    bad = invoke_cli(*args, "--record-mode", "sometimes", check=False)
    assert bad.returncode != 0 and "new_episodes" in bad.stderr
    assert strip_volatile({"timestamp": 1, "x": 2}) == {"x": 2}
