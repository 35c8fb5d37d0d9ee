"""Runs of different agents side by side: each its own report, plus paired comparisons between them.

`report A --against B` compares A (the candidate) with B (the baseline). `report R1 R2 ...` whose
runs were made by different agents (agent model, args or prompt hash differ) compares them the same
way instead of merging them into one score: the runs are grouped by agent (trials of one agent
are merged by (task, seed) as before), in the order first given, and every later group is compared
with the first.

Each comparison also carries its flipped trials (tauproxy/reports/run_diff.py, as `diff` finds
them: baseline as A, candidate as B), each with its first divergence and cause; each run keeps its
own flipped trials, out of every dump, for the HTML page to show beside the comparison.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import BaseModel, Field

from tauproxy.data_model.result import ModelInfo, Results, SimulationRun
from tauproxy.reports.merge import merge_results
from tauproxy.reports.notebook import MAX_K_SHOWN, pass_line, table, usd, with_interval
from tauproxy.reports.paired import PairedComparison, paired_comparison, render_paired
from tauproxy.reports.run_diff import Flips, find_flips
from tauproxy.reports.summary import ReportSummary, summarize
from tauproxy.results.provenance import SourcedResults
from tauproxy.store.cassette import Cassette


class ComparedRun(BaseModel):
    label: str
    sources: list[str]
    agent: ModelInfo
    summary: ReportSummary
    # This run's trials that flipped in some comparison (only those): the page shows them beside the
    # flip. Left out of dumps and reprs, which stay a report.
    flipped_trials: list[SimulationRun] = Field(default_factory=list, exclude=True, repr=False)


class RunComparison(BaseModel):
    """`candidate` - `baseline` (labels of `SideBySide.runs`); None when they share no scored task."""

    candidate: str
    baseline: str
    comparison: PairedComparison | None
    # Baseline as A, candidate as B: "regressed" passed in the baseline and failed in the candidate.
    flips: Flips | None = None


class SideBySide(BaseModel):
    runs: list[ComparedRun]
    comparisons: list[RunComparison]

    def __repr__(self) -> str:
        runs = "; ".join(f"{run.label}: {pass_line(run.summary.pass_hat_k)}" for run in self.runs)
        return f"<SideBySide {len(self.runs)} runs: {runs}>"

    __str__ = __repr__  # print() too: pydantic's str is its field list, every flipped trial included

    def _repr_html_(self) -> str:
        """Each run's pass^k with its interval, then each paired difference with its interval."""
        ks = sorted({k for run in self.runs for k in run.summary.pass_hat_k})[:MAX_K_SHOWN]
        rows = [
            (
                run.label,
                run.agent.llm,
                *(with_interval(run.summary.pass_hat_k.get(k), run.summary.pass_hat_k_ci.get(k)) for k in ks),
                usd(run.summary.cost.live_usd),
            )
            for run in self.runs
        ]
        differences: list[tuple[str, str, str]] = []
        for comparison in self.comparisons:
            pair = f"{comparison.candidate} - {comparison.baseline}"
            if comparison.comparison is None:
                differences.append((pair, "no task in common", ""))
                continue
            for name, difference in comparison.comparison.differences.items():
                low, high = difference.ci
                differences.append((pair, name, f"{difference.difference:+.3f} [{low:+.3f}, {high:+.3f}]"))
        html = table(("run", "agent", *(f"pass^{k}" for k in ks), "cost live"), rows)
        if differences:
            html += table(("paired", "metric", "difference [95% interval]"), differences)
        return html


def agent_identity(results: Results) -> str:
    """What makes two runs the same agent: model, args (connection settings are never kept) and prompt."""
    agent = results.info.agent_info
    return json.dumps(
        {
            "llm": agent.llm,
            "llm_args": agent.llm_args,
            "system_prompt_sha256": agent.system_prompt_sha256,
            "implementation": agent.implementation,
        },
        sort_keys=True,
        default=str,
    )


