"""Is a run worse than a baseline? One verdict that `check` and `bisect` share, knowing the noise.

Only tasks present in both runs are compared, so a run of a task subset can be checked against a
full baseline. The comparison is paired (`paired.py`): the drop (baseline - run) of the metric comes
with a paired-bootstrap interval over tasks at the chosen confidence (default 95%), and

- bad: the whole interval of the drop is above `max_drop` (the drop is larger than allowed, with
  that confidence);
- good: the whole interval is at or below `max_drop`;
- undecided: the interval straddles `max_drop`. The comparison then says how many more trials per
  task would most likely decide it: the interval's half-width h is scaled by sqrt(n / (n + m)) for
  n trials per task now and m more on both sides (same new seeds), and m is the smallest number that
  moves the whole interval to one side of `max_drop` around the same centre. That assumes the noise
  is trial noise; differences between tasks do not shrink with more trials, so it is a most-likely
  lower bound, not a promise. Their cost is m trials per task on both sides at each run's mean
  recorded cost per trial (new seeds are not in any cassette, so they go live; the trials already
  run replay for free); an unknown price makes the cost unknown;
- skip: the run cannot be judged (nothing in common, or mostly infrastructure errors), never that it
  regressed. The verdict follows `git bisect run`.
"""

from __future__ import annotations

import math
from enum import StrEnum

from pydantic import BaseModel

from tauproxy.data_model.result import Results, SimulationRun
from tauproxy.errors import ConfigError
from tauproxy.reports.metrics import EXCLUDED_TERMINATIONS, task_counts
from tauproxy.reports.notebook import facts, number
from tauproxy.reports.paired import (
    DEFAULT_BOOTSTRAP,
    PAIRED_INTERVAL,
    IntervalMethod,
    PairedComparison,
    mean_trial_cost,
    paired_comparison,
)

METRICS = ("pass^1", "pass^k", "avg_reward")
# Floating-point slack so that a drop of exactly --max-drop (0.3 - 0.2 = 0.09999…) is not "more than".
_TOLERANCE = 1e-9
DEFAULT_CONFIDENCE = 0.95
# More trials per task than this is not a plan: more tasks (or a looser --max-drop) are needed.
MAX_SUGGESTED_TRIALS = 1000


class Verdict(StrEnum):
    GOOD = "good"
    BAD = "bad"
    UNDECIDED = "undecided"
    SKIP = "skip"


class MoreTrials(BaseModel):
    """What would most likely decide an undecided comparison."""

    trials_per_task: int | None  # None: more trials per task are unlikely to decide it
    tasks: int
    extra_trials: int | None  # per side: trials_per_task x tasks
    run_trial_cost_usd: float | None  # mean recorded cost of one trial of each side
    baseline_trial_cost_usd: float | None
    cost_usd: float | None  # both sides' extra trials; None: a price is unknown
    note: str


class ScoreComparison(BaseModel):
    metric: str
    k: int | None = None
    score: float | None = None
    baseline_score: float | None = None
    drop: float | None = None
    # The interval of the drop at `confidence`, from the paired bootstrap over tasks.
    drop_ci: tuple[float, float] | None = None
    confidence: float = DEFAULT_CONFIDENCE
    # Exact sign-flip test of "no difference in pass^1" (whatever the metric).
    p_value: float | None = None
    max_drop: float
    verdict: Verdict
    reason: str
    common_tasks: int = 0
    trials: int = 0
    baseline_trials: int = 0
    infrastructure_errors: int = 0
    baseline_infrastructure_errors: int = 0
    more_trials: MoreTrials | None = None
    paired: PairedComparison | None = None

    def __repr__(self) -> str:
        return f"<ScoreComparison {self.verdict.value}: {self.reason}>"

    __str__ = __repr__  # print() too: pydantic's str is its field list, the paired comparison included

    def _repr_html_(self) -> str:
        """The verdict, why, and the figures it rests on, for Jupyter."""
        drop = "-" if self.drop is None else f"{self.drop:+.3f}"
        interval = "-" if self.drop_ci is None else "{:+.3f} – {:+.3f}".format(*self.drop_ci)
        shown = [
            ("verdict", self.verdict.value),
            ("why", self.reason),
            ("metric", self.metric + (f" (k={self.k})" if self.k is not None else "")),
            ("score / baseline", f"{number(self.score)} / {number(self.baseline_score)}"),
            ("drop", drop),
            (f"{self.confidence:.0%} interval of the drop", interval),
            ("max drop allowed", f"{self.max_drop:.3f}"),
            ("tasks in common", str(self.common_tasks)),
            ("trials / baseline trials", f"{self.trials} / {self.baseline_trials}"),
        ]
        if self.more_trials is not None:
            shown.append(("to decide", self.more_trials.note))
        return facts(shown)


def check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise ConfigError(f"unknown metric {metric!r} (choose from: {', '.join(METRICS)})")
    return metric


def _infra_errors(runs: list[SimulationRun]) -> int:
    return sum(run.termination_reason in EXCLUDED_TERMINATIONS for run in runs)


