"""When an adaptive comparison may stop: alpha spent equally over a planned number of looks (Bonferroni).

`run --until-decided` judges the candidate against the baseline after its first run and again after
each round of more trials, and stops at the first decided verdict. Checking a growing sample again
and again at the nominal level would be wrong: each look is another chance for the interval to miss,
and stopping at the first look that "decides" keeps exactly those misses (peeking). Measured in
tests/workflows/test_sequential.py (150 A/A pairs of 12 tasks at --max-drop 0, up to 5 looks):
peeking at 95% called 6.7% of them bad, over the 2.5% one side of a 95% interval allows; this
schedule called 1.3% bad.

Method: at most `looks` looks, fixed before any data are seen. Look l (any l) uses check's paired
bootstrap interval of the drop (reports/regression.py) at confidence 1 - alpha / looks, where
1 - alpha is `--confidence`, and the verdict rule of check (bad: the whole interval above
--max-drop; good: all of it at or below; else undecided).

Why the error rate holds under optional stopping: a verdict is wrong only if the interval of the
look it was made at misses the true drop. Whatever rule picks the look we stop at (decided, budget
reached, out of looks) and however the trials added between looks were chosen from the data seen,
that event lies inside the union of the per-look miss events, and by Boole's inequality
P(union) <= looks x alpha / looks = alpha. This needs no independence between looks and no model of
the stopping rule, only that the number of looks is fixed in advance (hence a constant, not a
flag a run could raise after peeking). Its price is width, not validity: with 5 looks at 95% each
look is a 99% interval, and since the looks are strongly correlated the true error rate is well
under alpha.

Why not a sequential test over trials (mixture SPRT, a betting confidence sequence): those are
anytime-valid for a stream of independent draws, but the unit here is the task (as in check's
bootstrap and sign-flip test, paired.py says why): the trials of one task share its difficulty,
and the estimand is a mean over the compared tasks whose rates sharpen unevenly (the extra trials go
to the uncertain tasks). A stream over trials would count them as independent, as McNemar does.

What it rests on: each look's interval is check's paired bootstrap over tasks, widened for the
number of tasks (Student's t instead of the normal, reports/paired.py `IntervalMethod.EXPANDED`): the plain
percentile interval covers 93-95% at 95% with 60 tasks (bench/README.md) and much less with a dozen,
which the looks would compound. And a task's pass rate after extra trials chosen from the data is a
slightly biased estimate. The test
measures the error rate of this exact loop on seeded Bernoulli agents, and
bench/check_calibration.py on the calibration populations.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from tauproxy.data_model.result import Results
from tauproxy.reports.paired import IntervalMethod
from tauproxy.reports.regression import ScoreComparison, compare_scores

# Looks planned: the first run and four rounds of more trials (with doubling rounds, 4 -> 64 trials
# on the tasks that need them).
DEFAULT_LOOKS = 5
# More resamples than check's 2000: each look's interval is a 99% one, whose tails are 10 draws at 2000.
LOOK_RESAMPLES = 4000


class LookSchedule(BaseModel):
    """The planned looks and the confidence each one is judged at."""

    confidence: float = Field(gt=0.0, lt=1.0)  # overall, over every look
    looks: int = Field(default=DEFAULT_LOOKS, ge=1)

    @property
    def per_look(self) -> float:
        """Each look's confidence: alpha shared equally (Bonferroni)."""
        return 1.0 - (1.0 - self.confidence) / self.looks


def judge_look(
    candidate: Results,
    baseline: Results,
    schedule: LookSchedule,
    max_drop: float,
    seed: int = 0,
    metric: str = "pass^1",
) -> ScoreComparison:
    """The verdict at one look: check's rule at the look's confidence, every trial of a task kept (the
    added trials have seeds the baseline never ran, so seed matching would drop them), the interval
    widened for the number of tasks (reports/paired.py: a percentile interval over a dozen tasks
    covers well under its level, and five looks would multiply the shortfall)."""
    return compare_scores(
        candidate,
        baseline,
        metric,
        max_drop,
        confidence=schedule.per_look,
        seed=seed,
        match_seeds=False,
        resamples=LOOK_RESAMPLES,
        interval=IntervalMethod.EXPANDED,
        advise=False,
    )
