"""The report of a results file: `ReportSummary`, whose JSON dump is the `report --json` contract.

Keys are only ever added, never renamed. Money that is not known is None ("unknown"), never 0; a
number that is not defined (the average reward when no run counts) is NaN here and null in JSON.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, PlainSerializer

from tauproxy.data_model.result import ModelInfo, Results
from tauproxy.data_model.task import RewardType
from tauproxy.reports.costs import CostSummary
from tauproxy.reports.grid import GridRow
from tauproxy.reports.metrics import BasisMean, TaskCount, bootstrap_pass_hat_k_ci, pass_hat_ks
from tauproxy.reports.notebook import facts, pass_line, table, usd
from tauproxy.reports.tally import RunTally
from tauproxy.results.provenance import Origin, made_by_of, notes_of, origin_of, sources_of, task_order


def _nan_as_null(value: float) -> float | None:
    return None if math.isnan(value) else value


def _null_as_nan(value: object) -> object:
    return math.nan if value is None else value


# JSON has no NaN (json.dumps would write the invalid token NaN), so a float that may be undefined
# is null in the JSON dump, stays NaN for the readers that format it, and reads back from null as NaN.
NanAsNull = Annotated[
    float,
    BeforeValidator(_null_as_nan),
    PlainSerializer(_nan_as_null, return_type=float | None, when_used="json"),
]


class CallCounts(BaseModel):
    """Where the calls' answers came from: the provider, the cassette, or this run's own live answer
    to an identical sample (shared; 0 in reports made before it was counted apart)."""

    live: int
    replayed: int
    shared: int = 0

    def text(self) -> str:
        """`60 live / 4 replayed / 2 shared`: how every printout names them."""
        return f"{self.live} live / {self.replayed} replayed / {self.shared} shared"

    @property
    def any(self) -> bool:
        return bool(self.live or self.replayed or self.shared)


class RoleModels(BaseModel):
    agent: ModelInfo
    user: ModelInfo
    judge: ModelInfo

    def by_role(self) -> list[tuple[str, ModelInfo]]:
        return [("agent", self.agent), ("user", self.user), ("judge", self.judge)]


class ReportSummary(BaseModel):
    """What `report` shows, for the terminal, the HTML page and --json alike; field order is key order."""

    domain: str
    # Keyed by k (JSON writes the keys as strings, "1"; reading them back gives ints); k runs 1..num_trials.
    pass_hat_k: dict[int, float]
    pass_hat_k_ci: dict[int, tuple[float, float]]
    num_tasks: int
    # The fewest trials any task has: the largest k that pass^k is defined for.
    num_trials: int
    avg_reward: NanAsNull
    tasks: list[TaskCount]
    # All runs, counted and excluded.
    termination_reasons: dict[str, int]
    excluded_simulations: int
    excluded_reasons: dict[str, int]
    reward_breakdown: dict[RewardType, BasisMean]
    grid: list[GridRow]
    calls: CallCounts
    cost: CostSummary
    models: RoleModels
    price_source: str | None
    tauproxy_version: str
    domain_sha256: str
    seed: int
    trial_seeds: list[int]
    origin: Origin
    sources: list[str]
    notes: list[str]
    # What wrote the results, for headers: "tauproxy 0.1.0", or "τ²-bench (git 1a2b3c)" for its files.
    made_by: str

    def __repr__(self) -> str:
        """One line for a notebook or a log: pydantic's repr would print every field (pages)."""
        return (
            f"<ReportSummary {self.domain}: {self.num_tasks} tasks x {self.num_trials} trials, "
            f"{pass_line(self.pass_hat_k)}, live {usd(self.cost.live_usd)}, saved {usd(self.cost.replayed_usd)}>"
        )

    __str__ = __repr__  # print() too: pydantic's str is its field list, every field

    def _repr_html_(self) -> str:
        """The pass^k table with intervals and the facts a reader acts on, for Jupyter."""
        intervals = self.pass_hat_k_ci
        rows = [
            (f"pass^{k}", f"{value:.3f}", "{:.3f} – {:.3f}".format(*intervals[k]) if k in intervals else "-")
            for k, value in self.pass_hat_k.items()
        ]
        shown = [
            ("domain", self.domain),
            ("tasks x trials", f"{self.num_tasks} x {self.num_trials}"),
            ("agent", self.models.agent.llm),
            ("user", self.models.user.llm),
            ("calls", f"{self.calls.live} live, {self.calls.replayed} replayed, {self.calls.shared} shared"),
            ("cost live", usd(self.cost.live_usd)),
            ("saved by replay", usd(self.cost.replayed_usd)),
            ("prices", self.price_source or "unknown"),
            ("made by", self.made_by),
        ]
        if self.excluded_simulations:
            shown.append(("excluded (infrastructure)", str(self.excluded_simulations)))
        return table(("", "estimate", "95% interval"), rows) + facts(shown)


def summarize(results: Results) -> ReportSummary:
    tally = RunTally(task_order(results))
    for run in results.simulations:
        tally.add(run)
    return summary_of(results, tally)


def summary_of(results: Results, tally: RunTally) -> ReportSummary:
    """The report of `results`' trials as `tally` counted them; of `results` only the run's settings
    and provenance are read, so a run that streamed its trials into the tally passes them without."""
    counts = tally.task_counts()
    info = results.info
    terminations = tally.termination_counts()
    calls = tally.calls()
    return ReportSummary(
        domain=info.domain,
        pass_hat_k=pass_hat_ks(counts),
        pass_hat_k_ci=bootstrap_pass_hat_k_ci(counts),
        num_tasks=len(counts),
        num_trials=min((c.trials for c in counts), default=0),
        avg_reward=tally.average_reward(),
        tasks=counts,
        termination_reasons=dict(sorted({**terminations.counted, **terminations.excluded}.items())),
        excluded_simulations=sum(terminations.excluded.values()),
        excluded_reasons=terminations.excluded,
        reward_breakdown=tally.reward_breakdown(),
        grid=tally.grid(),
        calls=CallCounts(live=calls["live"], replayed=calls["replay"], shared=calls["shared"]),
        cost=_costs(tally),
        models=RoleModels(agent=info.agent_info, user=info.user_info, judge=info.judge_info),
        price_source=info.price_source,
        tauproxy_version=info.tauproxy_version,
        domain_sha256=info.domain_sha256,
        seed=info.seed,
        trial_seeds=list(info.trial_seeds),
        origin=origin_of(results),
        sources=sources_of(results),
        notes=notes_of(results),
        made_by=made_by_of(results),
    )


def _costs(tally: RunTally) -> CostSummary:
    cost = tally.costs()
    if tally.trials and not tally.has_call_records:
        # No call records at all (a τ²-bench file): whether money was spent live or replayed is
        # unknown, and must not read as $0.
        return cost.model_copy(update={"live_usd": None, "replayed_usd": None})
    return cost
