"""`report A --against B` and `report` of runs of different agents: side by side, never one merged score."""

from __future__ import annotations

import json
import re
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


def test_comparison_page_lists_the_flips_diff_finds_and_links_both_trajectories(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    html = tmp_path / "flips.html"
    data = report_json(str(runs["slips"]), "--against", str(runs["base"]), "--html", str(html))
    diff = json.loads(invoke_cli("diff", str(runs["base"]), str(runs["slips"]), "--json").stdout)
    flips = data["comparisons"][0]["flips"]
    assert flips["flips"] == diff["flips"] and flips["paired"] == diff["paired"]  # the diff's own finding
    assert diff["flips"] and all(flip["direction"] == "regressed" for flip in diff["flips"])
    page = html.read_text()
    rows = re.findall(r'<tr data-direction="(\w+)">(.*?)</tr>', page, re.S)
    assert len(rows) == len(diff["flips"])
    ids = set(re.findall(r' id="([^"]+)"', page))
    for (direction, row_html), flip in zip(rows, diff["flips"], strict=True):
        assert direction == flip["direction"] and f"<td>{flip['task_id']}</td>" in row_html
        assert f"<td>{flip['divergence']['cause']}</td>" in row_html
        links = dict(re.findall(r'<a href="#([^"]+)">(baseline|candidate)</a>', row_html))
        assert sorted(links.values()) == ["baseline", "candidate"] and set(links) <= ids
        by_side = {side: anchor for anchor, side in links.items()}
        assert by_side["candidate"] == f"trial-{flip['task_id']}-{flip['trial_b']}"  # the page's own trajectory
        assert by_side["baseline"] == f"baseline-trial-{flip['task_id']}-{flip['trial_a']}"
    # Only the baseline's flipped trials are added to the page, each once.
    baseline_sections = re.findall(r'<section class="trajectory" id="baseline-trial-', page)
    assert len(baseline_sections) == len({(f["task_id"], f["trial_a"]) for f in diff["flips"]})
    text = invoke_cli("report", str(runs["slips"]), "--against", str(runs["base"])).stdout
    assert f"{len(diff['flips'])} of {diff['paired']} paired trials flipped" in text


def test_comparison_page_shows_request_diffs_from_the_cassette_the_runs_name(tmp_path: Path) -> None:
    cassette = tmp_path / "cassette"
    base = mock_run(tmp_path / "base", trials=1, agent="scripted/oracle", extra=("--cassette", str(cassette)))
    slips = mock_run(
        tmp_path / "slips", trials=1, agent="scripted/oracle?error_rate=0.9", extra=("--cassette", str(cassette))
    )
    html = tmp_path / "cmp.html"
    invoke_cli("report", str(slips), "--against", str(base), "--html", str(html))
    page = html.read_text()
    assert "<summary>request diff (cassette)</summary>" in page
    # Without the cassette (moved away) the comparison still stands, said on stderr.
    cassette.rename(tmp_path / "gone")
    result = invoke_cli("report", str(slips), "--against", str(base), "--html", str(html))
    assert "no cassette at" in result.stderr and "request diff (cassette)" not in html.read_text()


def test_every_link_of_a_page_comparing_three_agents_has_its_target(runs: dict[str, Path], tmp_path: Path) -> None:
    third = mock_run(tmp_path / "third", trials=2, agent="scripted/oracle?error_rate=0.5")
    html = tmp_path / "three.html"
    invoke_cli("report", str(runs["base"]), str(runs["slips"]), str(third), "--html", str(html))
    page = html.read_text()
    ids = set(re.findall(r' id="([^"]+)"', page))
    links = re.findall(r'href="#([^"]+)"', page)
    assert [link for link in links if link not in ids] == []
    # The middle run is no baseline and not the page's own: its flipped trials are added under their own names.
    assert 'href="#candidate1-trial-' in page and 'href="#baseline-trial-' in page
