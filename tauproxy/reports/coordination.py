"""Dual control vs solo on the same tasks: how much of the failure is reasoning, how much coordination.

In a solo run the agent holds the user's device tools itself, so it fails only when it cannot work out
what to do (reasoning). In a dual-control run it must also get the user to do the device steps. So, per
task:

    reasoning_error    = 1 - solo pass rate
    coordination_error = max(0, solo pass rate - dual pass rate)

Totals are the means of the per-task figures over the tasks both runs have. Pass rates count trials
the way every other report does (`is_success`; infrastructure errors are left out).
"""

from __future__ import annotations

from typing import Any

from tauproxy.data_model.result import Results
from tauproxy.reports.metrics import TaskCount, task_counts


def coordination_report(dual: Results, solo: Results) -> dict[str, Any]:
    """Per-task and total pass rates of a dual-control run and a solo run, and the errors they imply.

    Raises ValueError when the runs are of different domains or the run marked solo is not (or the
    dual one is), since the comparison would then mean nothing.
    """
    _check_pair(dual, solo)
    dual_rates = _rates(task_counts(dual.simulations, [t.id for t in dual.tasks]))
    solo_rates = _rates(task_counts(solo.simulations, [t.id for t in solo.tasks]))
    shared = [task_id for task_id in dual_rates if task_id in solo_rates]
    rows = [_task_row(task_id, dual_rates[task_id], solo_rates[task_id]) for task_id in shared]
    return {
        "domain": dual.info.domain,
        "num_tasks": len(rows),
        "tasks": rows,
        "totals": _totals(rows),
        "only_in_dual": sorted(set(dual_rates) - set(solo_rates)),
        "only_in_solo": sorted(set(solo_rates) - set(dual_rates)),
        "models": {
            "dual_agent": dual.info.agent_info.llm,
            "dual_user": dual.info.user_info.llm,
            "solo_agent": solo.info.agent_info.llm,
        },
    }


def _check_pair(dual: Results, solo: Results) -> None:
    if dual.info.domain != solo.info.domain:
        raise ValueError(f"the runs are of different domains: {dual.info.domain!r} and {solo.info.domain!r}")
    if dual.info.solo:
        raise ValueError("the dual-control results come from a solo run (--solo); pass them second")
    if not solo.info.solo:
        raise ValueError("the solo results do not come from a solo run; run them with --solo")


def _rates(counts: list[TaskCount]) -> dict[str, tuple[float, int]]:
    return {c.task_id: (c.successes / c.trials, c.trials) for c in counts if c.trials}


def _task_row(task_id: str, dual: tuple[float, int], solo: tuple[float, int]) -> dict[str, Any]:
    dual_rate, solo_rate = dual[0], solo[0]
    reasoning = 1.0 - solo_rate
    coordination = max(0.0, solo_rate - dual_rate)
    return {
        "task_id": task_id,
        "dual_trials": dual[1],
        "solo_trials": solo[1],
        "dual_pass_rate": dual_rate,
        "solo_pass_rate": solo_rate,
        "reasoning_error": reasoning,
        "coordination_error": coordination,
        "attribution": _attribution(dual_rate, reasoning, coordination),
    }


def _attribution(dual_rate: float, reasoning: float, coordination: float) -> str:
    """Which kind of error explains the dual-control failures of one task."""
    if dual_rate >= 1.0:
        return "none"
    if coordination > 0 and reasoning > 0:
        return "both"
    return "coordination" if coordination > 0 else "reasoning"


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("dual_pass_rate", "solo_pass_rate", "reasoning_error", "coordination_error")
    if not rows:
        return {key: float("nan") for key in keys} | {"attribution_counts": {}}
    totals: dict[str, Any] = {key: sum(row[key] for row in rows) / len(rows) for key in keys}
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["attribution"]] = counts.get(row["attribution"], 0) + 1
    totals["attribution_counts"] = dict(sorted(counts.items()))
    return totals


def render_coordination(report: dict[str, Any]) -> str:
    """The report as plain text: one line per task, then the totals."""
    width = max([len("task"), *(len(row["task_id"]) for row in report["tasks"])])
    header = f"{'task':<{width}}  {'dual':>6}  {'solo':>6}  {'reason':>6}  {'coord':>6}  attribution"
    title = f"Coordination report: {report['domain']}, {report['num_tasks']} tasks"
    lines = [title, header, "-" * len(header)]
    for row in report["tasks"]:
        lines.append(
            f"{row['task_id']:<{width}}  {row['dual_pass_rate']:>6.2f}  {row['solo_pass_rate']:>6.2f}  "
            f"{row['reasoning_error']:>6.2f}  {row['coordination_error']:>6.2f}  {row['attribution']}"
        )
    totals = report["totals"]
    lines.append("-" * len(header))
    lines.append(
        f"{'mean':<{width}}  {totals['dual_pass_rate']:>6.2f}  {totals['solo_pass_rate']:>6.2f}  "
        f"{totals['reasoning_error']:>6.2f}  {totals['coordination_error']:>6.2f}"
    )
    counts = totals.get("attribution_counts") or {}
    if counts:
        lines.append("failures by cause: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    for key, label in (("only_in_dual", "only in the dual run"), ("only_in_solo", "only in the solo run")):
        if report.get(key):
            lines.append(f"{label} (not compared): {', '.join(report[key])}")
    return "\n".join(lines)
