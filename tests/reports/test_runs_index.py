"""`tauproxy view DIR --html OUT`: one page listing every run under DIR (ours and τ²-bench's files),
each linked to its report written beside the page; files that are not runs are skipped and said."""

from __future__ import annotations

import json
import re
import shutil
from html import unescape
from pathlib import Path

import pytest
from conftest import invoke_cli
from report_runs import mock_run

from tauproxy.reports.html_runs_index import COLUMNS


def write_tau2_export(run_dir: Path, dest: Path) -> Path:
    """Our run in τ²-bench's simulations-file shape (`report --format tau2`): a τ² file for the index."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(invoke_cli("report", str(run_dir), "--format", "tau2").stdout)
    return dest


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index") / "runs"
    base = mock_run(root / "base", trials=2, agent="scripted/oracle")
    mock_run(root / "nested" / "deeper" / "slips", trials=2, agent="scripted/oracle?error_rate=0.9")
    write_tau2_export(base, root / "tau2" / "base_export.json")
    cut = root / "cut_short"
    shutil.copytree(base, cut)
    (cut / "results.json").unlink()  # what a killed run leaves: run.json, tasks.json, simulations.jsonl
    (root / "tau2" / "base_export_results.json").write_text(json.dumps({"metrics": {"pass_at_k": {"1": 1.0}}}))
    (root / "nested" / "package.json").write_text(json.dumps({"name": "not a run"}))
    (root / "broken.json").write_text("{not json")
    (root / "cassette").mkdir()  # a cassette beside the runs: not searched, not noted
    (root / "cassette" / "calls.jsonl").write_text("")
    (root / "cassette" / "manifest.json").write_text("{}")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "ignored.json").write_text("{}")
    return root


def rows_of(page: str) -> list[dict[str, str]]:
    """Each table row as column key -> the cell's sort value, in page order."""
    body = page.split("<tbody>")[1].split("</tbody>")[0]
    keys = [column.key for column in COLUMNS]
    return [
        dict(zip(keys, (unescape(v) for v in re.findall(r'data-sort="([^"]*)"', row)), strict=True))
        for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ]


def test_index_lists_every_run_with_a_link_to_its_report(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "site" / "index.html"
    out.parent.mkdir()
    result = invoke_cli("view", str(tree), "--html", str(out))
    page = out.read_text()
    rows = rows_of(page)
    assert sorted(row["run"] for row in rows) == ["base", "cut_short", "nested/deeper/slips", "tau2/base_export.json"]
    by_run = {row["run"]: row for row in rows}
    assert by_run["base"]["agent"] == "scripted/oracle" and by_run["base"]["pass1"] == "1.0"
    assert by_run["base"]["trials"] == "20" and by_run["base"]["domain"] == "mock"
    slips = json.loads(invoke_cli("report", str(tree / "nested" / "deeper" / "slips"), "--json").stdout)
    assert float(by_run["nested/deeper/slips"]["pass1"]) == slips["pass_hat_k"]["1"] < 1.0
    assert by_run["nested/deeper/slips"]["passk"] == repr(slips["pass_hat_k"]["2"])
    low, high = slips["pass_hat_k_ci"]["1"]
    assert f"({low:.3f} – {high:.3f})" in page  # the interval is shown
    # τ² files keep no costs: unknown, sorted last, never $0.
    assert by_run["tau2/base_export.json"]["live"] == ""
    # Each run links to its report, written beside the index, a full report of that run.
    links = re.findall(r'<a href="(index_files/[^"]+\.html)">', page)
    assert len(links) == 4
    assert "1 note (hover)" in page and "the run did not finish" in page  # the cut-short run says so
    for link in links:
        assert "<title>tauproxy report: mock</title>" in (out.parent / link).read_text()
    assert (out.parent / "index_files" / "nested__deeper__slips.html").exists()
    # Files that are not runs are listed with why, and said on stderr; hidden directories are not searched.
    for name, reason in [
        ("broken.json", "not JSON"),
        ("nested/package.json", "not a results file"),
        ("tau2/base_export_results.json", "metrics file"),
    ]:
        assert re.search(rf"<code>{re.escape(name)}</code><span>: [^<]*{reason}", page), name
        assert name in result.stderr
    assert "ignored.json" not in page and "4 runs" in result.stderr
    assert "manifest.json" not in page + result.stderr
    assert 'src="http' not in page and 'href="http' not in page


def test_index_rows_are_newest_first(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "index.html"
    invoke_cli("view", str(tree), "--html", str(out))
    dates = [row["date"] for row in rows_of(out.read_text())]
    assert dates == sorted(dates, reverse=True) and all(dates)


def test_view_of_a_run_with_html_writes_its_report(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "one.html"
    result = invoke_cli("view", str(tree / "base"), "--html", str(out))
    assert "<title>tauproxy report: mock</title>" in out.read_text() and str(out) in result.stderr
    # Without --html a run is still read as before: one trajectory.
    assert "task " in invoke_cli("view", str(tree / "base"), env={"COLUMNS": "200"}).stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("{tree}",), "not a run (no results.json); to list the runs under it, add --html OUT"),
        (("{tree}/nope", "--html", "{tmp}/x.html"), "no such"),
        (("{empty}", "--html", "{tmp}/x.html"), "no runs under it"),
        (("{tree}", "--html", "{tmp}/x.html", "--task", "t"), "--html writes a whole page"),
        (("{tree}", "--html", "{tmp}/x.html", "--run-log", "{tmp}/log.jsonl"), "--run-log joins onto one run"),
        (("{tree}", "--html", "{tmp}/missing/dir/x.html"), "cannot write"),
    ],
)
def test_bad_inputs_are_one_line_and_exit_2(tree: Path, tmp_path: Path, args: tuple[str, ...], said: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.json").write_text("[]")
    filled = [arg.format(tree=tree, tmp=tmp_path, empty=empty) for arg in args]
    result = invoke_cli("view", *filled, check=False)
    assert result.returncode == 2, result.stderr
    assert said in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
