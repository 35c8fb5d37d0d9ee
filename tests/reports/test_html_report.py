"""The HTML report as text: self-contained, escaped, with charts, grid links and the header facts."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

from conftest import run_cli
from report_runs import mock_run, results_json, tiny_results

from tauproxy.data_model.call import CallRecord
from tauproxy.data_model.result import Results
from tauproxy.reports.html import render_html
from tauproxy.reports.summary import summarize

CHART_IDS = ("chart-pass-hat-k", "chart-pass-hat-k-band", "chart-pass-hat-k-line", "chart-cost-by-role")
HOSTILE = '<script>alert("x")</script> & <img src=x onerror=alert(1)>'


def page_of(results: Results) -> str:
    return render_html(summarize(results), results)


def test_every_text_is_escaped() -> None:
    page = page_of(tiny_results(content=HOSTILE, task_id='t"<b>'))
    assert HOSTILE not in page and "<img" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;img" in page
    assert page.count("<script>") == 1, "only the page's own script"
    assert 't"<b>' not in page and "t&quot;&lt;b&gt;" in page


def test_page_is_self_contained() -> None:
    page = page_of(tiny_results())
    assert "Content-Security-Policy" in page and "default-src 'none'" in unescape(page)
    for needle in ("<link", " src=", "url(", "@import", "<iframe"):
        assert needle not in page, needle
    # The only URL is the SVG namespace, which is a name and is never fetched.
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {"http://www.w3.org/2000/svg"}


def test_charts_grid_links_and_header(tmp_path: Path) -> None:
    run_dir = mock_run(tmp_path / "run", trials=2, seed=3)
    page_path = tmp_path / "report.html"
    run_cli("report", str(run_dir), "--html", str(page_path))
    page = page_path.read_text()
    for svg_id in CHART_IDS:
        assert f'id="{svg_id}"' in page
    links = set(re.findall(r'href="#(traj-\d+)"', page))
    ids = set(re.findall(r'<section class="trajectory" id="(traj-\d+)"', page))
    simulations = results_json(run_dir)["simulations"]
    assert links == ids and len(ids) == len(simulations)
    assert page.count("<details>") == len(simulations)
    info = results_json(run_dir)["info"]
    facts = ["scripted/oracle?error_rate=0.3", "scripted/user", "scripted/judge", info["price_source"],
             info["tauproxy_version"], info["domain_sha256"], str(info["seed"]), str(info["trial_seeds"][1])]
    header = unescape(page.split("</header>")[0])
    for fact in facts:
        assert fact in header, fact


def test_unknown_cost_reads_unknown() -> None:
    call = CallRecord(index=0, role="agent", model="m", key="k", sample_key="s", source="live", cost_usd=None)
    page = page_of(tiny_results(calls=[call]))
    cost = page.split('id="cost"')[1].split("</section>")[0]
    assert "unknown" in cost and "$0.0000" not in cost.split("saved")[0]
