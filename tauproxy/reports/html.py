"""The HTML report: one self-contained file (inline CSS, inline SVG, one tiny inline script).

A Content-Security-Policy forbids every network load, so the page works offline and a stray
external reference shows up as a console error instead of a silent fetch. Sections: header
(who played which role, prices, versions, domain hash, seeds), scores with the pass^k chart,
terminations and reward bases, cost by role (with its chart, left out when every amount is $0), by
model and by task, the per-task grid, and one collapsible section per trajectory that the grid cells
link to (`#trial-<task>-<trial>` opens it): its task and which criteria held, the agent's prompt, the
conversation, and each model call with its raw request and response from the run's cassette
(html_trajectory.py, html_task.py, recorded_calls.py; the bodies sit once in the page's data block,
html_data.py). The script filters to failures and searches text across
the trajectories; `?only=failures&q=TEXT` in the URL sets both. With a side-by-side comparison (`report A
--against B`, or runs of different agents), a comparison section follows the header: each run's
scores, and the paired differences with their intervals and the exact test.
"""

from __future__ import annotations

import json
import re

from tauproxy.data_model.result import ModelInfo, Results, SimulationRun
from tauproxy.data_model.task import Task
from tauproxy.reports.compare import SideBySide
from tauproxy.reports.costs import CostSplit, Tally
from tauproxy.reports.grid import GridCell
from tauproxy.reports.html_assets import CSP, SCRIPT, STYLE
from tauproxy.reports.html_comparison import comparison_section
from tauproxy.reports.html_data import PageData
from tauproxy.reports.html_trajectory import CHECK, TrialSources, trajectory_section
from tauproxy.reports.markup import cell, element, money, row, section, table
from tauproxy.reports.recorded_calls import RecordedCalls, read_recorded_calls
from tauproxy.reports.summary import ReportSummary
from tauproxy.reports.svg import CostGroup, cost_chart, pass_hat_k_chart

_SOURCE_MARK = {"live": "", "replayed": "r", "mixed": "m", "unknown": "?"}


def render_html(
    summary: ReportSummary,
    results: Results,
    comparison: SideBySide | None = None,
    recorded: RecordedCalls | None = None,
) -> str:
    """The page. `recorded` holds the calls' raw bodies; by default they are read from the run's
    cassette (recorded_calls.py), and a page without them says why in each trial."""
    anchors = _anchors(summary)
    calls = read_recorded_calls(results) if recorded is None else recorded
    data = PageData()
    body = "".join(
        [
            _header(summary, results, comparison is not None, calls),
            comparison_section(comparison, anchors) if comparison is not None else "",
            _scores(summary),
            _outcomes(summary),
            _costs(summary),
            _grid(summary, anchors),
            _trajectories(results, anchors, TrialSources(_tasks(results), results.info.agent_info, calls, data)),
        ]
    )
    body += data.element() + element("script", children=SCRIPT)
    head = "".join(
        [
            element("meta", charset="utf-8"),
            element("meta", http_equiv="Content-Security-Policy", content=CSP),
            element("meta", name="viewport", content="width=device-width, initial-scale=1"),
            element("title", f"tauproxy report: {summary.domain}"),
            element("style", children=STYLE),
        ]
    )
    page = element("html", lang="en", children=element("head", children=head) + element("body", children=body))
    return "<!DOCTYPE html>\n" + page + "\n"


def _anchors(summary: ReportSummary) -> dict[tuple[str, int], str]:
    """(task, trial) -> element id, `trial-<task>-<trial>`: readable and stable, so a link to one
    trajectory can be shared. Characters an id or a URL fragment would trip on become `_`, and a
    clash (two task ids that differ only in those) gets a numbered suffix."""
    anchors: dict[tuple[str, int], str] = {}
    used: set[str] = set()
    for grid_row in summary.grid:
        for trial in grid_row.trials:
            if (grid_row.task_id, trial.trial) in anchors:
                continue
            base = f"trial-{_ANCHOR_UNSAFE.sub('_', grid_row.task_id)}-{trial.trial}"
            anchor, n = base, 1
            while anchor in used:
                anchor, n = f"{base}.{n}", n + 1
            used.add(anchor)
            anchors[(grid_row.task_id, trial.trial)] = anchor
    return anchors


_ANCHOR_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def _model(model: ModelInfo) -> str:
    args = model.llm_args
    return f"{model.llm}  {json.dumps(args, sort_keys=True)}" if args else model.llm


