"""`run --against BASE --until-decided --max-cost USD`: more trials only where they decide the verdict.

The loop: run the candidate with its configured trials; judge it against the baseline
(workflows/sequential.py: check's paired verdict at a per-look confidence that keeps the error rate
under optional stopping); while the verdict is undecided, the budget allows and looks remain, add
trials to the tasks where one more trial changes the verdict most (workflows/task_choice.py) and
judge again. It stops at the first decided verdict (good or bad, as check), when the budget cannot pay
one more trial, when the planned looks are used up (then undecided), when more trials of the
candidate alone would most likely not decide it (futile: the baseline's own trial noise and the
spread between tasks keep the interval straddling --max-drop), or when the runner stops.

Every trial is an ordinary trial of the candidate's run: the added ones take the next trial indices
of their task with the seeds the run's seed gives those indices, in the same run directory and
cassette. So the cassette records them, and a rerun of the same command retraces the same rounds
(the data replay identically, so the verdicts and the choices repeat) and replays everything for free;
with the same --save-to nothing runs at all.

Budget: `max_cost` bounds the recorded cost of the candidate's trials (live or replayed, at their
recorded prices), not only this run's live spend: that is what makes a rerun retrace the same rounds
instead of spending its replayed savings on new ones. Each round is cut to what the remaining budget
pays at the mean recorded cost of a trial so far, and the runner's own --max-cost guard is handed the
remaining budget as a hard stop on live spend within the round. An unknown price stops the loop
(a bound cannot be kept). A model at $0 is bounded by the looks and the per-task trial limit only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel

from tauproxy.data_model.result import Results, SimulationRun, TerminationReason
from tauproxy.reports.paired import trial_cost
from tauproxy.reports.regression import ScoreComparison, Verdict
from tauproxy.runner.config import RunConfig
from tauproxy.runner.defaults import NUM_TRIALS_LIMIT
from tauproxy.runner.executor import RunStop
from tauproxy.runner.prepared import PreparedRun, ProgressCallback
from tauproxy.runner.run import execute_prepared, prepare
from tauproxy.workflows.sequential import LookSchedule, judge_look
from tauproxy.workflows.task_choice import candidate_noise_share, choose_tasks


class StopReason(BaseModel):
    kind: str  # decided | cannot test | futile | budget | looks | trial limit | unknown price | runner
    detail: str


class AdaptiveRound(BaseModel):
    """One look: the trials added before it (the first look: the whole first run) and its verdict."""

    look: int
    confidence: float  # the look's own confidence (workflows/sequential.py)
    tasks: list[str]  # the tasks that got trials this round
    trials_added: int
    trials: int  # the candidate's trials so far (infrastructure errors included)
    spend_usd: float | None  # recorded cost of the candidate's trials so far; None: a price is unknown
    live_usd: float | None  # of which went live when run (a trial resumed from --save-to keeps how it ran)
    verdict: Verdict
    drop: float | None
    drop_ci: tuple[float, float] | None


class AdaptiveOutcome(BaseModel):
    rounds: list[AdaptiveRound]
    final: ScoreComparison
    stop: StopReason
    looks_planned: int
    confidence: float
    max_cost: float | None
    spend_usd: float | None
    live_usd: float | None
    trials: int
    mean_trials_per_task: float
    runner_stop: str | None = None  # the runner's StopKind value, when the runner stopped a round


@dataclass(frozen=True)
class SourceOutcome:
    results: Results
    stop: RunStop | None = None
    warnings: list[str] = field(default_factory=list)


class TrialSource(Protocol):
    """Runs the candidate with `plan[task]` trials of each task (those already run are kept, not rerun),
    live spend held to `budget` USD; the runner below, or simulated agents in tests and bench."""

    def run(self, plan: Mapping[str, int], budget: float | None) -> SourceOutcome: ...


@dataclass(frozen=True)
class AdaptiveSettings:
    max_drop: float
    schedule: LookSchedule  # the planned looks and each one's confidence
    max_cost: float | None
    max_trials: int = NUM_TRIALS_LIMIT
    seed: int = 0  # of the paired bootstrap
    stop_futile: bool = True  # off: look on while looks remain (tests of the sequential method)

    @property
    def looks(self) -> int:
        return self.schedule.looks


def recorded_spend(simulations: list[SimulationRun]) -> float | None:
    """The recorded cost of these trials, live or replayed; None when any price is unknown."""
    total = 0.0
    for run in simulations:
        cost = trial_cost(run)
        if cost is None:
            return None
        total += cost
    return total


def live_spend(simulations: list[SimulationRun]) -> float | None:
    costs = [call.cost_usd for run in simulations for call in run.calls if call.source == "live"]
    if any(cost is None for cost in costs):
        return None
    return sum(cost for cost in costs if cost is not None)


def until_decided(
    source: TrialSource,
    baseline: Results,
    initial: Mapping[str, int],
    settings: AdaptiveSettings,
    on_round: Callable[[AdaptiveRound], None] | None = None,
) -> AdaptiveOutcome:
    """Run, judge, and add trials where they matter until decided, out of budget or out of looks."""
    schedule = settings.schedule
    plan = dict(initial)
    added = dict(initial)
    rounds: list[AdaptiveRound] = []
    while True:
        spent_before = _spend_of(rounds)
        budget = None if settings.max_cost is None else max(0.0, settings.max_cost - (spent_before or 0.0))
        outcome = source.run(plan, budget)
        simulations = outcome.results.simulations
        verdict = judge_look(outcome.results, baseline, schedule, settings.max_drop, settings.seed)
        spend, live = recorded_spend(simulations), live_spend(simulations)
        rounds.append(
            AdaptiveRound(
                look=len(rounds) + 1,
                confidence=schedule.per_look,
                tasks=sorted(added, key=list(plan).index),
                trials_added=sum(added.values()),
                trials=len(simulations),
                spend_usd=spend,
                live_usd=live,
                verdict=verdict.verdict,
                drop=verdict.drop,
                drop_ci=verdict.drop_ci,
            )
        )
        if on_round is not None:
            on_round(rounds[-1])
        stop = _stop(outcome, verdict, len(rounds), settings)
        if stop is None:
            added, stop = _next_round(verdict, outcome.results, settings, spend)
        if stop is not None:
            return _outcome(rounds, verdict, stop, settings, outcome)
        for task, more in added.items():
            plan[task] += more


def _spend_of(rounds: list[AdaptiveRound]) -> float | None:
    return rounds[-1].spend_usd if rounds else 0.0


def _stop(
    outcome: SourceOutcome, verdict: ScoreComparison, looks: int, settings: AdaptiveSettings
) -> StopReason | None:
    if outcome.stop is not None:
        return StopReason(kind="runner", detail=outcome.stop.reason)
    if verdict.verdict in (Verdict.GOOD, Verdict.BAD):
        return StopReason(kind="decided", detail=f"decided at look {looks} of {settings.looks}")
    if verdict.verdict is Verdict.SKIP:
        return StopReason(kind="cannot test", detail=verdict.reason)
    if (
        settings.stop_futile
        and verdict.paired is not None
        and verdict.drop_ci is not None
        and _futile(verdict, settings.max_drop)
    ):
        return StopReason(
            kind="futile",
            detail="more trials of this run alone would most likely not decide it: "
            "without its own trial noise the interval would still straddle --max-drop (the "
            "baseline's trials and the spread between tasks remain); give the baseline more "
            "trials, compare on more tasks or revisit --max-drop",
        )
    if looks >= settings.looks:
        return StopReason(
            kind="looks",
            detail=f"still undecided after all {settings.looks} planned looks "
            "(a later look would break the error-rate guarantee); more tasks or a looser "
            "--max-drop may decide it",
        )
    return None


def _futile(verdict: ScoreComparison, max_drop: float) -> bool:
    """Whether even endless candidate trials would leave the interval straddling `max_drop` by a wide
    margin: the threshold within the inner half of the interval that would remain around the same
    centre (task_choice.candidate_noise_share). The margin because the centre moves as trials are
    added. Stopping for it is one more stopping rule, which the Bonferroni looks allow
    (workflows/sequential.py)."""
    assert verdict.paired is not None and verdict.drop_ci is not None
    low, high = verdict.drop_ci
    centre, half = (low + high) / 2, (high - low) / 2
    floor = half * math.sqrt(1.0 - candidate_noise_share(verdict.paired.per_task))
    return abs(centre - max_drop) < floor / 2


def _next_round(
    verdict: ScoreComparison, results: Results, settings: AdaptiveSettings, spend: float | None
) -> tuple[dict[str, int], StopReason | None]:
    """The next round's trials per task, cut to the budget; or why there is no next round."""
    assert verdict.paired is not None  # an undecided verdict always has its comparison
    choices = choose_tasks(verdict.paired.per_task, settings.max_trials)
    if not choices:
        return {}, StopReason(kind="trial limit", detail=f"every task has {settings.max_trials} trials")
    affordable = math.inf
    if settings.max_cost is not None:
        if spend is None:
            return {}, StopReason(
                kind="unknown price",
                detail=f"a trial's price is unknown; --max-cost {settings.max_cost:g} cannot be kept",
            )
        mean = spend / max(1, len(results.simulations))
        if mean > 0:
            affordable = math.floor((settings.max_cost - spend) / mean + 1e-9)
    if affordable < 1:
        return {}, StopReason(
            kind="budget",
            detail=f"${spend or 0.0:.4f} of --max-cost ${settings.max_cost:.4f} spent: one more trial would pass it",
        )
    added: dict[str, int] = {}
    for choice in choices:
        take = int(min(choice.add, affordable))
        if take < 1:
            break
        added[choice.task_id] = take
        affordable -= take
    return added, None


