"""The HTML report's comparison section (`report A --against B --html`, or runs of different agents):
each run's scores, the paired differences with their intervals and the exact test, and the trials
that flipped, each with its first divergence and cause (as `tauproxy diff` finds them) and a link to
its trajectory on both sides.

The page is the report of the last run (the candidate): its trajectories are in the page already,
under the anchors the page gave them. The other runs' flipped trials (only those) follow the flips,
under `baseline-trial-<task>-<trial>` anchors (`candidate<N>-…` for a middle run of several), so
both links of a flip open a trajectory, also when the page is opened at one.
"""

from __future__ import annotations

import re

from tauproxy.data_model.result import SimulationRun
from tauproxy.reports.compare import ComparedRun, RunComparison, SideBySide, agent_text, flip_count
from tauproxy.reports.html_trajectory import trajectory_section
from tauproxy.reports.markup import cell, element, money, row, section, table
from tauproxy.reports.paired import INTERVAL_NAMES
from tauproxy.reports.run_diff import FlippedTrial

# (task, trial) -> the element id of that trajectory in the page.
Anchors = dict[tuple[str, int], str]


def comparison_section(report: SideBySide, page_anchors: Anchors) -> str:
    """The section; `page_anchors` are those of the page's own trajectories, the last run's."""
    anchors = _run_anchors(report, page_anchors)
    parts = [_scores(report)]
    for item in report.comparisons:
        parts += _paired(item)
        parts.append(_flips(item, anchors[item.baseline], anchors[item.candidate]))
    parts += [_flipped_trials(report, index, anchors[run.label]) for index, run in enumerate(report.runs[:-1])]
    return section("comparison", "Comparison", element("style", children=_STYLE), *parts)


# The section's own rules, kept with it (the page's policy allows inline style).
_STYLE = (
    "table.flips td.why{max-width:640px}table.flips td.why p{margin:2px 0}"
    "td.flip-regressed{color:#e03131;font-weight:600}td.flip-improved{color:#2f9e44;font-weight:600}"
    "pre.diff{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:.85em;margin:2px 0}"
    "details.diff>summary{cursor:pointer;color:#495057}"
)


def _role(report: SideBySide, index: int) -> str:
    if index == 0:
        return "baseline"
    return "candidate" if len(report.runs) == 2 else f"candidate{index}"


def _run_anchors(report: SideBySide, page_anchors: Anchors) -> dict[str, Anchors]:
    """Run label -> its trajectories' anchors: the page's for the last run, new ones for the others'
    flipped trials (unique in the page: a clash gets a numbered suffix, as the page's own do)."""
    used = set(page_anchors.values())
    out: dict[str, Anchors] = {}
    for index, run in enumerate(report.runs):
        if index == len(report.runs) - 1:
            out[run.label] = page_anchors
            continue
        mine: Anchors = {}
        for trial in run.flipped_trials:
            base = f"{_role(report, index)}-trial-{_ANCHOR_UNSAFE.sub('_', trial.task_id)}-{trial.trial}"
            anchor, n = base, 1
            while anchor in used:
                anchor, n = f"{base}.{n}", n + 1
            used.add(anchor)
            mine[(trial.task_id, trial.trial)] = anchor
        out[run.label] = mine
    return out


# As for the page's own anchors: characters an id or a URL fragment would trip on become `_`.
_ANCHOR_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def _scores(report: SideBySide) -> str:
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
    return table(headers, runs)


def _paired(item: RunComparison) -> list[str]:
    found = item.comparison
    title = element("h3", f"{item.candidate} − {item.baseline}")
    if found is None:
        return [title, element("p", "No scored task in common.")]
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
    return [title, table(["metric", "candidate", "baseline", "difference", f"{level} CI"], rows), element("p", facts)]


def _flips(item: RunComparison, baseline: Anchors, candidate: Anchors) -> str:
    """One row per flipped trial: what flipped, where the two trials first differ and why (the diffs
    folded), and a link to the trajectory on each side."""
    if item.flips is None:
        return ""
    head = element("h4", "Flipped trials") + element("p", flip_count(item.flips) + ".")
    if not item.flips.flips:
        return head
    rows = [_flip_row(flip, baseline, candidate) for flip in item.flips.flips]
    headers = ["task", "trial", "flip", "reward", "cause", "first divergence", "trajectories"]
    return head + table(headers, rows, class_="flips")


def _flip_row(flip: FlippedTrial, baseline: Anchors, candidate: Anchors) -> str:
    found = flip.divergence
    where = []
    if found.message_index is not None:
        where.append(f"message #{found.message_index} ({found.message_role})")
    if found.call_index is not None:
        where.append(f"call #{found.call_index} ({found.call_role})")
    diffs = "".join(
        element("details", class_="diff", children=element("summary", title) + element("pre", text, class_="diff"))
        for title, text in ((_FIRST_DIFFERENCE, found.message_diff), ("request diff (cassette)", found.request_diff))
        if text
    )
    why = element("p", ", ".join(where) or "same messages") + element("p", found.detail) + diffs
    trial = str(flip.trial_a) if flip.trial_a == flip.trial_b else f"{flip.trial_a} / {flip.trial_b}"
    links = [
        _link("baseline", baseline.get((flip.task_id, flip.trial_a))),
        _link("candidate", candidate.get((flip.task_id, flip.trial_b))),
    ]
    cells = [
        cell(flip.task_id),
        cell(trial, number=True),
        cell(flip.direction, class_=f"flip-{flip.direction}"),
        cell(f"{_reward(flip.reward_a)} → {_reward(flip.reward_b)}", number=True),
        cell(found.cause.value),
        element("td", children=why, class_="why"),
        element("td", children=element("br").join(links)),
    ]
    return element("tr", data_direction=flip.direction, children="".join(cells))


# The message diff is written A (the baseline) to B (the candidate), as `diff` prints it.
_FIRST_DIFFERENCE = "first difference (A baseline, B candidate)"


def _reward(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _link(side: str, anchor: str | None) -> str:
    if anchor is None:  # a trial the page's run does not hold (it cannot happen for a flip; said, not broken)
        return element("span", f"{side}: not in this page")
    return element("a", side, href=f"#{anchor}")


def _flipped_trials(report: SideBySide, index: int, anchors: Anchors) -> str:
    """A run's flipped trials, for each run whose report this page is not."""
    run: ComparedRun = report.runs[index]
    if not run.flipped_trials:
        return ""
    title = element("h3", f"Flipped trials of the {_role(report, index)}: {run.label}")
    note = element("p", "Only the trials that flipped; the trajectories further down are the candidate's.")
    return title + note + "".join(_trajectory(trial, anchors) for trial in run.flipped_trials)


def _trajectory(trial: SimulationRun, anchors: Anchors) -> str:
    return trajectory_section(trial, anchors[(trial.task_id, trial.trial)])
