"""The runs index and the comparison section in headless Chromium: the index sorts and filters from
its URL after its script ran, and a comparison page opened at either trajectory link of a flip shows
that trajectory open (and paints it: a screenshot at an anchor is not blank)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import invoke_cli
from report_runs import mock_run
from test_html_chromium import dom_of, needs_chromium, screenshot

from tauproxy.reports.html_runs_index import COLUMNS

pytestmark = pytest.mark.slow
__all__ = ["needs_chromium"]  # the autouse fixture that skips where Chromium is absent


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two runs (one slipping, so trials flip), their comparison page and the index of both."""
    tmp = tmp_path_factory.mktemp("chromium-pages")
    root = tmp / "runs"
    base = mock_run(root / "base", trials=2, agent="scripted/oracle")
    slips = mock_run(root / "team" / "slips", trials=2, agent="scripted/oracle?error_rate=0.5")
    comparison = tmp / "comparison.html"
    invoke_cli("report", str(slips), "--against", str(base), "--html", str(comparison))
    index = tmp / "site" / "index.html"
    index.parent.mkdir()
    invoke_cli("view", str(root), "--html", str(index))
    diff = tmp / "diff.json"
    diff.write_text(invoke_cli("diff", str(base), str(slips), "--json").stdout)
    return {"comparison": comparison, "index": index, "diff": diff}


def index_rows(dom: str) -> list[tuple[dict[str, str], bool]]:
    """The index's rows in DOM order after its script ran: column key -> sort value, and hidden or not."""
    body = dom.split("<tbody>")[1].split("</tbody>")[0]
    keys = [column.key for column in COLUMNS]
    return [
        (dict(zip(keys, re.findall(r'data-sort="([^"]*)"', cells), strict=True)), bool(hidden))
        for hidden, cells in re.findall(r"<tr( hidden=\"\")?>(.*?)</tr>", body, re.S)
    ]


def test_index_sorts_by_the_column_the_url_names(pages: dict[str, Path], tmp_path: Path) -> None:
    url = pages["index"].as_uri()
    dom = dom_of(tmp_path, f"{url}?sort=pass1&order=desc")
    scores = [float(row["pass1"]) for row, _ in index_rows(dom)]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    assert re.search(r'<th data-key="pass1" data-type="number" aria-sort="descending">', dom)
    ascending = [float(row["pass1"]) for row, _ in index_rows(dom_of(tmp_path, f"{url}?sort=pass1"))]
    assert ascending == sorted(ascending)
    names = [row["run"] for row, _ in index_rows(dom_of(tmp_path, f"{url}?sort=run&order=desc"))]
    assert names == ["team/slips", "base"]
    screenshot(tmp_path, "index", f"{url}?sort=pass1&order=desc")


def test_index_filters_by_the_text_in_the_url(pages: dict[str, Path], tmp_path: Path) -> None:
    dom = dom_of(tmp_path, f"{pages['index'].as_uri()}?q=ERROR_RATE")
    shown = [row["run"] for row, hidden in index_rows(dom) if not hidden]
    assert shown == ["team/slips"] and "1 of 2 runs shown" in dom


def test_index_header_clicks_sort_and_typing_filters(pages: dict[str, Path], tmp_path: Path) -> None:
    """What a reader does, played by a script appended to a copy of the page (the page's policy allows
    inline script): one click on pass^1 sorts it ascending, a second descending; typing filters."""
    clicks = """<script>
      var button = document.querySelector('th[data-key="pass1"] button');
      button.click();
      document.body.setAttribute("data-first", Array.prototype.map.call(
        document.querySelectorAll("#runs tbody tr"), function (row) { return row.cells[0].getAttribute("data-sort"); }
      ).join(","));
      button.click();
      var box = document.getElementById("filter");
      box.value = "Oracle?";
      box.dispatchEvent(new Event("input"));
    </script>"""
    played = tmp_path / "played.html"
    played.write_text(pages["index"].read_text().replace("</body>", clicks + "</body>"))
    dom = dom_of(tmp_path, played.as_uri())
    assert 'data-first="team/slips,base"' in dom, "first click: ascending pass^1, the slipping run first"
    rows = index_rows(dom)
    assert [row["run"] for row, _ in rows] == ["base", "team/slips"], "second click: descending"
    assert [row["run"] for row, hidden in rows if not hidden] == ["team/slips"] and "1 of 2 runs shown" in dom


def test_comparison_links_open_both_trajectories_of_a_flip(pages: dict[str, Path], tmp_path: Path) -> None:
    flip = json.loads(pages["diff"].read_text())["flips"][0]
    url = pages["comparison"].as_uri()
    for anchor in (f"baseline-trial-{flip['task_id']}-{flip['trial_a']}", f"trial-{flip['task_id']}-{flip['trial_b']}"):
        assert f'href="#{anchor}"' in pages["comparison"].read_text()
        dom = dom_of(tmp_path, f"{url}#{anchor}")
        assert dom.count('<details class="trial" open') == 1, anchor
        assert '<details class="trial" open' in dom.split(f'id="{anchor}"')[1][:300], anchor
        # Opened at the anchor the page is painted there, not blank (the screenshot helper checks).
        screenshot(tmp_path, f"at-{anchor}", f"{url}#{anchor}")
    screenshot(tmp_path, "comparison", f"{url}#comparison")
