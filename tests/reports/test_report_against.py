"""`report A --against B` and `report` of runs of different agents: side by side, never one merged score."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli
from report_runs import mock_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("against")
    return {
        "base": mock_run(root / "base", trials=2, agent="scripted/oracle"),
        "slips": mock_run(root / "slips", trials=2, agent="scripted/oracle?error_rate=0.9"),
        "more_base": mock_run(root / "more_base", trials=2, seed=900, agent="scripted/oracle"),
    }


def report_json(*args: str) -> dict[str, Any]:
    return json.loads(invoke_cli("report", *args, "--json").stdout)


def test_report_against_json(runs: dict[str, Path], tmp_path: Path) -> None:
    html = tmp_path / "cmp.html"
    data = report_json(str(runs["slips"]), "--against", str(runs["base"]), "--html", str(html))
    assert [run["label"] for run in data["runs"]] == [str(runs["base"]), str(runs["slips"])]
    assert data["runs"][0]["agent"]["llm"] == "scripted/oracle"
    assert data["runs"][1]["summary"]["pass_hat_k"]["1"] < 1.0 == data["runs"][0]["summary"]["pass_hat_k"]["1"]
    (comparison,) = data["comparisons"]
    assert comparison["candidate"] == str(runs["slips"]) and comparison["baseline"] == str(runs["base"])
    paired = comparison["comparison"]
    pass_1 = paired["differences"]["pass^1"]
    assert pass_1["difference"] < 0 and pass_1["ci"][0] <= pass_1["difference"] <= pass_1["ci"][1]
    assert paired["tasks"] == 10 and paired["seed_paired_tasks"] == 10  # same --seed: same trial seeds
    assert 0.0 <= paired["test"]["p_value"] < 0.05
    page = html.read_text()
    assert 'id="comparison"' in page and "sign-flip" in page and 'href="#comparison"' in page
    assert 'src="http' not in page and 'href="http' not in page  # still self-contained


def test_report_of_two_agents_compares_instead_of_merging(runs: dict[str, Path]) -> None:
    data = report_json(str(runs["base"]), str(runs["slips"]))
    assert "pass_hat_k" not in data, "two agents must not be merged into one score"
    assert [run["agent"]["llm"] for run in data["runs"]] == ["scripted/oracle", "scripted/oracle?error_rate=0.9"]
    assert data["comparisons"][0]["comparison"]["differences"]["pass^1"]["difference"] < 0
    text = invoke_cli("report", str(runs["base"]), str(runs["slips"])).stdout
    assert "[baseline]" in text and "[candidate]" in text and "paired comparison" in text


def test_runs_of_one_agent_still_merge(runs: dict[str, Path]) -> None:
    data = report_json(str(runs["base"]), str(runs["more_base"]))
    assert data["num_trials"] == 4 and data["pass_hat_k"]["1"] == 1.0
    # Against a merged baseline of the same agent, side by side again.
    data = report_json(str(runs["slips"]), "--against", str(runs["base"]), "--against", str(runs["more_base"]))
    assert data["runs"][0]["summary"]["num_trials"] == 4
