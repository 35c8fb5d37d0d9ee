"""Paired comparison of a candidate run with a baseline: differences with intervals, and an exact test.

Pairing. Only tasks with at least one counted trial (infrastructure errors excluded) on both sides
are compared. Within a task, when the two runs share trial seeds, only the trials of the shared seeds
are kept on both sides (the same trials, as far as the seed decides them); otherwise every counted
trial is kept. Per task we take pass^1 (the share of passing trials), pass^k (unbiased, for the
largest k every compared task has on both sides) and the mean reward, and the per-task difference
candidate - baseline. Each metric is then the mean over tasks, so its difference is the mean of the
per-task differences. (With the same number of trials in every task the average reward is the usual
mean over trials.)

Interval. A paired bootstrap over tasks: each resample draws the compared tasks with replacement and
averages their per-task differences, so task difficulty (shared by both sides) cancels and the
sampling unit is the task, as in `metrics.bootstrap_pass_hat_k_ci`. One seeded index matrix serves
every metric, so results are reproducible for a given seed. The resampled means become an interval
by one of three methods (`IntervalMethod`):

- percentile: their quantiles. Too narrow over few tasks: it is about a normal interval with the
  plug-in standard deviation, where Student's t with n - 1 degrees of freedom and the n - 1 divisor
  belong;
- expanded (what `run --until-decided` uses at each look): the percentile interval with each side
  widened about the point estimate by sqrt(n / (n - 1)) * t_{n-1} / z at the interval's level
  (Hesterberg's expanded percentile interval, applied as a scale so that the far tails are not read
  from a handful of resamples);
- expanded-cc (the default, `PAIRED_INTERVAL`): the expanded interval, each side then moved out by
  half a step of the lattice the difference lives on (a continuity correction): pass^1 differences
  are multiples of 1 / (tasks x L), L the least common multiple of the trial counts, so a widened
  end that falls between two lattice points would otherwise exclude an attainable value at the edge;
- bca: bias-corrected and accelerated (Efron), quantiles moved by the resamples' median bias and the
  jackknife skewness of the per-task differences; it corrects skew, not the narrowness.

Why expanded-cc: measured by bench/check_calibration.py (pairs simulated from seeded per-task
outcomes, recorded ones among them, 60, 20 and 10 tasks), the percentile and BCa intervals hold the
true difference in fewer than 95% of pairs at 95% (worst cells near 90%), the expanded one comes
close on average but not in every cell, and expanded-cc reaches it (bench/README.md has the table).
`check`, `bisect`, `compare` and `diff` use it.

Exact test for pass^1. An exact sign-flip (paired permutation) test over the per-task pass^1
differences: under "no difference" the two labels of a task are exchangeable, so each per-task
difference is as likely to have either sign, and the p-value is the share of the 2^n sign patterns
whose mean is at least as far from 0 as the one observed. It is computed exactly, not sampled: the
differences are fractions with a small common denominator, so the null distribution of their sum is
a convolution over integers. Why not exact McNemar on paired trials? McNemar treats every trial pair
as an independent draw, but trials of one task share the task's difficulty and are not independent:
with k trials per task it overstates the evidence about k-fold, and it applies only when both runs
used the same seeds. The sign-flip test keeps the task as the unit (as the bootstrap does), works
with or without matching seeds and with unequal trial counts, and needs no large-sample
approximation.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from enum import StrEnum
from statistics import NormalDist
from typing import TYPE_CHECKING

from pydantic import BaseModel

from tauproxy.data_model.result import Results, SimulationRun
from tauproxy.reports.metrics import counted_runs, is_success, pass_hat_k

if TYPE_CHECKING:
    import numpy as np

DEFAULT_BOOTSTRAP = 2000
PAIRED_METRICS = ("pass^1", "pass^k", "avg_reward")


class IntervalMethod(StrEnum):
    """How the bootstrap's resampled means become an interval (module docstring: which and why)."""

    PERCENTILE = "percentile"
    EXPANDED = "expanded"
    EXPANDED_CORRECTED = "expanded-cc"
    BCA = "bca"


# The interval check and every paired comparison use: the one that reaches its nominal coverage.
PAIRED_INTERVAL = IntervalMethod.EXPANDED_CORRECTED
INTERVAL_NAMES = {
    IntervalMethod.PERCENTILE: "percentile paired bootstrap over tasks",
    IntervalMethod.EXPANDED: "t-widened paired bootstrap over tasks",
    IntervalMethod.EXPANDED_CORRECTED: "t-widened, continuity-corrected paired bootstrap over tasks",
    IntervalMethod.BCA: "BCa paired bootstrap over tasks",
}


