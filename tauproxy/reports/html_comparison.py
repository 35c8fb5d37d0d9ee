"""The HTML report's comparison section (`report A --against B --html`, or runs of different agents):
each run's scores, and the paired differences with their intervals and the exact test.
"""

from __future__ import annotations

from tauproxy.reports.compare import SideBySide, agent_text
from tauproxy.reports.markup import cell, element, money, row, section, table
from tauproxy.reports.paired import INTERVAL_NAMES


def comparison_section(report: SideBySide) -> str:
    ks = sorted({k for run in report.runs for k in run.summary.pass_hat_k})
    runs = []
    for index, run in enumerate(report.runs):
        summary = run.summary
        scores = []
        for k in ks:
            value, interval = summary.pass_hat_k.get(k), summary.pass_hat_k_ci.get(k)
            text = "-" if value is None else f"{value:.3f}"
            if value is not None and interval is not None:
                text += " ({:.3f} – {:.3f})".format(*interval)
            scores.append(cell(text, number=True))
        runs.append(
            row(
                cell("baseline" if index == 0 else "candidate"),
                cell(run.label),
                cell(agent_text(run.agent)),
                cell(f"{summary.num_tasks} × {summary.num_trials}", number=True),
                *scores,
                cell(f"{summary.avg_reward:.3f}", number=True),
                cell(money(summary.cost.live_usd), number=True),
            )
        )
    headers = ["role", "run", "agent", "tasks × trials", *[f"pass^{k} (95% CI)" for k in ks], "avg reward", "live cost"]
    parts = [table(headers, runs)]
    for item in report.comparisons:
        found = item.comparison
        title = element("h3", f"{item.candidate} − {item.baseline}")
        if found is None:
            parts += [title, element("p", "No scored task in common.")]
            continue
        level = f"{found.level:.0%}"
        rows = [
            row(
                cell(f"pass^{d.k}" if d.metric == "pass^k" else d.metric),
                cell(f"{d.candidate:.3f}", number=True),
                cell(f"{d.baseline:.3f}", number=True),
                cell(f"{d.difference:+.3f}", number=True),
                cell(f"{d.ci[0]:+.3f} – {d.ci[1]:+.3f}", number=True),
            )
            for d in found.differences.values()
        ]
        matched = f"; trials matched by seed in {found.seed_paired_tasks} tasks" if found.seed_paired_tasks else ""
        facts = (
            f"{found.tasks} common tasks, at least {found.trials_per_task} trials each{matched}. "
            f"Intervals: {INTERVAL_NAMES[found.interval]} ({found.resamples} resamples, seed "
            f"{found.seed}). Exact sign-flip test of pass^1: p = {found.test.p_value:.4g} "
            f"({found.test.nonzero_tasks} tasks differ)."
        )
        parts += [
            title,
            table(["metric", "candidate", "baseline", "difference", f"{level} CI"], rows),
            element("p", facts),
        ]
    return section("comparison", "Comparison", *parts)
