"""`report RUN RUN`: trials merged by (task, seed), duplicates once, conflicts refused."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli, report_json
from report_runs import mock_run, results_json

# Keys that must not depend on how the trials were split across files.
SAME_KEYS = (
    "pass_hat_k",
    "pass_hat_k_ci",
    "num_tasks",
    "num_trials",
    "avg_reward",
    "tasks",
    "termination_reasons",
    "reward_breakdown",
    "calls",
)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("merge")
    return mock_run(root / "a", trials=2, seed=11), mock_run(root / "b", trials=2, seed=22)


def union_results(first: Path, second: Path) -> dict[str, Any]:
    """The 4-trial results file holding both runs' trials, numbered per task as the merge promises."""
    a, b = results_json(first), results_json(second)
    next_trial: dict[str, int] = {}
    simulations = []
    for sim in [s for run in (a, b) for s in sorted(run["simulations"], key=lambda s: s["trial"])]:
        trial = next_trial.get(sim["task_id"], 0)
        next_trial[sim["task_id"]] = trial + 1
        simulations.append({**sim, "trial": trial, "id": f"{sim['task_id']}:{trial}"})
    order = [t["id"] for t in a["tasks"]]
    simulations.sort(key=lambda s: (order.index(s["task_id"]), s["trial"]))
    info = {**a["info"], "num_trials": 4, "trial_seeds": a["info"]["trial_seeds"] + b["info"]["trial_seeds"]}
    return {**a, "info": info, "simulations": simulations}


def test_two_2_trial_runs_report_as_the_4_trial_run(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    first, second = two_runs
    merged = report_json_many(first, second)

    union = union_results(first, second)
    # Expected from first principles: pass^k over the union of both runs' simulations.
    outcomes: dict[str, list[bool]] = {}
    for sim in union["simulations"]:
        outcomes.setdefault(sim["task_id"], []).append(abs(sim["reward_info"]["reward"] - 1.0) <= 1e-6)
    assert merged["num_tasks"] == len(outcomes) == 10 and merged["num_trials"] == 4
    for k in range(1, 5):
        expected = sum(comb(sum(o), k) / comb(len(o), k) for o in outcomes.values()) / len(outcomes)
        assert merged["pass_hat_k"][str(k)] == pytest.approx(expected, abs=1e-12)
    assert merged["pass_hat_k"]["4"] < merged["pass_hat_k"]["1"], "the slip model must make trials differ"

    # And the merged report equals the report of one results file holding the same 4 trials.
    (tmp_path / "union.json").write_text(json.dumps(union))
    four = report_json(tmp_path / "union.json")
    assert {k: merged[k] for k in SAME_KEYS} == {k: four[k] for k in SAME_KEYS}
    assert merged["grid"] == four["grid"]
    assert merged["sources"] == [str(first), str(second)]
    seeds = [cell["seed"] for cell in merged["grid"][0]["trials"]]
    assert seeds == results_json(first)["info"]["trial_seeds"] + results_json(second)["info"]["trial_seeds"]


def test_an_exact_duplicate_counts_once(two_runs: tuple[Path, Path]) -> None:
    first, _ = two_runs
    alone, doubled = report_json(first), report_json_many(first, first)
    assert {k: doubled[k] for k in SAME_KEYS} == {k: alone[k] for k in SAME_KEYS}


@pytest.mark.parametrize("change", ["reward", "messages"])
def test_a_conflicting_duplicate_is_refused(two_runs: tuple[Path, Path], tmp_path: Path, change: str) -> None:
    first, _ = two_runs
    data = results_json(first)
    sim = data["simulations"][3]
    if change == "reward":
        sim["reward_info"]["reward"] = 1.0 - sim["reward_info"]["reward"]
    else:
        sim["messages"][-1]["content"] = "something else was said"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    proc = invoke_cli("report", str(first), str(edited), "--json", check=False)
    assert proc.returncode != 0 and proc.stdout == ""
    message = proc.stderr
    assert sim["task_id"] in message and str(sim["seed"]) in message
    assert str(first) in message and str(edited) in message
    assert "Traceback" not in message


def test_replayed_baseline_plus_new_live_trials_make_one_8_trial_run(tmp_path: Path) -> None:
    cassette = str(tmp_path / "cassette")
    mock_run(tmp_path / "recorded", trials=4, seed=5, extra=("--cassette", cassette, "--record-mode", "record"))
    baseline = mock_run(
        tmp_path / "baseline", trials=4, seed=5, extra=("--cassette", cassette, "--record-mode", "replay")
    )
    fresh = mock_run(tmp_path / "fresh", trials=4, seed=6)
    report = report_json_many(baseline, fresh)
    assert report["num_trials"] == 8 and all(t["trials"] == 8 for t in report["tasks"])
    for row in report["grid"]:
        assert [c["trial"] for c in row["trials"]] == list(range(8))
        assert [c["source"] for c in row["trials"]] == ["replayed"] * 4 + ["live"] * 4
    assert report["calls"]["replayed"] > 0 and report["calls"]["live"] > 0
    assert len(report["pass_hat_k"]) == 8


def test_runs_of_different_domains_do_not_merge(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    first, _ = two_runs
    data = results_json(first)
    data["info"]["domain"] = "other"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data))
    proc = invoke_cli("report", str(first), str(other), check=False)
    assert proc.returncode != 0 and "different domains" in proc.stderr


def report_json_many(*runs: Path) -> dict[str, Any]:
    return json.loads(invoke_cli("report", *(str(r) for r in runs), "--json").stdout)