class PairedDifference(BaseModel):
    """candidate - baseline of one metric, with its paired-bootstrap interval (`ci`)."""

    metric: str
    k: int | None = None
    candidate: float
    baseline: float
    difference: float
    ci: tuple[float, float]


class SignFlipTest(BaseModel):
    """Exact two-sided sign-flip test of "no difference in pass^1" over per-task differences."""

    name: str = "exact sign-flip permutation test over per-task pass^1 differences"
    mean_difference: float
    nonzero_tasks: int
    p_value: float


class TaskPair(BaseModel):
    task_id: str
    candidate_successes: int
    candidate_trials: int
    baseline_successes: int
    baseline_trials: int
    paired_by_seed: bool


class PairedComparison(BaseModel):
    tasks: int
    trials_per_task: int  # the fewest trials any compared task has on either side
    candidate_trials: int
    baseline_trials: int
    seed_paired_tasks: int  # tasks whose trials were matched by seed
    level: float
    resamples: int
    seed: int
    interval: IntervalMethod = PAIRED_INTERVAL
    differences: dict[str, PairedDifference]
    test: SignFlipTest
    per_task: list[TaskPair]


@dataclass(frozen=True)
class _Pair:
    task_id: str
    candidate: list[SimulationRun]
    baseline: list[SimulationRun]
    by_seed: bool


def pair_tasks(candidate: Results, baseline: Results, match_seeds: bool = True) -> list[_Pair]:
    """Common tasks (a counted trial on both sides), in the candidate's order; seed-matched if possible
    (and `match_seeds`: a run that added trials of new seeds to some tasks keeps them all, see
    workflows/adaptive.py)."""

    def grouped(results: Results) -> OrderedDict[str, list[SimulationRun]]:
        groups: OrderedDict[str, list[SimulationRun]] = OrderedDict()
        for run in counted_runs(results.simulations):
            groups.setdefault(run.task_id, []).append(run)
        return groups

    mine, theirs = grouped(candidate), grouped(baseline)
    pairs = []
    for task_id, runs in mine.items():
        other = theirs.get(task_id)
        if not other:
            continue
        shared = {run.seed for run in runs} & {run.seed for run in other} if match_seeds else set()
        if shared:
            runs = [run for run in runs if run.seed in shared]
            other = [run for run in other if run.seed in shared]
        pairs.append(_Pair(task_id, runs, other, bool(shared)))
    return pairs


def _reward(run: SimulationRun) -> float:
    return run.reward_info.reward if run.reward_info else 0.0


def _per_task(runs: list[SimulationRun], k: int) -> tuple[float, float, float]:
    successes = sum(is_success(run) for run in runs)
    return (successes / len(runs), pass_hat_k(len(runs), successes, k), sum(_reward(run) for run in runs) / len(runs))