def _header(summary: ReportSummary, results: Results, compared: bool, calls: RecordedCalls) -> str:
    seeds = ", ".join(str(s) for s in summary.trial_seeds)
    facts = [
        *[(role, _model(model)) for role, model in summary.models.by_role()],
        ("price source", summary.price_source or "unknown"),
        ("made by", summary.made_by),
        ("domain", summary.domain),
        ("domain content sha256", summary.domain_sha256),
        ("seeds", f"run seed {summary.seed}; trial seeds {seeds}"),
        ("results written", results.timestamp or "unknown"),
        ("raw calls", calls.problem or f"from the cassette {calls.cassette} ({len(calls.by_sample_key)} calls found)"),
    ]
    if summary.sources:
        label = "merged from" if len(summary.sources) > 1 else "source"
        facts.append((label, ", ".join(summary.sources)))
    pairs = "".join(element("dt", k) + element("dd", v) for k, v in facts)
    meta = element("dl", class_="meta", children=pairs)
    notes = "".join(element("li", note) for note in summary.notes)
    names = ("comparison",) * compared + ("scores", "outcomes", "cost", "grid", "trajectories")
    links = [element("a", name, href=f"#{name}") for name in names]
    return element(
        "header",
        id="header",
        children="".join(
            [
                element("h1", f"tauproxy report: {summary.domain}"),
                meta,
                element("ul", class_="notes", children=notes) if notes else "",
                element("nav", children=" · ".join(links)),
                _controls(),
            ]
        ),
    )


def _controls() -> str:
    """Failures-only and search over the trajectories; shown by the page's script, which runs them."""
    box = element("label", children=element("input", type="checkbox", id="only-failures") + " failures only")
    search = element(
        "input", type="search", id="search", placeholder="search the trajectories", aria_label="search the trajectories"
    )
    return element("div", id="controls", hidden=True, children=box + search + element("span", id="match-count"))


def _scores(summary: ReportSummary) -> str:
    intervals = summary.pass_hat_k_ci
    rows = [
        row(
            cell(f"pass^{k}"),
            cell(f"{v:.3f}", number=True),
            cell("{:.3f} – {:.3f}".format(*intervals[k]) if k in intervals else "-", number=True),
        )
        for k, v in summary.pass_hat_k.items()
    ]
    chart = pass_hat_k_chart(dict(summary.pass_hat_k), dict(intervals))
    facts = (
        f"{summary.num_tasks} tasks × {summary.num_trials} trials; average reward "
        f"{summary.avg_reward:.3f}. Intervals: percentile bootstrap over tasks (2000 resamples)."
    )
    return section(
        "scores",
        "Scores",
        element("p", facts),
        table(["k", "estimate", "95% CI"], rows),
        element("figure", children=chart),
    )


def _outcomes(summary: ReportSummary) -> str:
    excluded = summary.excluded_reasons
    terminations = [
        row(
            cell(reason),
            cell(str(count), number=True),
            cell("excluded from pass^k" if reason in excluded else "counted"),
        )
        for reason, count in summary.termination_reasons.items()
    ]
    bases = [
        row(cell(basis.value), cell(f"{b.mean:.3f}", number=True), cell(str(b.runs), number=True))
        for basis, b in summary.reward_breakdown.items()
    ]
    return section(
        "outcomes",
        "Terminations and reward by basis",
        table(["termination", "runs", "pass^k"], terminations),
        table(["basis", "mean reward", "runs"], bases),
    )


def _costs(summary: ReportSummary) -> str:
    cost = summary.cost
    unattributed = cost.unattributed
    extra_roles = list(unattributed.by_role) if unattributed.simulations else []
    groups: list[CostGroup] = []
    rows: list[str] = []
    for role in dict.fromkeys([*cost.by_role, *extra_roles]):
        values: dict[str, float | None] = {}
        if role in cost.by_role:
            values["live"] = cost.by_role[role].live_usd
            values["saved"] = cost.by_role[role].replayed_usd
        if unattributed.simulations:
            values["source unknown"] = unattributed.by_role.get(role)
        groups.append(CostGroup(label=role, values=values))
        # Shared calls (this run's own answer to an identical sample) are in the table, not the chart.
        shown = {**values, "shared": cost.by_role[role].shared.usd} if role in cost.by_role else values
        rows.append(
            row(
                cell(role),
                *[
                    cell(money(shown[s]) if s in shown else "-", number=True)
                    for s in ("live", "saved", "shared", "source unknown")
                ],
            )
        )
    rows.append(
        row(
            cell("total"),
            cell(money(cost.live_usd), number=True),
            cell(money(cost.replayed_usd), number=True),
            cell(money(cost.shared.usd), number=True),
            cell("-", number=True),
        )
    )
    unknown = cost.unknown_price_calls
    note = element("p", f"{unknown} calls had no known price and are not in these sums.") if unknown else ""
    headers = ["role", "live (spent)", "replayed (saved)", "shared (saved)", "source unknown"]
    parts = [table(headers, rows), note, _chart_or_note(groups, "chart-cost-by-role")]
    if cost.by_model:
        parts += [element("h3", "By model"), _split_table("model", cost.by_model)]
        by_model = [
            CostGroup(label=name, values={"live": split.live_usd, "saved": split.replayed_usd})
            for name, split in cost.by_model.items()
        ]
        if len(by_model) > 1 and any(v != 0 for group in by_model for v in group.values.values()):
            parts.append(_chart_or_note(by_model, "chart-cost-by-model"))  # nothing to draw: the note above said why
    if cost.by_task:
        # Most expensive first; a long list folds, since a 60-task table would push the grid far down.
        title = element("summary", f"By task ({len(cost.by_task)} tasks, most expensive first)")
        tasks = _split_table("task", cost.by_task)
        parts.append(
            element("details", class_="cost-by-task", open=len(cost.by_task) <= _OPEN_TASK_ROWS, children=title + tasks)
        )
    return section("cost", "Cost", *parts)


