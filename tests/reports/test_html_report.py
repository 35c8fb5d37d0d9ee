"""The HTML report as text: self-contained, escaped, with charts, grid links and the header facts."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

from conftest import REPO_ROOT, invoke_cli
from report_runs import mock_run, results_json, tiny_results

from tauproxy.data_model.call import CallRecord
from tauproxy.data_model.message import Message, ToolCall
from tauproxy.data_model.result import Results
from tauproxy.reports.html import render_html
from tauproxy.reports.metrics import is_success
from tauproxy.reports.summary import summarize

CHART_IDS = ("chart-pass-hat-k", "chart-pass-hat-k-band", "chart-pass-hat-k-line", "chart-cost-by-role")
DEMO_PRICES = REPO_ROOT / "cassettes" / "demo-prices.json"
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
    run_dir = mock_run(tmp_path / "run", trials=2, seed=3, extra=("--prices", str(DEMO_PRICES)))
    page_path = tmp_path / "report.html"
    invoke_cli("report", str(run_dir), "--html", str(page_path))
    page = page_path.read_text()
    for svg_id in (*CHART_IDS, "chart-cost-by-model"):
        assert f'id="{svg_id}"' in page, svg_id
    links = set(re.findall(r'href="#(trial-[^"]+)"', page))
    ids = set(re.findall(r'<section class="trajectory" id="(trial-[^"]+)"', page))
    simulations = results_json(run_dir)["simulations"]
    assert links == ids and len(ids) == len(simulations)
    assert {f"trial-{s['task_id']}-{s['trial']}" for s in simulations} == ids, "readable, stable anchors"
    assert page.count('<details class="trial">') == len(simulations)
    info = results_json(run_dir)["info"]
    facts = [
        "scripted/oracle?error_rate=0.3",
        "scripted/user",
        "scripted/judge",
        info["price_source"],
        info["tauproxy_version"],
        info["domain_sha256"],
        str(info["seed"]),
        str(info["trial_seeds"][1]),
    ]
    header = unescape(page.split("</header>")[0])
    for fact in facts:
        assert fact in header, fact


def test_each_trajectory_and_grid_row_says_its_outcome_for_the_filter(tmp_path: Path) -> None:
    run_dir = mock_run(tmp_path / "run", trials=3, seed=2)
    results = Results.model_validate(results_json(run_dir))
    page = page_of(results)
    outcomes = dict(re.findall(r'<section class="trajectory" id="(trial-[^"]+)" data-outcome="(\w+)"', page))
    expected = {f"trial-{s.task_id}-{s.trial}": "pass" if is_success(s) else "fail" for s in results.simulations}
    assert outcomes == expected and {"pass", "fail"} <= set(outcomes.values()), "the slip model passes and fails"
    rows = {task: outcome for outcome, task in re.findall(r'<tr data-outcome="(\w+)"><td>([^<]+)</td>', page)}
    for task in {s.task_id for s in results.simulations}:
        trials = [s for s in results.simulations if s.task_id == task]
        assert rows[task] == ("pass" if all(is_success(s) for s in trials) else "fail"), task
    controls = page.split('id="controls"')[0].rsplit("<div", 1)[1] + page.split('id="controls"')[1][:20]
    assert "hidden" in controls, "the controls need the script, so they start hidden"
    assert 'id="only-failures"' in page and 'id="search"' in page


def test_anchors_are_unique_and_safe_for_any_task_id() -> None:
    one = tiny_results(task_id="a b")
    two = tiny_results(task_id="a/b")
    merged = one.model_copy(update={"tasks": one.tasks + two.tasks, "simulations": one.simulations + two.simulations})
    page = page_of(merged)
    ids = re.findall(r'<section class="trajectory" id="([^"]+)"', page)
    assert len(ids) == 2 and len(set(ids)) == 2
    assert all(re.fullmatch(r"trial-[A-Za-z0-9_.-]+", anchor) for anchor in ids), ids
    assert set(re.findall(r'href="#(trial-[^"]+)"', page)) == set(ids)


def test_tool_results_are_pretty_printed_and_long_ones_fold() -> None:
    short = {"id": "t1", "done": False}
    long = {"items": [{"id": f"t{i}", "title": "ñ write"} for i in range(20)]}
    results = tiny_results()
    run = results.simulations[0]
    calls = [
        ToolCall(id="c1", name="get_task", arguments={"id": "t1"}),
        ToolCall(id="c2", name="list_tasks", arguments={}),
    ]
    run.messages = [
        Message(role="assistant", tool_calls=calls),
        Message(role="tool", tool_call_id="c1", content=json.dumps(short)),
        Message(role="tool", tool_call_id="c2", content=json.dumps(long)),
        Message(role="tool", tool_call_id="c2", content="plain words, not JSON {"),
    ]
    page = page_of(results)
    folds = re.findall(
        r'<details class="result"( open="")?><summary>([^<]*)</summary><pre class="result">(.*?)</pre>', page, re.S
    )
    assert len(folds) == 3
    (short_open, short_label, short_text), (long_open, long_label, long_text), (_, plain_label, plain) = folds
    assert short_open and not long_open, "short results open, long ones fold"
    assert short_label == "4 lines of JSON: {id, done}", short_label
    assert json.loads(unescape(short_text)) == short and unescape(short_text) == json.dumps(short, indent=2)
    assert json.loads(unescape(long_text)) == long and "ñ write" in unescape(long_text)
    assert long_label.startswith(f"{unescape(long_text).count(chr(10)) + 1} lines of JSON: {{items}}")
    assert "of JSON" not in plain_label and unescape(plain) == "plain words, not JSON {"


def test_free_runs_get_a_sentence_not_an_empty_cost_chart(tmp_path: Path) -> None:
    free = mock_run(tmp_path / "free", trials=1)
    page = page_of(Results.model_validate(results_json(free)))
    cost = page.split('id="cost"')[1].split('<section id="grid"')[0]
    assert "<svg" not in cost and "Every call cost $0" in cost
    assert "By model" in cost and "By task" in cost, "the tables stay: they count calls and tokens"
    priced = mock_run(tmp_path / "priced", trials=1, extra=("--prices", str(DEMO_PRICES)))
    page = page_of(Results.model_validate(results_json(priced)))
    cost = page.split('id="cost"')[1].split('<section id="grid"')[0]
    assert 'id="chart-cost-by-role"' in cost and "Every call cost $0" not in cost


def test_cost_by_model_and_task_list_every_one_most_expensive_first(tmp_path: Path) -> None:
    run_dir = mock_run(tmp_path / "run", trials=2, extra=("--prices", str(DEMO_PRICES)))
    results = Results.model_validate(results_json(run_dir))
    summary = summarize(results)
    page = render_html(summary, results)
    by_task = page.split('class="cost-by-task"')[1].split("</details>")[0]
    listed = re.findall(r"<tr><td>([^<]+)</td><td class=\"num\">\$([0-9.]+)</td>", by_task)
    assert [task for task, _ in listed] == sorted(
        summary.cost.by_task,
        key=lambda t: -(summary.cost.by_task[t].live.known_usd + summary.cost.by_task[t].replayed.known_usd),
    )
    assert all(abs(float(usd) - (summary.cost.by_task[task].live_usd or 0)) < 1e-4 for task, usd in listed)
    by_model = page.split("By model</h3>")[1].split("</table>")[0]
    assert {unescape(m) for m in re.findall(r"<tr><td>([^<]+)</td>", by_model)} == set(summary.cost.by_model)


def test_unknown_cost_reads_unknown() -> None:
    call = CallRecord(index=0, role="agent", model="m", key="k", sample_key="s", source="live", cost_usd=None)
    page = page_of(tiny_results(calls=[call]))
    cost = page.split('id="cost"')[1].split("</section>")[0]
    assert "unknown" in cost and "$0.0000" not in cost.split("saved")[0]