def paired_comparison(
    candidate: Results,
    baseline: Results,
    level: float = 0.95,
    resamples: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    match_seeds: bool = True,
    interval: IntervalMethod = PAIRED_INTERVAL,
) -> PairedComparison | None:
    """The paired comparison on the common tasks; None when the runs have no scored task in common.
    `match_seeds=False` keeps every counted trial of a task on both sides, even where seeds are shared;
    `interval` says how the resampled means become each interval (module docstring)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {level}")
    pairs = pair_tasks(candidate, baseline, match_seeds)
    if not pairs:
        return None
    import numpy as np

    k = min(min(len(p.candidate), len(p.baseline)) for p in pairs)
    mine = np.array([_per_task(p.candidate, k) for p in pairs], dtype=float)  # (tasks, 3)
    theirs = np.array([_per_task(p.baseline, k) for p in pairs], dtype=float)
    deltas = mine - theirs
    picks = bootstrap_picks(len(pairs), resamples, seed)
    step = 1.0 / (len(pairs) * math.lcm(*(len(runs) for p in pairs for runs in (p.candidate, p.baseline))))
    differences: dict[str, PairedDifference] = {}
    for column, metric in enumerate(PAIRED_METRICS):
        point = float(deltas[:, column].mean())
        differences[metric] = PairedDifference(
            metric=metric,
            k={"pass^1": 1, "pass^k": k}.get(metric),
            candidate=float(mine[:, column].mean()),
            baseline=float(theirs[:, column].mean()),
            difference=point,
            ci=bootstrap_interval(deltas[:, column], picks, level, interval, step),
        )
    per_task = [
        TaskPair(
            task_id=p.task_id,
            candidate_successes=sum(map(is_success, p.candidate)),
            candidate_trials=len(p.candidate),
            baseline_successes=sum(map(is_success, p.baseline)),
            baseline_trials=len(p.baseline),
            paired_by_seed=p.by_seed,
        )
        for p in pairs
    ]
    return PairedComparison(
        tasks=len(pairs),
        trials_per_task=k,
        candidate_trials=sum(len(p.candidate) for p in pairs),
        baseline_trials=sum(len(p.baseline) for p in pairs),
        seed_paired_tasks=sum(p.by_seed for p in pairs),
        level=level,
        resamples=resamples,
        seed=seed,
        interval=interval,
        differences=differences,
        test=sign_flip_test(per_task),
        per_task=per_task,
    )


def bootstrap_picks(tasks: int, resamples: int, seed: int) -> np.ndarray:
    """The seeded resamples: row r holds the task indices drawn (with replacement) for resample r."""
    import numpy as np

    return np.random.default_rng(seed).integers(0, tasks, size=(resamples, tasks))


def bootstrap_interval(
    deltas: np.ndarray, picks: np.ndarray, level: float, method: IntervalMethod, step: float = 0.0
) -> tuple[float, float]:
    """The two-sided `level` interval of the mean of the per-task `deltas` from the resamples `picks`;
    it always holds the point estimate. `step`: the lattice step of the mean, for expanded-cc."""
    import numpy as np

    point = float(deltas.mean())
    means = deltas[picks].mean(axis=1)
    tail = (1.0 - level) / 2.0
    if method is IntervalMethod.BCA:
        low, high = _bca(deltas, means, point, tail)
    else:
        low, high = (float(v) for v in np.quantile(means, [tail, 1.0 - tail]))
    if method in (IntervalMethod.EXPANDED, IntervalMethod.EXPANDED_CORRECTED):
        widen = expansion(len(deltas), level)
        if math.isinf(widen):
            return (-1.0, 1.0)
        low, high = point - (point - low) * widen, point + (high - point) * widen
    if method is IntervalMethod.EXPANDED_CORRECTED:
        # Only a widened end is off the lattice; an end at the point (no spread that side) is on it.
        low = max(-1.0, low - step / 2) if low < point else low
        high = min(1.0, high + step / 2) if high > point else high
    return (min(low, point), max(high, point))


def _bca(deltas: np.ndarray, means: np.ndarray, point: float, tail: float) -> tuple[float, float]:
    """Efron's BCa quantiles of `means`: the bias z0 from the share of resamples below the point (ties
    half), the acceleration from the jackknife of the mean."""
    import numpy as np

    normal = NormalDist()
    below = (np.count_nonzero(means < point) + 0.5 * np.count_nonzero(means == point)) / len(means)
    z0 = normal.inv_cdf(min(max(below, 1e-6), 1.0 - 1e-6))
    n = len(deltas)
    if n < 2:
        return point, point
    jackknife = (deltas.sum() - deltas) / (n - 1)
    spread = jackknife.mean() - jackknife
    squares = float((spread**2).sum())
    acceleration = float((spread**3).sum()) / (6.0 * squares**1.5) if squares > 0 else 0.0
    shares = []
    for z in (normal.inv_cdf(tail), normal.inv_cdf(1.0 - tail)):
        moved = z0 + (z0 + z) / (1.0 - acceleration * (z0 + z))
        shares.append(normal.cdf(moved))
    low, high = (float(v) for v in np.quantile(means, shares))
    return low, high


def expansion(tasks: int, level: float) -> float:
    """sqrt(n / (n - 1)) * t_{n-1} / z at a two-sided `level`; inf for one task (no spread to widen)."""
    if tasks < 2:
        return math.inf
    q = 1.0 - (1.0 - level) / 2.0
    return math.sqrt(tasks / (tasks - 1)) * student_t_quantile(q, tasks - 1) / NormalDist().inv_cdf(q)


def student_t_quantile(q: float, df: int) -> float:
    """The q-quantile (q > 0.5) of Student's t with integer `df`, by bisection on its CDF."""
    low, high = 0.0, 1.0
    while _t_cdf(high, df) < q:
        high *= 2.0
    for _ in range(100):
        middle = (low + high) / 2.0
        low, high = (middle, high) if _t_cdf(middle, df) < q else (low, middle)
    return (low + high) / 2.0