def compare_scores(
    run: Results,
    baseline: Results,
    metric: str,
    max_drop: float,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
    match_seeds: bool = True,
    resamples: int = DEFAULT_BOOTSTRAP,
    interval: IntervalMethod = PAIRED_INTERVAL,
    advise: bool = True,
) -> ScoreComparison:
    """Compare `run` with `baseline` on their common tasks: bad, good or undecided against `max_drop`.

    `match_seeds`, `resamples` and `interval` go to `paired_comparison` (workflows/sequential.py keeps
    every trial and draws more resamples for its wider intervals; bench/check_calibration.py measures
    each interval method);
    `advise=False` leaves out the more-trials advice (that loop adds the trials itself)."""
    check_metric(metric)
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be between 0 and 1 (exclusive), got {confidence:g}")
    base_ids = {sim.task_id for sim in baseline.simulations}
    common = [t for t in dict.fromkeys(sim.task_id for sim in run.simulations) if t in base_ids]
    mine = [sim for sim in run.simulations if sim.task_id in common]
    theirs = [sim for sim in baseline.simulations if sim.task_id in common]
    result = ScoreComparison(
        metric=metric,
        max_drop=max_drop,
        confidence=confidence,
        verdict=Verdict.SKIP,
        reason="",
        common_tasks=len(common),
        trials=len(mine),
        baseline_trials=len(theirs),
        infrastructure_errors=_infra_errors(mine),
        baseline_infrastructure_errors=_infra_errors(theirs),
    )
    if not common:
        result.reason = "the run and the baseline have no task in common"
        return result
    for name, errors, total in (
        ("run", result.infrastructure_errors, len(mine)),
        ("baseline", result.baseline_infrastructure_errors, len(theirs)),
    ):
        if 2 * errors > total:
            result.reason = f"{errors} of the {name}'s {total} trials are infrastructure errors"
            return result
    # A task whose every trial hit an infrastructure error has no score on that side: drop it there too.
    scored = {c.task_id for c in task_counts(mine)} & {c.task_id for c in task_counts(theirs)}
    mine = [sim for sim in mine if sim.task_id in scored]
    theirs = [sim for sim in theirs if sim.task_id in scored]
    if not scored:
        result.reason = "no common task has a trial without an infrastructure error on both sides"
        return result
    paired = paired_comparison(
        run.model_copy(update={"simulations": mine}),
        baseline.model_copy(update={"simulations": theirs}),
        level=confidence,
        seed=seed,
        match_seeds=match_seeds,
        resamples=resamples,
        interval=interval,
    )
    if paired is None:  # unreachable after the checks above; kept for the type checker
        result.reason = "no common task to compare"
        return result
    result.paired, result.common_tasks = paired, paired.tasks
    difference = paired.differences[metric]
    result.k = difference.k
    result.score, result.baseline_score = difference.candidate, difference.baseline
    result.drop = -difference.difference + 0.0
    low, high = -difference.ci[1] + 0.0, -difference.ci[0] + 0.0  # + 0.0: never print -0.000
    result.drop_ci = (low, high)
    result.p_value = paired.test.p_value
    if low > max_drop + _TOLERANCE:
        result.verdict, relation = Verdict.BAD, ">"
    elif high <= max_drop + _TOLERANCE:
        result.verdict, relation = Verdict.GOOD, "<="
    else:
        result.verdict, relation = Verdict.UNDECIDED, "straddles"
        if advise:
            result.more_trials = _more_trials(result, paired, mine, theirs)
    name = metric if metric != "pass^k" else f"pass^{difference.k}"
    result.reason = (
        f"{name} {result.score:.3f} vs baseline {result.baseline_score:.3f} on {paired.tasks} common "
        f"task(s): {'drop' if result.drop >= 0 else 'gain'} {abs(result.drop):.3f}, "
        f"{confidence:.0%} CI of the drop [{low:.3f}, {high:.3f}] {relation} max drop {max_drop:g} "
        f"(exact sign-flip p = {paired.test.p_value:.3g})"
    )
    if result.more_trials is not None:
        result.reason += "; " + result.more_trials.note
    return result


def _more_trials(
    result: ScoreComparison, paired: PairedComparison, mine: list[SimulationRun], theirs: list[SimulationRun]
) -> MoreTrials:
    """The smallest m more trials per task (both sides) whose scaled interval clears max_drop."""
    assert result.drop_ci is not None
    low, high = result.drop_ci
    centre, half = (low + high) / 2, (high - low) / 2
    gap = abs(centre - result.max_drop)
    n = paired.trials_per_task
    m: int | None = None
    if gap > _TOLERANCE and half > 0:
        # half * sqrt(n / (n + m)) < gap  <=>  m > n * ((half / gap)^2 - 1)
        m = max(1, math.floor(n * ((half / gap) ** 2 - 1)) + 1)
        if m > MAX_SUGGESTED_TRIALS:
            m = None
    run_cost, base_cost = mean_trial_cost(mine), mean_trial_cost(theirs)
    extra = None if m is None else m * paired.tasks
    cost = None if extra is None or run_cost is None or base_cost is None else extra * (run_cost + base_cost)
    if m is None:
        note = (
            "more trials per task are unlikely to decide it (the drop sits on the threshold); "
            "compare on more tasks or revisit --max-drop"
        )
    else:
        money = "unknown (a price is unknown)" if cost is None else f"${cost:.4f}"
        note = f"most likely decided by {m} more trial(s) per task on both sides ({extra} each), costing {money}"
    return MoreTrials(
        trials_per_task=m,
        tasks=paired.tasks,
        extra_trials=extra,
        run_trial_cost_usd=run_cost,
        baseline_trial_cost_usd=base_cost,
        cost_usd=cost,
        note=note,
    )