def group_by_agent(loaded: Sequence[tuple[str, SourcedResults]]) -> list[tuple[str, Results]]:
    """(label, results) per agent, in first-given order; one agent's runs merged by (task, seed)."""
    groups: dict[str, list[tuple[str, SourcedResults]]] = {}
    for name, results in loaded:
        groups.setdefault(agent_identity(results), []).append((name, results))
    out: list[tuple[str, Results]] = []
    for members in groups.values():
        names = [name for name, _ in members]
        merged: Results = members[0][1] if len(members) == 1 else merge_results([r for _, r in members], sources=names)
        out.append((" + ".join(names), merged))
    return out


def side_by_side(runs: Sequence[tuple[str, Results]], seed: int = 0, cassettes: Sequence[Cassette] = ()) -> SideBySide:
    """Summaries of every run, and the paired comparison and flipped trials of each later run with
    the first; cassettes holding the runs' calls add exact request diffs to the flips."""
    base_label, base = runs[0]
    comparisons: list[RunComparison] = []
    flipped: dict[int, set[tuple[str, int]]] = {index: set() for index in range(len(runs))}
    for index, (label, results) in enumerate(runs[1:], start=1):
        flips = find_flips(base, results, list(cassettes))
        flipped[0].update((flip.task_id, flip.trial_a) for flip in flips.flips)
        flipped[index].update((flip.task_id, flip.trial_b) for flip in flips.flips)
        comparisons.append(
            RunComparison(
                candidate=label,
                baseline=base_label,
                comparison=paired_comparison(results, base, seed=seed),
                flips=flips,
            )
        )
    compared = [
        ComparedRun(
            label=label,
            sources=[label],
            agent=results.info.agent_info,
            summary=summarize(results),
            flipped_trials=[run for run in results.simulations if (run.task_id, run.trial) in flipped[index]],
        )
        for index, (label, results) in enumerate(runs)
    ]
    return SideBySide(runs=compared, comparisons=comparisons)


def agent_text(model: ModelInfo) -> str:
    """Model, arguments and prompt hash: what tells two agents apart."""
    args = f" {json.dumps(model.llm_args, sort_keys=True)}" if model.llm_args else ""
    prompt = f" (prompt {model.system_prompt_sha256[:12]})" if model.system_prompt_sha256 else ""
    return f"{model.llm}{args}{prompt}"


def _cost(summary: ReportSummary) -> str:
    live = summary.cost.live_usd
    return "unknown" if live is None else f"${live:.4f}"


def render_side_by_side(report: SideBySide) -> str:
    """Plain text: one block of scores per run, then each comparison."""
    lines: list[str] = []
    ks = sorted({k for run in report.runs for k in run.summary.pass_hat_k})
    for index, run in enumerate(report.runs):
        summary = run.summary
        role = "baseline" if index == 0 else "candidate"
        lines.append(f"[{role}] {run.label}: agent {agent_text(run.agent)}")
        scores = []
        for k in ks:
            value = summary.pass_hat_k.get(k)
            interval = summary.pass_hat_k_ci.get(k)
            if value is not None:
                ci = f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""
                scores.append(f"pass^{k} {value:.3f}{ci}")
        lines.append(f"  {summary.num_tasks} tasks x {summary.num_trials} trials; " + "; ".join(scores))
        lines.append(f"  avg reward {summary.avg_reward:.3f}; live cost {_cost(summary)}; calls {summary.calls.text()}")
    for item in report.comparisons:
        if item.comparison is None:
            lines.append(f"{item.candidate} vs {item.baseline}: no scored task in common")
        else:
            lines.append(render_paired(item.comparison, item.candidate, item.baseline))
        if item.flips is not None:
            lines.append(f"{item.candidate} vs {item.baseline}: {flip_count(item.flips)}")
    return "\n".join(lines)


def flip_count(flips: Flips) -> str:
    """`2 of 20 paired trials flipped (1 regressed, 1 improved)`."""
    regressed = sum(flip.direction == "regressed" for flip in flips.flips)
    return (
        f"{len(flips.flips)} of {flips.paired} paired trials flipped "
        f"({regressed} regressed, {len(flips.flips) - regressed} improved)"
    )
