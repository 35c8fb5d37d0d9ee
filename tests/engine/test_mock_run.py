"""Issue 2 acceptance: the mock domain end to end through the real `tauproxy` command."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from math import comb
from pathlib import Path

from conftest import REPO_ROOT, invoke_cli, load_stripped, report_json


def test_oracle_passes_every_trial(tmp_path: Path) -> None:
    run_dir = tmp_path / "oracle"
    invoke_cli(
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "scripted/oracle",
        "--user-llm",
        "scripted/user",
        "--num-trials",
        "4",
        "--save-to",
        str(run_dir),
    )
    report = report_json(run_dir)
    assert report["pass_hat_k"] == {"1": 1.0, "2": 1.0, "3": 1.0, "4": 1.0}
    assert report["num_tasks"] == 10 and report["num_trials"] == 4
    assert report["avg_reward"] == 1.0
    assert all(t["successes"] == 4 and t["trials"] == 4 for t in report["tasks"])


def test_slips_make_pass_hat_k_fall_and_match_the_formula(tmp_path: Path) -> None:
    run_dir = tmp_path / "slips"
    invoke_cli(
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "scripted/oracle?error_rate=0.3",
        "--num-trials",
        "4",
        "--save-to",
        str(run_dir),
    )
    report = report_json(run_dir)
    pass_k = report["pass_hat_k"]
    assert pass_k["4"] < pass_k["1"]
    for k in range(1, 5):
        expected = sum(comb(t["successes"], k) / comb(t["trials"], k) for t in report["tasks"]) / len(report["tasks"])
        assert abs(pass_k[str(k)] - expected) < 1e-12
    # The counts themselves come from the per-trial rewards in the results file.
    results = json.loads((run_dir / "results.json").read_text())
    for task in report["tasks"]:
        rewards = [s["reward_info"]["reward"] for s in results["simulations"] if s["task_id"] == task["task_id"]]
        assert task["successes"] == sum(abs(r - 1) < 1e-6 for r in rewards)


def test_same_command_twice_gives_identical_results(tmp_path: Path) -> None:
    args = [
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "scripted/oracle?error_rate=0.3",
        "--num-trials",
        "3",
        "--max-concurrency",
        "3",
    ]
    invoke_cli(*args, "--save-to", str(tmp_path / "a"))
    invoke_cli(*args, "--save-to", str(tmp_path / "b"))
    first, second = load_stripped(tmp_path / "a" / "results.json"), load_stripped(tmp_path / "b" / "results.json")
    assert first == second
    assert first["simulations"], "the comparison must cover real trials"


def test_unknown_domain_is_one_line_error(tmp_path: Path) -> None:
    proc = invoke_cli("run", "--domain", "nope", "--agent-llm", "scripted/oracle", check=False)
    assert proc.returncode != 0
    assert "unknown domain 'nope'" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_malformed_tasks_file_names_file_and_field(tmp_path: Path) -> None:
    pack = tmp_path / "broken"
    shutil.copytree(REPO_ROOT / "domains" / "mock", pack, ignore=shutil.ignore_patterns("__pycache__"))
    tasks = json.loads((pack / "tasks.json").read_text())
    del tasks[2]["user_scenario"]
    (pack / "tasks.json").write_text(json.dumps(tasks))
    proc = invoke_cli("run", "--domain", str(pack), "--agent-llm", "scripted/oracle", check=False)
    assert proc.returncode != 0
    assert "tasks.json" in proc.stderr and "user_scenario" in proc.stderr and "move_due_date" in proc.stderr
    assert "Traceback" not in proc.stderr

    (pack / "tasks.json").write_text('[{"id": ')
    proc = invoke_cli("run", "--domain", str(pack), "--agent-llm", "scripted/oracle", check=False)
    assert proc.returncode != 0 and "not valid JSON" in proc.stderr and "Traceback" not in proc.stderr


def test_import_tauproxy_does_not_import_litellm() -> None:
    code = "import sys, tauproxy, tauproxy.runner.run, tauproxy.reports.summary; print('litellm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_interrupted_run_resumes(tmp_path: Path) -> None:
    run_dir = tmp_path / "resume"
    invoke_cli(
        "run", "--domain", "mock", "--agent-llm", "scripted/oracle", "--num-trials", "2", "--save-to", str(run_dir)
    )
    lines = (run_dir / "simulations.jsonl").read_text().splitlines()
    # Keep 5 finished trials and a line cut in half, as a crash would leave them.
    (run_dir / "simulations.jsonl").write_text("\n".join(lines[:5]) + "\n" + lines[5][:40])
    (run_dir / "results.json").unlink()
    invoke_cli(
        "run", "--domain", "mock", "--agent-llm", "scripted/oracle", "--num-trials", "2", "--save-to", str(run_dir)
    )
    report = report_json(run_dir)
    assert report["num_tasks"] == 10 and all(t["trials"] == 2 for t in report["tasks"])
    finished = [json.loads(line) for line in (run_dir / "simulations.jsonl").read_text().splitlines()[:5]]
    resumed = {s["id"] for s in json.loads((run_dir / "results.json").read_text())["simulations"]}
    assert {f["id"] for f in finished} <= resumed
