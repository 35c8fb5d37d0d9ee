"""Is a run worse than a baseline? One verdict (good / bad / skip) that `check` and `bisect` share.

Only tasks present in both runs are compared, so a run of a task subset can be checked against a
full baseline. The verdict follows `git bisect run`: "skip" means the run cannot be judged (nothing
in common, or mostly infrastructure errors), never that it regressed.
"""

from __future__ import annotations

import math
from enum import StrEnum

from pydantic import BaseModel

from tauproxy.data_model.result import Results, SimulationRun
from tauproxy.errors import ConfigError
from tauproxy.reports.metrics import EXCLUDED_TERMINATIONS, average_reward, pass_hat_ks, task_counts

METRICS = ("pass^1", "pass^k", "avg_reward")
# Floating-point slack so that a drop of exactly --max-drop (0.3 - 0.2 = 0.09999…) is not "more than".
_TOLERANCE = 1e-9


class Verdict(StrEnum):
    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"


class ScoreComparison(BaseModel):
    metric: str
    k: int | None = None
    score: float | None = None
    baseline_score: float | None = None
    drop: float | None = None
    max_drop: float
    verdict: Verdict
    reason: str
    common_tasks: int = 0
    trials: int = 0
    baseline_trials: int = 0
    infrastructure_errors: int = 0
    baseline_infrastructure_errors: int = 0


def check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise ConfigError(f"unknown metric {metric!r} (choose from: {', '.join(METRICS)})")
    return metric


def _infra_errors(runs: list[SimulationRun]) -> int:
    return sum(run.termination_reason in EXCLUDED_TERMINATIONS for run in runs)


def _score(runs: list[SimulationRun], metric: str, k: int) -> float:
    if metric == "avg_reward":
        return average_reward(runs)
    return pass_hat_ks(task_counts(runs)).get(k, math.nan)


def compare_scores(run: Results, baseline: Results, metric: str, max_drop: float) -> ScoreComparison:
    """Score `run` and `baseline` on their common tasks; bad when the drop is more than `max_drop`."""
    check_metric(metric)
    base_ids = {sim.task_id for sim in baseline.simulations}
    common = [t for t in dict.fromkeys(sim.task_id for sim in run.simulations) if t in base_ids]
    mine = [sim for sim in run.simulations if sim.task_id in common]
    theirs = [sim for sim in baseline.simulations if sim.task_id in common]
    result = ScoreComparison(
        metric=metric, max_drop=max_drop, verdict=Verdict.SKIP, reason="", common_tasks=len(common),
        trials=len(mine), baseline_trials=len(theirs),
        infrastructure_errors=_infra_errors(mine), baseline_infrastructure_errors=_infra_errors(theirs),
    )
    if not common:
        result.reason = "the run and the baseline have no task in common"
        return result
    for name, errors, total in (("run", result.infrastructure_errors, len(mine)),
                                ("baseline", result.baseline_infrastructure_errors, len(theirs))):
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
    result.common_tasks = len(scored)
    k = 1
    if metric == "pass^k":
        # pass^k needs k trials of every task on both sides: the largest k that both runs have.
        k = min(len(pass_hat_ks(task_counts(mine))), len(pass_hat_ks(task_counts(theirs))))
        result.k = k
    elif metric == "pass^1":
        result.k = 1
    result.score, result.baseline_score = _score(mine, metric, k), _score(theirs, metric, k)
    result.drop = result.baseline_score - result.score
    bad = result.drop > max_drop + _TOLERANCE
    result.verdict = Verdict.BAD if bad else Verdict.GOOD
    result.reason = (
        f"{metric if metric != 'pass^k' else f'pass^{k}'} {result.score:.3f} vs baseline "
        f"{result.baseline_score:.3f} on {len(scored)} common task(s): "
        f"{'drop' if result.drop >= 0 else 'gain'} {abs(result.drop):.3f} "
        f"{'>' if bad else '<='} max drop {max_drop:g}"
    )
    return result