def _outcome(
    rounds: list[AdaptiveRound],
    final: ScoreComparison,
    stop: StopReason,
    settings: AdaptiveSettings,
    outcome: SourceOutcome,
) -> AdaptiveOutcome:
    simulations = outcome.results.simulations
    tasks = {run.task_id for run in simulations}
    counted = [run for run in simulations if run.termination_reason != TerminationReason.INFRASTRUCTURE_ERROR]
    return AdaptiveOutcome(
        rounds=rounds,
        final=final,
        stop=stop,
        looks_planned=settings.looks,
        confidence=settings.schedule.confidence,
        max_cost=settings.max_cost,
        spend_usd=rounds[-1].spend_usd,
        live_usd=rounds[-1].live_usd,
        trials=len(simulations),
        mean_trials_per_task=len(counted) / len(tasks) if tasks else 0.0,
        runner_stop=outcome.stop.kind.value if outcome.stop is not None else None,
    )


class RunnerTrials:
    """The candidate's run on the runner: each round prepares the same config with the plan's trials
    (PreparedRun.with_trials) and runs what is not finished yet."""

    def __init__(self, config: RunConfig, progress: ProgressCallback | None = None) -> None:
        self.config = config
        self.progress = progress
        self._first: PreparedRun | None = prepare(config)  # checks everything, models included, once
        self.task_ids = [task.id for task in self._first.tasks]
        self._known: dict[str, SimulationRun] = {}

    def initial_plan(self) -> dict[str, int]:
        return {task_id: self.config.num_trials for task_id in self.task_ids}

    def run(self, plan: Mapping[str, int], budget: float | None) -> SourceOutcome:
        if self._first is not None:  # the first round: the run as configured
            prepared, self._first = self._first, None
        else:
            config = self.config.model_copy(update={"num_trials": max(plan.values()), "max_cost": budget})
            prepared = prepare(config, preflight=False)  # the models were checked in __init__
        outcome = execute_prepared(prepared.with_trials(plan, self._known), self.progress)
        self._known.update(
            {
                run.id: run
                for run in outcome.results.simulations
                if run.termination_reason != TerminationReason.INFRASTRUCTURE_ERROR
            }
        )
        return SourceOutcome(outcome.results, outcome.stop, outcome.warnings)
