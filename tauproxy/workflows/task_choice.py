"""Which tasks get the next round's trials in `run --until-decided`: where one more trial changes the
verdict most.

The verdict turns on the interval of the mean per-task difference (baseline - candidate), and
trial noise reaches it through each task's difference. One more candidate trial on a task with
pass rate p after n trials cuts that task's noise variance by p(1 - p) / (n (n + 1)); p is smoothed to
(s + 1) / (n + 2), so that a task whose trials all agree still counts as a little uncertain.

The rule, in order:
1. eligible: the task is discordant (its pass rates differ between the two sides) or uncertain
   (the candidate's own trials disagree); a task whose every trial on both sides agrees is left
   alone: one more trial there most likely agrees again and moves nothing;
2. discordant tasks first (they make the drop), then by that variance cut, largest first; ties in
   task order, so the choice is deterministic and a rerun makes it again;
3. each chosen task's trials double (so the planned looks span 4 -> 64 trials), up to the per-task
   limit; the budget may cut the list short (workflows/adaptive.py).
If no task is eligible (every task agrees everywhere), every task under the limit is, by the same order.
"""

from __future__ import annotations

from dataclasses import dataclass

from tauproxy.reports.paired import TaskPair


@dataclass(frozen=True)
class TaskChoice:
    task_id: str
    trials: int  # the candidate's counted trials now
    add: int  # trials to add this round
    discordant: bool
    variance_cut: float


def variance_cut(successes: int, trials: int) -> float:
    """How much one more trial shrinks the variance of the task's pass rate (smoothed p)."""
    p = (successes + 1) / (trials + 2)
    return p * (1 - p) / (trials * (trials + 1))


def candidate_noise_share(per_task: list[TaskPair]) -> float:
    """The share of the variance of the mean per-task difference that is the candidate's own trial
    noise, the only part more candidate trials remove; the rest (the baseline's trials, the spread
    between tasks) stays. The variance is the between-task variance of the differences over n, as the
    bootstrap sees it; the candidate's part sum p(1 - p) / trials over n^2, p smoothed."""
    n = len(per_task)
    if n < 2:
        return 1.0
    diffs = [t.baseline_successes / t.baseline_trials - t.candidate_successes / t.candidate_trials for t in per_task]
    mean = sum(diffs) / n
    total = sum((d - mean) ** 2 for d in diffs) / (n - 1) / n
    noise = (
        sum(_smoothed_variance(t.candidate_successes, t.candidate_trials) / t.candidate_trials for t in per_task) / n**2
    )
    return 1.0 if total <= 0 else min(1.0, noise / total)


def _smoothed_variance(successes: int, trials: int) -> float:
    p = (successes + 1) / (trials + 2)
    return p * (1 - p)


def choose_tasks(per_task: list[TaskPair], max_trials: int) -> list[TaskChoice]:
    """The tasks to add trials to, most useful first, each with its doubling (see the module docstring)."""
    ranked: list[tuple[bool, float, int, TaskChoice]] = []
    fallback: list[tuple[bool, float, int, TaskChoice]] = []
    for index, task in enumerate(per_task):
        n, s = task.candidate_trials, task.candidate_successes
        if n >= max_trials:
            continue
        discordant = s * task.baseline_trials != task.baseline_successes * n
        uncertain = 0 < s < n
        cut = variance_cut(s, n)
        choice = TaskChoice(task.task_id, n, min(n, max_trials - n), discordant, cut)
        (ranked if discordant or uncertain else fallback).append((not discordant, -cut, index, choice))
    chosen = ranked or fallback
    return [choice for *_, choice in sorted(chosen, key=lambda item: item[:3])]