_OPEN_TASK_ROWS = 10


def _chart_or_note(groups: list[CostGroup], svg_id: str) -> str:
    """The bars, unless there is nothing to draw: when every amount is $0 (free models) a chart of
    empty bars says less than one sentence. Unknown amounts are drawn (as "unknown"), never hidden."""
    values = [v for group in groups for v in group.values.values()]
    if not values:
        return element("p", "No model calls recorded, so no chart.")
    if all(v == 0 for v in values):
        return element(
            "p",
            "Every call cost $0 (scripted and local models are free by declaration), so there is no chart.",
            class_="zero-cost",
        )
    return element("figure", children=cost_chart(groups, svg_id))


def _split_table(first: str, splits: dict[str, CostSplit]) -> str:
    ordered = sorted(splits.items(), key=lambda item: -(item[1].live.known_usd + item[1].replayed.known_usd))
    rows = [
        row(
            cell(name),
            cell(_tally_money(split.live), number=True),
            cell(_tally_money(split.replayed), number=True),
            cell(_tally_money(split.shared), number=True),
            cell(f"{split.live.calls}/{split.replayed.calls}/{split.shared.calls}", number=True),
            cell(f"{split.live.prompt_tokens:,}/{split.live.completion_tokens:,}", number=True),
            cell(f"{split.replayed.prompt_tokens:,}/{split.replayed.completion_tokens:,}", number=True),
        )
        for name, split in ordered
    ]
    headers = [
        first,
        "live (spent)",
        "replayed (saved)",
        "shared (saved)",
        "calls live/replayed/shared",
        "tokens in/out live",
        "tokens in/out replayed",
    ]
    return table(headers, rows)


def _tally_money(tally: Tally) -> str:
    """Unknown as soon as one call has no price, with the priced part shown."""
    if tally.unknown_price_calls:
        known = f"${tally.known_usd:.4f} + " if tally.known_usd else ""
        return f"unknown ({known}{tally.unknown_price_calls} unpriced)"
    return money(tally.usd)


def _grid(summary: ReportSummary, anchors: dict[tuple[str, int], str]) -> str:
    width = max((len(r.trials) for r in summary.grid), default=0)
    rows = []
    for grid_row in summary.grid:
        cells = [_grid_cell(grid_row.task_id, trial, anchors) for trial in grid_row.trials]
        passed = sum(1 for trial in grid_row.trials if trial.success)
        outcome = "pass" if passed == len(grid_row.trials) else "fail"
        rows.append(
            element(
                "tr",
                data_outcome=outcome,
                children=cell(grid_row.task_id)
                + cell(f"{passed}/{len(grid_row.trials)}", number=True)
                + "".join(cells),
            )
        )
    legend = "✓ pass, ✗ fail, ! excluded (infrastructure error); r replayed, m mixed, ? source unknown, no mark: live."
    return section(
        "grid",
        "Trials per task",
        element("p", legend),
        table(["task", "pass", *[str(i) for i in range(width)]], rows, class_="grid"),
    )


def _grid_cell(task_id: str, trial: GridCell, anchors: dict[tuple[str, int], str]) -> str:
    state = "excluded" if trial.excluded else ("pass" if trial.success else "fail")
    mark = "!" if trial.excluded else CHECK[trial.success]
    marker = _SOURCE_MARK.get(trial.source, "?")
    tip = (
        f"trial {trial.trial} · seed {trial.seed} · reward {trial.reward} · "
        f"{trial.termination_reason} · calls {trial.source}"
    )
    link = element(
        "a",
        mark,
        children=element("sup", marker) if marker else "",
        href="#" + anchors[(task_id, trial.trial)],
        title=tip,
    )
    return element("td", children=link, class_=f"cell {state} src-{trial.source}")


def _tasks(results: Results) -> dict[str, Task]:
    return {task.id: task for task in results.tasks}


def _trajectories(results: Results, anchors: dict[tuple[str, int], str], sources: TrialSources) -> str:
    runs: dict[tuple[str, int], SimulationRun] = {}
    for run in results.simulations:
        runs.setdefault((run.task_id, run.trial), run)
    pages = [trajectory_section(runs[key], anchor, sources) for key, anchor in anchors.items() if key in runs]
    return section("trajectories", "Trajectories", *pages)
