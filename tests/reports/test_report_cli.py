"""`tauproxy report`: the --json contract, the table view, unknown money, and the output options."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli, report_json
from report_runs import SLIPS, mock_run, results_json, tiny_results

from tauproxy.data_model.result import TerminationReason

WIDE = {"COLUMNS": "200"}
ROLES_AND_TOTAL = {"agent", "user", "judge", "total"}
CONTRACT_KEYS = {"pass_hat_k", "num_tasks", "num_trials", "avg_reward", "tasks", "cost", "calls"}
ADDED_KEYS = {"pass_hat_k_ci", "termination_reasons", "reward_breakdown", "grid"}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mock_run(tmp_path_factory.mktemp("report") / "run", trials=3, seed=9)


def test_json_keeps_the_contract_and_adds_intervals_breakdown_and_grid(run_dir: Path) -> None:
    report = report_json(run_dir)
    assert set(report) >= CONTRACT_KEYS | ADDED_KEYS
    assert list(report["pass_hat_k"]) == ["1", "2", "3"] and report["num_trials"] == 3
    assert {"task_id", "successes", "trials"} == set(report["tasks"][0])
    assert {"live_usd", "replayed_usd", "by_role", "by_model", "unknown_price_calls"} <= set(report["cost"])
    assert set(report["calls"]) == {"live", "replayed", "shared"}

    assert list(report["pass_hat_k_ci"]) == list(report["pass_hat_k"])
    for k, (lo, hi) in report["pass_hat_k_ci"].items():
        assert lo <= report["pass_hat_k"][k] <= hi
    assert report["termination_reasons"] and report["excluded_reasons"] == {}
    assert set(report["reward_breakdown"]) <= {"DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE", "NL_ASSERTION"}
    assert all(0.0 <= b["mean"] <= 1.0 and b["runs"] > 0 for b in report["reward_breakdown"].values())

    assert [row["task_id"] for row in report["grid"]] == [t["task_id"] for t in report["tasks"]]
    for row, task in zip(report["grid"], report["tasks"], strict=True):
        assert [cell["trial"] for cell in row["trials"]] == [0, 1, 2]
        assert sum(cell["success"] for cell in row["trials"]) == task["successes"]
        assert {cell["source"] for cell in row["trials"]} == {"live"}
        assert {"trial", "seed", "success", "source"} <= set(row["trials"][0])


def test_table_shows_intervals_breakdown_costs_grid_and_the_header(run_dir: Path) -> None:
    out = invoke_cli("report", str(run_dir), "--full", env=WIDE).stdout
    info = results_json(run_dir)["info"]
    for text in (
        "pass^1",
        "pass^3",
        "95% CI",
        "reward by basis",
        "live",
        "saved",
        "trials per task",
        SLIPS,
        "scripted/user",
        "scripted/judge",
        info["price_source"],
        info["tauproxy_version"],
        info["domain_sha256"][:12],
        str(info["trial_seeds"][0]),
        "terminations: user_stop",
    ):
        assert text in out, text
    assert "✓" in out and "✗" in out


def test_the_short_report_names_models_versions_and_prices_but_keeps_the_grid_behind_full(run_dir: Path) -> None:
    short = invoke_cli("report", str(run_dir), env=WIDE).stdout
    info = results_json(run_dir)["info"]
    for text in (
        "pass^1",
        "pass^3",
        SLIPS,
        "scripted/user",
        "scripted/judge",
        info["price_source"],
        info["tauproxy_version"],
        "terminations: user_stop",
        "--full",
    ):
        assert text in short, text
    assert "✓" not in short and "reward by basis" not in short
    assert len(short.splitlines()) < len(invoke_cli("report", str(run_dir), "--full", env=WIDE).stdout.splitlines())


def with_unknown_prices(run_dir: Path, dest: Path) -> Path:
    data: dict[str, Any] = results_json(run_dir)
    for sim in data["simulations"]:
        for call in sim["calls"]:
            call["cost_usd"] = None
    dest.write_text(json.dumps(data))
    return dest


def test_unknown_cost_is_unknown_never_zero(run_dir: Path, tmp_path: Path) -> None:
    unpriced = with_unknown_prices(run_dir, tmp_path / "unpriced.json")
    report = report_json(unpriced)
    assert report["cost"]["live_usd"] is None and report["cost"]["unknown_price_calls"] > 0
    out = invoke_cli("report", str(unpriced), "--full", env=WIDE).stdout
    rows = {
        line.split("│")[0].strip(): [c.strip() for c in line.split("│")[1:]]
        for line in out.splitlines()
        if "│" in line and line.split("│")[0].strip() in ROLES_AND_TOTAL
    }
    assert set(rows) == ROLES_AND_TOTAL
    # Every call was live with no known price: the live column says so. Nothing was replayed, so
    # the saved column is a known $0.
    assert all(columns[0] == "unknown" for columns in rows.values())
    assert all(columns[1] == "$0.0000" for columns in rows.values())


def reject_constant(name: str) -> float:
    raise AssertionError(f"--json wrote {name}, which is not JSON")


def test_json_writes_null_where_the_average_is_undefined(tmp_path: Path) -> None:
    """Every trial an infrastructure error: no run counts, so there is no average reward."""
    results = tiny_results()
    for run in results.simulations:
        run.termination_reason, run.reward_info = TerminationReason.INFRASTRUCTURE_ERROR, None
    path = tmp_path / "results.json"
    path.write_text(results.model_dump_json())
    report = json.loads(invoke_cli("report", str(path), "--json").stdout, parse_constant=reject_constant)
    assert report["avg_reward"] is None and report["excluded_simulations"] == 1
    assert "nan" in invoke_cli("report", str(path), env=WIDE).stdout, "the table still shows it as nan"


def test_output_options(run_dir: Path, tmp_path: Path) -> None:
    page = tmp_path / "out.html"
    proc = invoke_cli("report", str(run_dir), "--json", "--html", str(page))
    assert json.loads(proc.stdout)["num_trials"] == 3, "--html must not disturb the JSON on stdout"
    assert page.read_text().startswith("<!DOCTYPE html>")

    both = invoke_cli("report", str(run_dir), "--json", "--format", "tau2", check=False)
    assert both.returncode != 0 and "--format tau2" in both.stderr

    missing = invoke_cli("report", str(tmp_path / "nowhere"), check=False)
    assert missing.returncode != 0 and "Traceback" not in missing.stderr
