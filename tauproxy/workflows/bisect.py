"""Binary search over ordered agent configs for the first whose score drops below the first config's.

The first config is the baseline ("good" by definition); a config is "bad" when its score on the
tasks both runs share drops below the baseline's by more than `max_drop`. The last config is
evaluated right after the first: if it is not bad there is nothing to find. Otherwise the search
keeps a good config below and a bad one above, and halves the gap, so n configs cost at most
2 + ceil(log2(n - 1)) runs. A config that cannot be tested (mostly infrastructure errors) is
skipped like `git bisect skip`, and its neighbour is tried instead.

With a cassette in auto mode, every call an earlier step already made is replayed, so a step pays
only for the calls its config changes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from tauproxy.data_model.result import Results
from tauproxy.errors import ConfigError
from tauproxy.reports.costs import cost_summary
from tauproxy.reports.regression import Verdict, check_metric, compare_scores
from tauproxy.runner.config import RunConfig
from tauproxy.runner.run import execute

# Builds the run of one step: (agent config file, where to save the run or None) -> RunConfig.
ConfigFactory = Callable[[Path, Path | None], RunConfig]


class StepCost(BaseModel):
    """What one step's new trials cost; usd None means every priced call had an unknown price."""

    live_usd: float | None
    live_unknown_price_calls: int
    live_calls: int
    saved_usd: float | None
    saved_unknown_price_calls: int
    replayed_calls: int
    # Answered by the step's own live call to an identical sample (not in saved_usd: no replay).
    shared_calls: int = 0


class BisectStep(BaseModel):
    position: int  # 1-based, in the order the configs were given
    config: str
    run_dir: str | None
    score: float | None
    baseline_score: float | None
    drop: float | None
    verdict: Verdict
    reason: str
    new_trials: int
    resumed_trials: int
    cost: StepCost
    warnings: list[str]


class BisectResult(BaseModel):
    metric: str
    max_drop: float
    configs: list[str]
    status: Literal["found", "last_not_bad", "ambiguous"]
    first_bad: str | None
    first_bad_position: int | None
    # With skipped configs the first bad one is only known to be among these.
    candidates: list[str]
    evaluations: int
    evaluations_beyond_endpoints: int
    steps: list[BisectStep]
    message: str


def run_names(configs: list[Path]) -> list[str]:
    """Each config's run directory name: its file stem, with -2, -3 ... where stems repeat."""
    names: list[str] = []
    for path in configs:
        name, number = path.stem, 2
        while name in names:
            name, number = f"{path.stem}-{number}", number + 1
        names.append(name)
    return names


def _cost(results: Results, new_ids: set[str]) -> StepCost:
    cost = cost_summary([run for run in results.simulations if run.id in new_ids])
    live, replayed = cost.live, cost.replayed
    return StepCost(
        live_usd=cost.live_usd,
        live_unknown_price_calls=live.unknown_price_calls,
        live_calls=live.calls,
        saved_usd=cost.replayed_usd,
        saved_unknown_price_calls=replayed.unknown_price_calls,
        replayed_calls=replayed.calls,
        shared_calls=cost.shared.calls,
    )


class _Search:
    def __init__(
        self,
        configs: list[Path],
        factory: ConfigFactory,
        metric: str,
        max_drop: float,
        runs_dir: Path | None,
        on_step: Callable[[BisectStep], None] | None,
    ) -> None:
        self.configs, self.factory, self.metric, self.max_drop = configs, factory, metric, max_drop
        self.runs_dir, self.on_step = runs_dir, on_step
        self.names = run_names(configs)
        self.baseline: Results | None = None
        self.steps: list[BisectStep] = []

    def evaluate(self, index: int) -> BisectStep:
        path = self.configs[index]
        save_to = self.runs_dir / self.names[index] if self.runs_dir else None
        outcome = execute(self.factory(path, save_to))
        if outcome.stopped_reason:
            # A budget stop would leave every later step partial too: stop the search, keep what ran.
            raise ConfigError(f"{path}: {outcome.stopped_reason}")
        results = outcome.results
        if self.baseline is None:
            self.baseline = results
        comparison = compare_scores(results, self.baseline, self.metric, self.max_drop)
        new_ids = {run.id for run in outcome.new_runs}
        step = BisectStep(
            position=index + 1,
            config=str(path),
            run_dir=str(save_to) if save_to else None,
            score=comparison.score,
            baseline_score=comparison.baseline_score,
            drop=comparison.drop,
            verdict=comparison.verdict,
            reason=comparison.reason,
            new_trials=len(new_ids),
            resumed_trials=len(results.simulations) - len(new_ids),
            cost=_cost(results, new_ids),
            warnings=outcome.warnings,
        )
        self.steps.append(step)
        if self.on_step:
            self.on_step(step)
        return step


def bisect_configs(
    configs: list[Path],
    factory: ConfigFactory,
    metric: str = "pass^1",
    max_drop: float = 0.05,
    runs_dir: Path | None = None,
    on_step: Callable[[BisectStep], None] | None = None,
) -> BisectResult:
    check_metric(metric)
    if len(configs) < 2:
        raise ConfigError("bisect needs at least two configs: the known-good first and a later one")
    search = _Search(configs, factory, metric, max_drop, runs_dir, on_step)
    last = len(configs) - 1
    first_step = search.evaluate(0)
    if first_step.verdict is Verdict.SKIP:
        raise ConfigError(f"the first config cannot serve as the baseline: {first_step.reason}")
    end_step = search.evaluate(last)
    if end_step.verdict is Verdict.SKIP:
        raise ConfigError(f"the last config cannot be tested: {end_step.reason}")
    if end_step.verdict is Verdict.UNDECIDED:
        raise ConfigError(f"cannot tell yet whether the last config is bad: {end_step.reason}")

    def result(
        status: Literal["found", "last_not_bad", "ambiguous"], bad: int | None, candidates: list[int], message: str
    ) -> BisectResult:
        return BisectResult(
            metric=metric,
            max_drop=max_drop,
            configs=[str(p) for p in configs],
            status=status,
            first_bad=str(configs[bad]) if bad is not None else None,
            first_bad_position=bad + 1 if bad is not None else None,
            candidates=[str(configs[i]) for i in candidates],
            evaluations=len(search.steps),
            evaluations_beyond_endpoints=len(search.steps) - 2,
            steps=search.steps,
            message=message,
        )

    if end_step.verdict is Verdict.GOOD:
        return result("last_not_bad", None, [], f"the last config ({configs[last].name}) is not bad: {end_step.reason}")
    good, bad = 0, last
    skipped: set[int] = set()
    while True:
        untried = [i for i in range(good + 1, bad) if i not in skipped]
        if not untried:
            break
        middle = (good + bad) // 2
        pick = min(untried, key=lambda i: (abs(i - middle), i))  # nearest the middle, like git bisect skip
        verdict = search.evaluate(pick).verdict
        if verdict in (Verdict.SKIP, Verdict.UNDECIDED):  # undecided: cannot tell yet, like git's skip
            skipped.add(pick)
        elif verdict is Verdict.BAD:
            bad = pick
        else:
            good = pick
    unknown = sorted(i for i in skipped if good < i < bad)
    if unknown:
        names = ", ".join(configs[i].name for i in [*unknown, bad])
        return result(
            "ambiguous",
            None,
            [*unknown, bad],
            f"the first bad config is one of {names} (the others could not be tested)",
        )
    return result(
        "found",
        bad,
        [bad],
        f"first bad config: {configs[bad].name} (#{bad + 1} of {len(configs)}), after {len(search.steps)} evaluations",
    )
