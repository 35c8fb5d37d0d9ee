"""Diff two runs: per-task pass counts, the trials that flipped, and why each one flipped.

Trials are paired by (task_id, trial): trial i of a task in A against trial i of the same task in
B, which share a seed whenever both runs used the same --seed. Trials left unpaired that way (for
example runs whose trial numbers were chosen differently) are then paired by (task_id, seed).
A trial flipped when it passed on one side and failed on the other; trials that ended in an
infrastructure error do not count, as in pass^k.

The diff also carries the paired comparison of B against A on their common tasks (`paired.py`):
the differences in pass^1, pass^k and average reward with paired-bootstrap intervals over tasks,
and the exact sign-flip test of pass^1, so a handful of flips can be read against the noise.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from tauproxy.data_model.result import Results, SimulationRun
from tauproxy.data_model.task import Task
from tauproxy.errors import ConfigError
from tauproxy.reports.divergence import (
    Cause,
    Divergence,
    TrialContext,
    explain,
    setting_changes,
    short_value,
)
from tauproxy.reports.metrics import EXCLUDED_TERMINATIONS, is_success, pass_hat_ks, task_counts
from tauproxy.reports.paired import PairedComparison, paired_comparison, render_paired
from tauproxy.results.provenance import SourcedResults
from tauproxy.store.cassette import Cassette


class TaskPasses(BaseModel):
    task_id: str
    a_successes: int = 0
    a_trials: int = 0
    b_successes: int = 0
    b_trials: int = 0

    @property
    def changed(self) -> bool:
        return (self.a_successes, self.a_trials) != (self.b_successes, self.b_trials)


class FlippedTrial(BaseModel):
    task_id: str
    trial_a: int
    trial_b: int
    seed_a: int
    seed_b: int
    paired_by: Literal["trial", "seed"]
    direction: Literal["regressed", "improved"]
    reward_a: float | None
    reward_b: float | None
    divergence: Divergence


class RunSide(BaseModel):
    """What identifies one side of the diff, for the header."""

    agent: str
    agent_prompt_sha256: str | None
    user: str
    judge: str
    domain: str
    domain_sha256: str
    trials: int
    pass_hat_1: float | None


class RunDiff(BaseModel):
    a: RunSide
    b: RunSide
    setting_changes: dict[str, tuple[Any, Any]]
    tasks: list[TaskPasses]
    paired: int
    unpaired_a: list[str]
    unpaired_b: list[str]
    flips: list[FlippedTrial]
    causes: dict[str, int]
    # B (the later run) against A (the earlier) on their common tasks; None without one.
    comparison: PairedComparison | None = None


def _side(results: Results) -> RunSide:
    info = results.info
    pass_1 = pass_hat_ks(task_counts(results.simulations)).get(1)
    return RunSide(
        agent=info.agent_info.llm,
        agent_prompt_sha256=info.agent_info.system_prompt_sha256,
        user=info.user_info.llm,
        judge=info.judge_info.llm,
        domain=info.domain,
        domain_sha256=info.domain_sha256,
        trials=len(results.simulations),
        pass_hat_1=pass_1,
    )


def pair_trials(
    a: list[SimulationRun], b: list[SimulationRun]
) -> tuple[list[tuple[SimulationRun, SimulationRun, Literal["trial", "seed"]]], list[str], list[str]]:
    """Pairs by (task_id, trial), then the rest by (task_id, seed); returns pairs and unpaired run ids."""
    by_trial = {(run.task_id, run.trial): run for run in b}
    pairs: list[tuple[SimulationRun, SimulationRun, Literal["trial", "seed"]]] = []
    left: list[SimulationRun] = []
    for run in a:
        match = by_trial.pop((run.task_id, run.trial), None)
        if match is None:
            left.append(run)
        else:
            pairs.append((run, match, "trial"))
    by_seed: dict[tuple[str, int], list[SimulationRun]] = {}
    for run in by_trial.values():
        by_seed.setdefault((run.task_id, run.seed), []).append(run)
    unpaired_a = []
    for run in left:
        candidates = by_seed.get((run.task_id, run.seed))
        if candidates:
            pairs.append((run, candidates.pop(0), "seed"))
        else:
            unpaired_a.append(run.id)
    unpaired_b = [run.id for runs in by_seed.values() for run in runs]
    return pairs, unpaired_a, unpaired_b


def _task_passes(a: Results, b: Results) -> list[TaskPasses]:
    order = [t.id for t in a.tasks] + [t.id for t in b.tasks]
    rows = {task_id: TaskPasses(task_id=task_id) for task_id in dict.fromkeys(order)}
    for count in task_counts(a.simulations):
        row = rows.setdefault(count.task_id, TaskPasses(task_id=count.task_id))
        row.a_successes, row.a_trials = count.successes, count.trials
    for count in task_counts(b.simulations):
        row = rows.setdefault(count.task_id, TaskPasses(task_id=count.task_id))
        row.b_successes, row.b_trials = count.successes, count.trials
    return [row for row in rows.values() if row.a_trials or row.b_trials]


def _reward(run: SimulationRun) -> float | None:
    return run.reward_info.reward if run.reward_info else None


class Flips(BaseModel):
    """The trials that passed on one side and failed on the other, out of the pairs found."""

    paired: int
    unpaired_a: list[str]
    unpaired_b: list[str]
    flips: list[FlippedTrial]


def find_flips(a: Results, b: Results, cassettes: list[Cassette]) -> Flips:
    """Pair A's trials with B's and explain each pair that flipped; cassettes add exact request diffs."""
    changes = setting_changes(a.info, b.info)
    tasks_a: dict[str, Task] = {t.id: t for t in a.tasks}
    tasks_b: dict[str, Task] = {t.id: t for t in b.tasks}
    pairs, unpaired_a, unpaired_b = pair_trials(a.simulations, b.simulations)
    order = {task_id: i for i, task_id in enumerate(dict.fromkeys([*tasks_a, *tasks_b]))}
    pairs.sort(key=lambda p: (order.get(p[0].task_id, len(order)), p[0].task_id, p[0].trial))
    flips: list[FlippedTrial] = []
    for run_a, run_b, paired_by in pairs:
        counted = all(r.termination_reason not in EXCLUDED_TERMINATIONS for r in (run_a, run_b))
        if not counted or is_success(run_a) == is_success(run_b):
            continue
        context = TrialContext(
            a=run_a, b=run_b, task_a=tasks_a.get(run_a.task_id), task_b=tasks_b.get(run_b.task_id), changes=changes
        )
        flips.append(
            FlippedTrial(
                task_id=run_a.task_id,
                trial_a=run_a.trial,
                trial_b=run_b.trial,
                seed_a=run_a.seed,
                seed_b=run_b.seed,
                paired_by=paired_by,
                direction="regressed" if is_success(run_a) else "improved",
                reward_a=_reward(run_a),
                reward_b=_reward(run_b),
                divergence=explain(context, cassettes),
            )
        )
    return Flips(paired=len(pairs), unpaired_a=unpaired_a, unpaired_b=unpaired_b, flips=flips)


def diff_runs(a: Results, b: Results, cassette_dirs: list[Path] | None = None) -> RunDiff:
    """Compare run A (before) with run B (after); cassettes, when given, add exact request diffs."""
    found = find_flips(a, b, [Cassette.open(path, create=False) for path in cassette_dirs or []])
    causes = Counter(flip.divergence.cause.value for flip in found.flips)
    return RunDiff(
        a=_side(a),
        b=_side(b),
        setting_changes=setting_changes(a.info, b.info),
        tasks=_task_passes(a, b),
        paired=found.paired,
        unpaired_a=found.unpaired_a,
        unpaired_b=found.unpaired_b,
        flips=found.flips,
        causes={cause.value: causes[cause.value] for cause in Cause if causes[cause.value]},
        comparison=paired_comparison(b, a),
    )


# -- text -------------------------------------------------------------------------------------


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _indent(text: str, prefix: str = "      ") -> list[str]:
    return [prefix + line for line in text.splitlines()]


def _side_line(name: str, side: RunSide) -> str:
    prompt = (side.agent_prompt_sha256 or "-")[:12]
    return (
        f"{name}: agent {side.agent} (prompt {prompt}), user {side.user}, judge {side.judge}; "
        f"domain {side.domain} ({side.domain_sha256[:12]}); {side.trials} trials, "
        f"pass^1 {_fmt(side.pass_hat_1)}"
    )


AnyResults = TypeVar("AnyResults", bound=Results)


def only_tasks(a: AnyResults, b: AnyResults, task_ids: list[str]) -> tuple[AnyResults, AnyResults]:
    """Both runs cut down to these tasks (`diff --task`); a task in neither run is an error."""
    known = dict.fromkeys(
        [
            *(t.id for t in a.tasks),
            *(t.id for t in b.tasks),
            *(s.task_id for s in a.simulations),
            *(s.task_id for s in b.simulations),
        ]
    )
    missing = [task_id for task_id in task_ids if task_id not in known]
    if missing:
        shown = ", ".join(list(known)[:10]) + (", ..." if len(known) > 10 else "")
        raise ConfigError(f"no task {', '.join(map(repr, missing))} in either run (tasks: {shown})")
    wanted = set(task_ids)

    def cut(results: AnyResults) -> AnyResults:
        update: dict[str, Any] = {
            "tasks": [t for t in results.tasks if t.id in wanted],
            "simulations": [s for s in results.simulations if s.task_id in wanted],
        }
        if isinstance(results, SourcedResults) and results.task_ids is not None:
            update["task_ids"] = [task_id for task_id in results.task_ids if task_id in wanted]
        return results.model_copy(update=update)

    return cut(a), cut(b)


def render_diff(diff: RunDiff, limit: int | None = None) -> str:
    """The diff as plain text: header, setting changes, per-task counts, then each flipped trial.

    With `limit`, the per-task counts list only the tasks that changed, and at most `limit` of them
    and of the flipped trials, saying how many were left out (the JSON dump always has them all).
    """
    lines = [_side_line("A", diff.a), _side_line("B", diff.b)]
    if diff.setting_changes:
        lines.append("settings that differ:")
        lines += [f"  {name}: {short_value(a)} -> {short_value(b)}" for name, (a, b) in diff.setting_changes.items()]
    else:
        lines.append("settings: identical")
    rows = diff.tasks if limit is None else [row for row in diff.tasks if row.changed]
    shown_rows = rows if limit is None else rows[:limit]
    lines.append(
        "per task (passed/trials, A -> B):"
        if limit is None
        else f"per task that changed (passed/trials, A -> B), {len(rows)} of {len(diff.tasks)}:"
    )
    width = max((len(row.task_id) for row in shown_rows), default=4)
    for row in shown_rows:
        mark = "  *" if row.changed else ""
        lines.append(
            f"  {row.task_id:<{width}}  {row.a_successes}/{row.a_trials} -> {row.b_successes}/{row.b_trials}{mark}"
        )
    if len(shown_rows) < len(rows):
        left_out = len(rows) - len(shown_rows)
        lines.append(f"  ... {left_out} more changed tasks left out (--limit {limit}; all in --json)")
    if diff.unpaired_a or diff.unpaired_b:
        lines.append(f"unpaired trials: {len(diff.unpaired_a)} only in A, {len(diff.unpaired_b)} only in B")
    regressed = sum(flip.direction == "regressed" for flip in diff.flips)
    lines.append(
        f"flipped trials: {len(diff.flips)} of {diff.paired} paired "
        f"({regressed} regressed, {len(diff.flips) - regressed} improved)"
    )
    if diff.comparison is not None:
        lines.append(render_paired(diff.comparison, "B", "A"))
    if diff.causes:
        lines.append("causes: " + ", ".join(f"{cause} {count}" for cause, count in diff.causes.items()))
    shown_flips = diff.flips if limit is None else diff.flips[:limit]
    for flip in shown_flips:
        lines += _flip_lines(flip)
    if len(shown_flips) < len(diff.flips):
        lines.append(
            f"... {len(diff.flips) - len(shown_flips)} more flipped trials left out (--limit {limit}; all in --json)"
        )
    return "\n".join(lines)


def _flip_lines(flip: FlippedTrial) -> list[str]:
    found = flip.divergence
    trial = str(flip.trial_a) if flip.trial_a == flip.trial_b else f"{flip.trial_a}/{flip.trial_b}"
    where = []
    if found.call_index is not None:
        where.append(f"call #{found.call_index} ({found.call_role})")
    if found.message_index is not None:
        where.append(f"message #{found.message_index} ({found.message_role})")
    lines = [
        f"- {flip.task_id} trial {trial}: {flip.direction} (reward {_fmt(flip.reward_a)} -> "
        f"{_fmt(flip.reward_b)}): {found.cause.value}" + (f" at {', '.join(where)}" if where else ""),
        f"    {found.detail}",
    ]
    if found.message_diff:
        lines += ["    first difference:", *_indent(found.message_diff)]
    if found.request_diff:
        lines += ["    request diff (cassette):", *_indent(found.request_diff)]
    return lines