def _t_cdf(t: float, df: int) -> float:
    """P(T <= t) for t >= 0, integer df: the finite series of Abramowitz & Stegun 26.7.3 and 26.7.4."""
    theta = math.atan(t / math.sqrt(df))
    cos2, sin = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:  # odd: A = (2/pi) (theta + sin cos (1 + 2/3 cos^2 + 2.4/(3.5) cos^4 + ...))
        term, series = 1.0, 1.0 if df > 1 else 0.0
        for j in range(1, (df - 1) // 2):
            term *= (2 * j) / (2 * j + 1) * cos2
            series += term
        share = 2.0 / math.pi * (theta + sin * math.cos(theta) * series)
    else:  # even: A = sin (1 + 1/2 cos^2 + 1.3/(2.4) cos^4 + ...)
        term, series = 1.0, 1.0
        for j in range(1, df // 2):
            term *= (2 * j - 1) / (2 * j) * cos2
            series += term
        share = sin * series
    return 0.5 + share / 2.0


def sign_flip_test(tasks: list[TaskPair]) -> SignFlipTest:
    """Exact two-sided p-value: every task's pass^1 difference flips sign with probability 1/2."""
    import numpy as np

    scale = 1
    for task in tasks:
        scale = math.lcm(scale, task.candidate_trials, task.baseline_trials)
    # Integer differences on the common denominator `scale`: exact, no rounding of the statistic.
    steps = [
        abs(
            task.candidate_successes * (scale // task.candidate_trials)
            - task.baseline_successes * (scale // task.baseline_trials)
        )
        for task in tasks
    ]
    observed = sum(
        task.candidate_successes * (scale // task.candidate_trials)
        - task.baseline_successes * (scale // task.baseline_trials)
        for task in tasks
    )
    nonzero = [step for step in steps if step]
    mean = observed / scale / len(tasks) if tasks else 0.0
    if not nonzero:
        return SignFlipTest(mean_difference=mean, nonzero_tasks=0, p_value=1.0)
    total = sum(nonzero)
    # probs[s + total] = P(sum of the signed differences = s) under the null.
    probs = np.zeros(2 * total + 1)
    probs[total] = 1.0
    for step in nonzero:
        shifted = np.zeros_like(probs)
        shifted[step:] += 0.5 * probs[:-step]
        shifted[:-step] += 0.5 * probs[step:]
        probs = shifted
    values = np.arange(-total, total + 1)
    p_value = float(probs[np.abs(values) >= abs(observed)].sum())
    return SignFlipTest(mean_difference=mean, nonzero_tasks=len(nonzero), p_value=min(1.0, p_value))


def trial_cost(run: SimulationRun) -> float | None:
    """What one trial's model calls cost at their recorded prices (live or replayed); None if unknown."""
    # τ²-bench files keep per-role costs and no call records.
    costs = [call.cost_usd for call in run.calls] if run.calls else [run.agent_cost, run.user_cost, run.judge_cost]
    if any(cost is None for cost in costs):
        return None
    return sum(cost for cost in costs if cost is not None)


def mean_trial_cost(runs: list[SimulationRun]) -> float | None:
    """Mean cost of a counted trial: what one more (new-seed, so live) trial most likely costs."""
    costs = [trial_cost(run) for run in counted_runs(runs)]
    if not costs or any(cost is None for cost in costs):
        return None
    return sum(cost for cost in costs if cost is not None) / len(costs)


def render_paired(comparison: PairedComparison, candidate: str = "candidate", baseline: str = "baseline") -> str:
    """The comparison as plain text: one line per metric, then the exact test."""
    percent = f"{comparison.level:.0%}"
    seeds = (
        f"; trials matched by seed in {comparison.seed_paired_tasks}"
        if comparison.seed_paired_tasks
        else "; no shared seeds (trials not matched)"
    )
    lines = [
        f"paired comparison ({candidate} - {baseline}) on {comparison.tasks} common task(s), "
        f"{comparison.trials_per_task}+ trials each{seeds}:"
    ]
    for diff in comparison.differences.values():
        name = f"pass^{diff.k}" if diff.metric == "pass^k" else diff.metric
        lines.append(
            f"  {name:<10} {diff.candidate:.3f} vs {diff.baseline:.3f}: {diff.difference:+.3f} "
            f"[{diff.ci[0]:+.3f}, {diff.ci[1]:+.3f}] ({percent} {INTERVAL_NAMES[comparison.interval]})"
        )
    test = comparison.test
    lines.append(f"  exact sign-flip test of pass^1: p = {test.p_value:.4g} ({test.nonzero_tasks} task(s) differ)")
    return "\n".join(lines)
