"""The runs index as one self-contained page: a table of every run under a directory, newest first,
with a link to each run's report; a click on a header sorts by that column (again: the other way),
and a text box keeps the rows that contain its text. `?sort=KEY&order=desc&q=TEXT` in the URL sets
both, so a sorted or filtered view can be linked. Inline style and script only, under the report's
content policy: nothing is fetched. Without script the table is listed newest first.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from html import escape

from tauproxy.data_model.result import ModelInfo
from tauproxy.reports.html_assets import CSP, STYLE
from tauproxy.reports.markup import element, money
from tauproxy.reports.runs_index import IndexedRun, RunsIndex


@dataclass(frozen=True)
class Column:
    """One column: its URL key, its header, the cell's markup, and the value it sorts by ("" for
    unknown, which sorts last either way)."""

    key: str
    title: str
    numeric: bool
    show: Callable[[IndexedRun], str]
    sort: Callable[[IndexedRun], str]


def _pass(run: IndexedRun, k: int) -> str:
    value = run.summary.pass_hat_k.get(k)
    if value is None:
        return "-"
    interval = run.summary.pass_hat_k_ci.get(k)
    ci = element("span", " ({:.3f} – {:.3f})".format(*interval), class_="ci") if interval else ""
    return element("span", f"{value:.3f}") + ci


def _pass_sort(run: IndexedRun, k: int) -> str:
    value = run.summary.pass_hat_k.get(k)
    return "" if value is None else repr(value)


def _pass_k(run: IndexedRun) -> str:
    k = run.summary.num_trials
    return element("span", f"k={k} ", class_="k") + _pass(run, k) if k > 1 else "-"


def _model(model: ModelInfo) -> str:
    return element(
        "span", children=_breakable(model.llm), title=model.llm + (f" {model.llm_args}" if model.llm_args else "")
    )


def _breakable(text: str) -> str:
    """Text that may wrap after a `/`, `?` or `&` (model names, paths), never inside a word."""
    return re.sub(r"([/?&])", r"\1<wbr>", escape(text))


def _money_sort(value: float | None) -> str:
    return "" if value is None else repr(value)


def _date(run: IndexedRun) -> str:
    stamp = run.timestamp or ""
    return stamp[:16].replace("T", " ") if stamp else "unknown"


def _run(run: IndexedRun) -> str:
    """The link to its report, and what wrote it underneath (tauproxy, or τ²-bench for its files)."""
    notes = run.summary.notes
    said = f" · {len(notes)} note{'s' * (len(notes) > 1)} (hover)" if notes else ""
    by = element("span", run.summary.made_by + said, class_="by", title="\n".join(notes) or None)
    return element("a", children=_breakable(run.path), href=run.report) + by


COLUMNS = (
    Column("run", "run", False, lambda r: _run(r), lambda r: r.path),
    Column(
        "date",
        "date",
        False,
        lambda r: element("span", _date(r), title=r.timestamp or ""),
        lambda r: r.timestamp or "",
    ),
    Column("domain", "domain", False, lambda r: element("span", r.summary.domain), lambda r: r.summary.domain),
    Column("agent", "agent", False, lambda r: _model(r.summary.models.agent), lambda r: r.summary.models.agent.llm),
    Column("user", "user", False, lambda r: _model(r.summary.models.user), lambda r: r.summary.models.user.llm),
    Column("judge", "judge", False, lambda r: _model(r.summary.models.judge), lambda r: r.summary.models.judge.llm),
    Column(
        "trials",
        "tasks × trials",
        True,
        lambda r: element("span", f"{r.summary.num_tasks} × {r.summary.num_trials}"),
        lambda r: str(r.summary.num_tasks * r.summary.num_trials),
    ),
    Column("pass1", "pass^1", True, lambda r: _pass(r, 1), lambda r: _pass_sort(r, 1)),
    Column("passk", "pass^k", True, _pass_k, lambda r: _pass_sort(r, r.summary.num_trials)),
    Column(
        "live",
        "live",
        True,
        lambda r: element("span", money(r.summary.cost.live_usd)),
        lambda r: _money_sort(r.summary.cost.live_usd),
    ),
    Column(
        "saved",
        "saved",
        True,
        lambda r: element("span", money(r.summary.cost.replayed_usd)),
        lambda r: _money_sort(r.summary.cost.replayed_usd),
    ),
)


def render_runs_index(index: RunsIndex) -> str:
    runs = sorted(index.runs, key=lambda run: run.timestamp or "", reverse=True)
    head = element(
        "tr",
        children="".join(
            element(
                "th",
                children=element("button", column.title, type="button"),
                data_key=column.key,
                data_type="number" if column.numeric else "text",
                aria_sort="descending" if column.key == "date" else "none",
            )
            for column in COLUMNS
        ),
    )
    rows = "".join(_row(run) for run in runs)
    listing = element(
        "table",
        id="runs",
        class_="runs",
        children=element("thead", children=head) + element("tbody", children=rows),
    )
    controls = element(
        "div",
        id="controls",
        hidden=True,
        children=element(
            "input", type="search", id="filter", placeholder="filter the runs", aria_label="filter the runs"
        )
        + element("span", id="shown"),
    )
    runs_word = "run" if len(runs) == 1 else "runs"
    intro = element(
        "p",
        f"{len(runs)} {runs_word} under {index.root}, newest first; dates in UTC. pass^k is at k = the run's "
        "trials, with 95% intervals (bootstrap over tasks); live is what the run spent, saved what its "
        "replayed calls would have cost. A run's name opens its report; click a header to sort, type to filter.",
    )
    body = "".join(
        [
            element("h1", f"tauproxy runs: {index.root}"),
            intro,
            controls,
            listing,
            _skipped(index),
            element("script", children=SCRIPT),
        ]
    )
    head_parts = "".join(
        [
            element("meta", charset="utf-8"),
            element("meta", http_equiv="Content-Security-Policy", content=CSP),
            element("meta", name="viewport", content="width=device-width, initial-scale=1"),
            element("title", f"tauproxy runs: {index.root}"),
            element("style", children=STYLE + INDEX_STYLE),
        ]
    )
    page = element("html", lang="en", children=element("head", children=head_parts) + element("body", children=body))
    return "<!DOCTYPE html>\n" + page + "\n"


def _row(run: IndexedRun) -> str:
    cells = "".join(
        element("td", children=column.show(run), class_="num" if column.numeric else None, data_sort=column.sort(run))
        for column in COLUMNS
    )
    return element("tr", children=cells)


def _skipped(index: RunsIndex) -> str:
    if not index.skipped:
        return ""
    items = "".join(
        element("li", children=element("code", s.path) + element("span", f": {s.reason}")) for s in index.skipped
    )
    title = element("summary", f"{len(index.skipped)} JSON files under {index.root} are not runs and were skipped")
    return element("details", class_="skipped", children=title + element("ul", children=items))


INDEX_STYLE = """
table.runs th{padding:0}table.runs th button{all:unset;cursor:pointer;display:block;padding:3px 8px;font-weight:700}
table.runs th[aria-sort=ascending] button::after{content:" ▲"}
table.runs th[aria-sort=descending] button::after{content:" ▼"}
table.runs td{vertical-align:top;overflow-wrap:break-word}
table.runs td.num,table.runs td:nth-child(2){white-space:nowrap}
table.runs .by{display:block;color:#495057;font-size:.8em}table.runs .ci{display:block;color:#495057;font-size:.85em}
table.runs .k{color:#495057}
#controls input[type=search]{width:24em;margin-left:0}#shown{margin-left:12px;color:#495057}
details.skipped{margin-top:16px;color:#495057}
"""
# Sorting and filtering; unknown values (an empty data-sort) stay last in either order.
SCRIPT = """
(function () {
  var table = document.getElementById("runs");
  var body = table.tBodies[0];
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var rows = Array.prototype.slice.call(body.rows);
  var box = document.getElementById("filter");
  var shown = document.getElementById("shown");
  var params = new URLSearchParams(window.location.search);
  function sortBy(column, descending) {
    var index = headers.indexOf(column);
    var numeric = column.getAttribute("data-type") === "number";
    var sorted = rows.slice().sort(function (a, b) {
      var x = a.cells[index].getAttribute("data-sort"), y = b.cells[index].getAttribute("data-sort");
      if (x === "" || y === "") { return (x === "" ? 1 : 0) - (y === "" ? 1 : 0); }
      var order = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
      return descending ? -order : order;
    });
    sorted.forEach(function (row) { body.appendChild(row); });
    headers.forEach(function (header) {
      header.setAttribute("aria-sort", header === column ? (descending ? "descending" : "ascending") : "none");
    });
  }
  function filter() {
    var query = box.value.trim().toLowerCase();
    var count = 0;
    rows.forEach(function (row) {
      var keep = !query || row.textContent.toLowerCase().indexOf(query) !== -1;
      row.hidden = !keep;
      if (keep) { count += 1; }
    });
    shown.textContent = query ? count + " of " + rows.length + " runs shown" : "";
  }
  headers.forEach(function (header) {
    header.querySelector("button").addEventListener("click", function () {
      sortBy(header, header.getAttribute("aria-sort") === "ascending");
    });
  });
  box.addEventListener("input", filter);
  var wanted = headers.filter(function (header) { return header.getAttribute("data-key") === params.get("sort"); })[0];
  if (wanted) { sortBy(wanted, params.get("order") === "desc"); }
  box.value = params.get("q") || "";
  document.getElementById("controls").hidden = false;
  filter();
})();
"""
