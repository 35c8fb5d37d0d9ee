"""Predict calls, tokens and cost of a planned run before launching it.

1. Cassette (exact): each planned trial is replayed against the cassette until its first miss, by
   the runner's own trial function (so a tau2/ domain's trial runs τ²-bench's engine, as in `run`).
   Those calls will be served from the cassette, with their recorded usage. A trial that replays to
   its end without a miss is covered: it predicts no live call and $0, whatever the history or the
   prior says (steps 2 and 3 price only the trials, and the parts of trials, the cassette misses).
   A trial that misses at call s goes on live from there, at least that one call.
2. History (statistical): the rest of each trial is drawn from earlier runs of the domain — the
   same task's trials when the history has it; for a task it never saw, another task's trials
   rescaled to a size drawn from the predictive of task sizes (`_TwoLevel` says how and why) — with
   the calls beyond the replayed prefix costed at the TARGET models' prices and rescaled by
   tokeniser family. Many seeded draws give the p50 and p90. The p90's coverage is measured, not
   assumed: on random halvings of the history's tasks, one half predicts the other (`p90_coverage`),
   and the estimate reports the share of halvings its p90 covered. A history run is anything
   `report` reads: a tauproxy run gives its call records; a τ²-bench file, which keeps none, gives
   the calls its messages show (their usage).
3. No history: a prior from the sizes of the policy, tools and instructions and calls per trial from
   each task's expected actions, labelled low-confidence.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tauproxy.data_model.call import CallRole, ModelCall, Usage
from tauproxy.data_model.completion import Completion
from tauproxy.errors import ReplayMissError
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.transport import Transport
from tauproxy.results.load import load_any_results
from tauproxy.results.provenance import observed_calls_of
from tauproxy.runner.config import RunConfig
from tauproxy.runner.estimate_actions import EVERY_ACTION, ActionShare, action_share
from tauproxy.runner.prepared import PreparedRun
from tauproxy.runner.run import prepare
from tauproxy.runner.trial import TrialSpec, run_trial

ROLES: tuple[CallRole, ...] = ("agent", "user", "judge")
DRAWS = 4000
# Relative tokens per character by tokeniser family; history is rescaled when the family changes.
TOKENISER_FAMILIES = {"openai": 1.0, "anthropic": 1.12, "gemini": 0.95, "mistral": 1.08, "local": 1.05, "scripted": 1.0}
# The no-history prior's calls per trial, from the task's expected actions (its evaluation criteria):
# the agent makes one call per action it takes, one per action it talks the user through (dual
# control) and one to answer; the user opens, confirms and ends (PRIOR_USER_TURNS) and makes one call
# per action of its own, plus the turns the agent's guidance costs. Actions count by the share the
# agent performs (runner/estimate_actions.py: an agent that skips half its actions ends early). Set
# against every shipped pack in bench/estimate_error.py, where the prior's cost is within 1.5x of the
# actual for agents that skip none, a fifth and half of their actions (docs/benchmarks.md).
PRIOR_AGENT_CALLS_PER_AGENT_ACTION = 1.0
PRIOR_AGENT_CALLS_PER_USER_ACTION = 0.8
PRIOR_AGENT_CALLS_EXTRA = 1.0
PRIOR_USER_TURNS = 2.0
PRIOR_USER_CALLS_PER_USER_ACTION = 1.5
PRIOR_COMPLETION_TOKENS = {"agent": 80, "user": 30, "judge": 60}
# Tokens a turn adds to the conversation that every later call carries.
PRIOR_TOKENS_PER_TURN = 60


def tokeniser_family(model: str) -> str:
    lowered = model.lower()
    for family, needles in (
        ("anthropic", ("claude", "anthropic")),
        ("gemini", ("gemini",)),
        ("mistral", ("mistral",)),
        ("local", ("local/",)),
        ("scripted", ("scripted/",)),
    ):
        if any(n in lowered for n in needles):
            return family
    return "openai"


@dataclass
class RoleEstimate:
    calls_p50: float = 0.0
    calls_p90: float = 0.0
    tokens_p50: float = 0.0
    tokens_p90: float = 0.0
    cost_p50: float | None = 0.0
    cost_p90: float | None = 0.0
    replayed_calls: int = 0
    replayed_cost: float = 0.0


@dataclass
class Estimate:
    trials: int
    confidence: str
    basis: str
    roles: dict[str, RoleEstimate] = field(default_factory=dict)
    live_cost_p50: float | None = 0.0
    live_cost_p90: float | None = 0.0
    replayed_calls: int = 0
    replayed_cost: float = 0.0
    unknown_price_models: list[str] = field(default_factory=list)
    price_source: str = ""
    # Measured, not assumed: see the module docstring. None when the history has under 4 tasks.
    p90_coverage: float | None = None
    coverage_checks: int = 0
    coverage_of: str = ""


@dataclass(frozen=True)
class ReplayedCall:
    role: CallRole
    usage: Usage
    model: str


@dataclass
class CassettePrefix:
    """What the cassette serves of one planned trial: its calls up to the first miss, and the role of
    the call that missed (None: the trial replays to its end, so it is covered and costs nothing live)."""

    hits: list[ReplayedCall] = field(default_factory=list)
    missed: CallRole | None = None

    @property
    def covered(self) -> bool:
        return self.missed is None

    def hits_of(self, role: CallRole) -> int:
        return sum(1 for hit in self.hits if hit.role == role)


Prefixes = dict[str, CassettePrefix]


def prefix_of(prefixes: Prefixes, spec: TrialSpec) -> CassettePrefix:
    """The trial's prefix; a trial with no cassette to replay from goes live from its first call."""
    return prefixes.get(spec.run_id) or CassettePrefix(missed="agent")


@dataclass
class _Probe:
    """Replays one trial against the cassette, counting hits, until the first miss."""

    inner: Transport
    prefix: CassettePrefix = field(default_factory=CassettePrefix)

    def complete(self, call: ModelCall) -> Completion:
        try:
            completion = self.inner.complete(call)
        except ReplayMissError:
            self.prefix.missed = call.role
            raise
        self.prefix.hits.append(ReplayedCall(call.role, completion.usage, call.model))
        return completion

    def close(self) -> None:
        return None


def replayable_prefixes(run: PreparedRun, cassette: Path | None) -> Prefixes:
    """Per planned trial (by run id), what the cassette serves of it; {} without a cassette."""
    if cassette is None or not (cassette / "calls.jsonl").exists():
        return {}
    from tauproxy.proxy.modes import RecordMode
    from tauproxy.proxy.recorder import CassetteTransport
    from tauproxy.store.cassette import Cassette

    replay = CassetteTransport(Cassette.open(cassette, create=False), RecordMode.REPLAY, None, run.pricing)
    prefixes = {}
    try:
        for spec in run.specs:
            probe = _Probe(replay)
            with contextlib.suppress(ReplayMissError):  # the first miss ends the exact part of the trial
                run_trial(spec, run.pack, run.config, probe, run.pricing)
            prefixes[spec.run_id] = probe.prefix
    finally:
        replay.close()
    return prefixes


@dataclass(frozen=True)
class _PastCall:
    role: CallRole
    model: str
    usage: Usage


@dataclass(frozen=True)
class _PastTrial:
    task_id: str
    calls: list[_PastCall]  # in call order


def history_trials(paths: list[Path]) -> list[_PastTrial]:
    """Each earlier trial with calls: its call records, else the calls its messages show (τ²-bench)."""
    trials: list[_PastTrial] = []
    for path in paths:
        results = load_any_results(path)
        observed = observed_calls_of(results)
        for sim in results.simulations:
            calls = [_PastCall(c.role, c.model, c.usage) for c in sorted(sim.calls, key=lambda c: c.index)]
            if not calls:
                calls = [_PastCall(o.role, o.model, o.usage) for o in observed.get(sim.id, [])]
            if calls:
                trials.append(_PastTrial(sim.task_id, calls))
    return trials


class _Coster:
    def __init__(self, config: RunConfig, pricing: Pricing) -> None:
        self.models = {"agent": config.agent.model, "user": config.user.model, "judge": config.judge.model}
        self.pricing = pricing
        self.unknown: set[str] = set()

    def call(self, call: _PastCall) -> tuple[int, float | None]:
        target = self.models[call.role]
        scale = TOKENISER_FAMILIES[tokeniser_family(target)] / TOKENISER_FAMILIES[tokeniser_family(call.model)]
        usage = Usage(
            prompt_tokens=round(call.usage.prompt_tokens * scale),
            completion_tokens=round(call.usage.completion_tokens * scale),
            cached_tokens=round(call.usage.cached_tokens * scale),
        )
        cost = self.pricing.cost(target, usage)
        if cost.usd is None:
            self.unknown.add(target)
        return usage.prompt_tokens + usage.completion_tokens, cost.usd


def estimate(config: RunConfig, history: list[Path], cassette: Path | None, seed: int = 0) -> Estimate:
    plan_config = config.model_copy(update={"save_to": None, "cassette": None})
    run = prepare(plan_config, preflight=False)  # an estimate calls no model
    prefixes = replayable_prefixes(run, cassette)
    coster = _Coster(config, run.pricing)
    past = history_trials(history)
    result = _from_history(run.specs, past, prefixes, coster, seed) if past else _from_prior(run, prefixes, coster)
    result.price_source = run.pricing.source
    covered = all(prefix_of(prefixes, spec).covered for spec in run.specs)
    # A plan the cassette covers costs $0 live whatever the prices: nothing of it is priced.
    result.unknown_price_models = [] if covered else sorted(coster.unknown)
    if result.unknown_price_models:
        result.live_cost_p50 = result.live_cost_p90 = None
    return result


def _replayed(prefixes: Prefixes, coster: _Coster, est: Estimate) -> None:
    for prefix in prefixes.values():
        for hit in prefix.hits:
            cost = coster.pricing.cost(hit.model, hit.usage).usd or 0.0
            est.roles.setdefault(hit.role, RoleEstimate()).replayed_calls += 1
            est.roles[hit.role].replayed_cost += cost
            est.replayed_calls += 1
            est.replayed_cost += cost


COVERAGE_CHECKS = 40
COVERAGE_DRAWS = 500
# The excess kurtosis of log task sizes the spread's degrees of freedom assume at least (a logistic
# distribution has 1.2, a Laplace 3): set on held-out runs of the shipped packs (bench/estimate_error.py).
TASK_SIZE_KURTOSIS_FLOOR = 2.0


class _TwoLevel:
    """Per draw, a bootstrap of the history: its tasks, then each task's trials (global trial indices),
    and, for a task the history never saw, a size drawn from the predictive of task sizes.

    `sizes` (one per history trial, e.g. its tokens) give each history task a size, its trials' mean.
    A planned trial of a seen task is one of that task's trials, resampled. A planned task the history
    never saw gets, per draw, one stand-in history task (from the draw's resampled tasks) for all its
    trials, since trials of one task share its difficulty (its k trials move together: k^2 times a
    trial's share of the task variance, not k); its trials are the stand-in's, rescaled to a size drawn
    from a lognormal whose parameters are themselves drawn from their posterior given the history's
    task sizes (normal on the log scale: sigma^2 ~ df s^2 / chi2(df), mu ~ N(m, sigma^2 / n)). Why not
    the bootstrap alone: resampled tasks never reach past the largest task seen, and the mean of a few
    skewed sizes (costs are skewed) is mostly too low, so a bootstrap p90 covered 65-81%
    (bench/README.md); the predictive adds the pilot's own sampling error and the tail. The spread's
    degrees of freedom are n - 1 only for normal log sizes; real task sizes are heavier-tailed, so s^2
    of a few tasks is less certain than that: with df = n - 1 a p90 for unseen tasks covered 0.86-0.90
    on held-out runs, and a t interval of the tasks' mean cost 0.88-0.89 on the 60- and 44-task packs
    (a pilot's mean and spread move together). `_variance_dof` takes df from the kurtosis, at least
    TASK_SIZE_KURTOSIS_FLOOR. Without usable sizes (fewer than 2 tasks, a size of 0) the stand-in's
    trials are kept as they are.

    Trial noise. Resampling a task's own n trials spreads a planned trial by (n - 1) / n of the trial
    variance (half of it with 2 trials a task) and takes the task's mean as exact, so on held-out runs
    a p90 for new trials of seen tasks covered 74-82% (bench/estimate_error.py). With usable sizes, a
    planned trial's size is therefore its task's size times a residual drawn from every history task's
    trial / task-mean ratios, each widened about 1 by sqrt(n / (n - 1)) for its task's n trials; a seen
    task's size is its mean times the mean of n such residuals per draw (the error of a mean of n
    trials), shared by its planned trials. The drawn trial is kept for how its size splits into roles.
    """

    def __init__(
        self, past: list[_PastTrial], draws: int, rng: np.random.Generator, sizes: np.ndarray | None = None
    ) -> None:
        members: dict[str, list[int]] = defaultdict(list)
        for index, trial in enumerate(past):
            members[trial.task_id].append(index)
        self.tasks = list(members)
        self.draws, self.rng = draws, rng
        self.level1 = rng.integers(0, len(self.tasks), size=(draws, len(self.tasks)))
        # Each task's resampled trials side by side, one row a draw: task t's are columns
        # offsets[t] .. offsets[t] + counts[t], so a pick of any task in any draw is one index.
        self.counts = np.array([len(members[task]) for task in self.tasks])
        self.offsets = np.concatenate([[0], np.cumsum(self.counts)[:-1]])
        self.level2_all = np.concatenate(
            [
                np.asarray(members[task])[rng.integers(0, len(members[task]), size=(draws, len(members[task])))]
                for task in self.tasks
            ],
            axis=1,
        )
        self.level2 = [self.level2_all[:, o : o + n] for o, n in zip(self.offsets, self.counts, strict=True)]
        self.position = {task: i for i, task in enumerate(self.tasks)}
        self._stand_ins: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
        self._shifts: dict[int, np.ndarray] = {}
        self.task_sizes: np.ndarray | None = None
        self.sizes, self.residuals = sizes, _residuals(members, sizes)
        self.means = None if sizes is None else np.array([float(np.mean(sizes[members[t]])) for t in self.tasks])
        if sizes is not None and len(self.tasks) >= 2:
            task_sizes = np.array([float(np.mean(sizes[members[task]])) for task in self.tasks])
            # Equal sizes give sigma 0: the rescale would be 1 up to rounding, so it is left out.
            if (task_sizes > 0).all() and np.ptp(task_sizes) > 0:
                self.task_sizes = task_sizes
                logs = np.log(task_sizes)
                n = len(logs)
                df = _variance_dof(logs)
                self.sigma = np.sqrt(df * logs.var(ddof=1) / rng.chisquare(df, size=draws))
                self.mu = logs.mean() + self.sigma / np.sqrt(n) * rng.standard_normal(draws)

    def picks(self, task_id: str) -> tuple[np.ndarray, np.ndarray]:
        """For a planned trial of `task_id`: one history trial per draw, and the factor to scale it by."""
        rows = np.arange(self.draws)
        own = self.position.get(task_id)
        if own is not None:
            pool = self.level2[own]
            picks = pool[rows, self.rng.integers(0, pool.shape[1], size=self.draws)]
            if self.residuals is None or self.means is None:
                return picks, np.ones(self.draws)
            size = self.task_size(task_id)
            assert size is not None
            return picks, self._rescale(picks, size)
        chosen, drawn = self._stand_in(task_id)
        columns = self.offsets[chosen] + self.rng.integers(0, self.counts[chosen])
        picks = self.level2_all[rows, columns]
        if drawn is None:
            return picks, np.ones(self.draws)
        if self.residuals is None:
            assert self.task_sizes is not None
            return picks, drawn / self.task_sizes[chosen]
        return picks, self._rescale(picks, drawn)

    def task_size(self, task_id: str) -> np.ndarray | None:
        """Per draw, the size of `task_id` that all its planned trials share; None without sizes."""
        own = self.position.get(task_id)
        if own is None:
            return self._stand_in(task_id)[1]
        if self.residuals is None or self.means is None:
            return None
        shift = self._shifts.get(own)
        if shift is None:
            trials = self.level2[own].shape[1]
            shift = self._shifts[own] = self._residual((self.draws, trials)).mean(axis=1)
        size: np.ndarray = self.means[own] * shift
        return size

    def _stand_in(self, task_id: str) -> tuple[np.ndarray, np.ndarray | None]:
        """For a task the history never saw: per draw, its stand-in history task and drawn size."""
        stand_in = self._stand_ins.get(task_id)
        if stand_in is None:
            rows = np.arange(self.draws)
            chosen = self.level1[rows, self.rng.integers(0, len(self.tasks), size=self.draws)]
            drawn = None
            if self.task_sizes is not None:
                drawn = np.exp(self.mu + self.sigma * self.rng.standard_normal(self.draws))
            stand_in = self._stand_ins[task_id] = (chosen, drawn)
        return stand_in

    def _residual(self, shape: tuple[int, ...]) -> np.ndarray:
        assert self.residuals is not None
        return self.residuals[self.rng.integers(0, len(self.residuals), size=shape)]

    def _rescale(self, picks: np.ndarray, task_size: np.ndarray) -> np.ndarray:
        """The factor that takes each picked trial to its task's size times a fresh residual."""
        assert self.sizes is not None
        picked = self.sizes[picks]
        target = task_size * self._residual((self.draws,))
        return np.where(picked > 0, target / np.where(picked > 0, picked, 1.0), 1.0)


def _variance_dof(logs: np.ndarray) -> float:
    """Degrees of freedom of the spread of `logs` (n task sizes, log scale): 2 / Var(s^2 / sigma^2),
    n - 1 for normal sizes, fewer for heavy tails: Var(s^2) = sigma^4 (2 / (n - 1) + kurtosis / n)
    with the excess kurtosis at least TASK_SIZE_KURTOSIS_FLOOR, since a few tasks cannot show their
    tails (a sample's kurtosis is bounded by its size and mostly below the population's)."""
    n = len(logs)
    if n < 4:  # too few for a fourth moment; chi2(n - 1) of 1 or 2 degrees is heavy-tailed already
        return float(n - 1)
    centred = logs - logs.mean()
    kurtosis = float((centred**4).mean() / (centred**2).mean() ** 2 - 3.0)
    return 2.0 / (2.0 / (n - 1) + max(TASK_SIZE_KURTOSIS_FLOOR, kurtosis) / n)


def _residuals(members: dict[str, list[int]], sizes: np.ndarray | None) -> np.ndarray | None:
    """Every trial's size over its task's mean, widened about 1 by sqrt(n / (n - 1)) for the task's n
    trials (tasks of 2+ trials and a positive mean); None when there is none."""
    if sizes is None:
        return None
    pooled: list[np.ndarray] = []
    for indices in members.values():
        values = sizes[indices]
        mean = float(values.mean())
        if len(indices) >= 2 and mean > 0:
            pooled.append(1.0 + (values / mean - 1.0) * np.sqrt(len(indices) / (len(indices) - 1)))
    if not pooled:
        return None
    residuals: np.ndarray = np.clip(np.concatenate(pooled), 0.0, None)  # a trial's size is never negative
    return residuals


def _from_history(
    specs: list[TrialSpec],
    past: list[_PastTrial],
    prefixes: Prefixes,
    coster: _Coster,
    seed: int,
    self_check: bool = True,
) -> Estimate:
    """The estimate from history; `self_check` adds the p90's coverage on halvings of the history."""
    rng = np.random.default_rng(seed)
    # replayed-prefix length -> (past, roles, 3): calls, tokens, cost
    tables: dict[int, np.ndarray] = {0: np.array([_trial_totals(trial, 0, coster) for trial in past])}
    # A trial's size is what is predicted, its cost; its tokens when a price is unknown or every price
    # is zero (scripted, local). Sizing by tokens let an agent-heavy task (dearer tokens) pass as small.
    column = 1 if coster.unknown or not tables[0][:, :, 2].any() else 2
    sampler = _TwoLevel(past, DRAWS, rng, sizes=tables[0][:, :, column].sum(axis=1))
    totals = {role: np.zeros((DRAWS, 3)) for role in ROLES}
    for spec in specs:
        prefix = prefix_of(prefixes, spec)
        if prefix.covered:  # replays to its end: nothing of it goes live
            continue
        skip = len(prefix.hits)
        if skip not in tables:
            tables[skip] = np.array([_trial_totals(trial, skip, coster) for trial in past])
        picks, scale = sampler.picks(spec.task.id)
        for r, role in enumerate(ROLES):
            totals[role] += tables[skip][picks, r, :] * scale[:, None]
    est = Estimate(trials=len(specs), confidence="history", basis=f"{len(past)} earlier trials")
    overall = np.zeros(DRAWS)
    for role in ROLES:
        calls, tokens, cost = totals[role][:, 0], totals[role][:, 1], totals[role][:, 2]
        overall += cost
        est.roles[role] = RoleEstimate(
            calls_p50=float(np.percentile(calls, 50)),
            calls_p90=float(np.percentile(calls, 90)),
            tokens_p50=float(np.percentile(tokens, 50)),
            tokens_p90=float(np.percentile(tokens, 90)),
            cost_p50=float(np.percentile(cost, 50)),
            cost_p90=float(np.percentile(cost, 90)),
        )
    est.live_cost_p50, est.live_cost_p90 = float(np.percentile(overall, 50)), float(np.percentile(overall, 90))
    _replayed(prefixes, coster, est)
    table = tables[0]
    est.coverage_of = "tokens" if column == 1 else "cost"
    if self_check:
        est.p90_coverage, est.coverage_checks = p90_coverage(past, table[:, :, column].sum(axis=1), seed)
    return est


def p90_coverage(
    past: list[_PastTrial], values: np.ndarray, seed: int, checks: int = COVERAGE_CHECKS, draws: int = COVERAGE_DRAWS
) -> tuple[float | None, int]:
    """Share of random task halvings whose held-out total is at most the p90 the other half predicts."""
    tasks = list(dict.fromkeys(trial.task_id for trial in past))
    if len(tasks) < 4:
        return None, 0
    rng = np.random.default_rng(seed + 1)
    hits = 0
    for _ in range(checks):
        order = rng.permutation(len(tasks))
        pilot = {tasks[i] for i in order[: len(tasks) // 2]}
        kept = [i for i, trial in enumerate(past) if trial.task_id in pilot]
        held = [i for i, trial in enumerate(past) if trial.task_id not in pilot]
        pilot_values = values[kept]
        sampler = _TwoLevel([past[i] for i in kept], draws, rng, sizes=pilot_values)
        total = np.zeros(draws)
        for index in held:
            picks, scale = sampler.picks(past[index].task_id)  # a task the pilot never saw
            total += pilot_values[picks] * scale
        hits += float(values[held].sum()) <= float(np.percentile(total, 90))
    return hits / checks, checks


def _trial_totals(trial: _PastTrial, skip: int, coster: _Coster) -> list[list[float]]:
    """calls, tokens and cost per role of `trial` past its first `skip` calls. A planned trial that
    missed at call `skip` makes at least that call live: a history trial no longer than `skip` gives
    its last call for it."""
    rows = {role: [0.0, 0.0, 0.0] for role in ROLES}
    for call in trial.calls[min(skip, len(trial.calls) - 1) if skip else 0 :]:
        tokens, cost = coster.call(call)
        row = rows[call.role]
        row[0] += 1
        row[1] += tokens
        row[2] += cost or 0.0
    return [rows[role] for role in ROLES]


def _from_prior(run: PreparedRun, prefixes: Prefixes, coster: _Coster) -> Estimate:
    """Without history: sizes of what every call carries, times calls per trial from the task's
    expected actions."""
    pack = run.pack
    agent_tools = sum(len(t.model_dump_json()) for t in pack.agent_tool_schemas)
    user_tools = sum(len(t.model_dump_json()) for t in pack.user_tool_schemas)
    agent_fixed = (len(run.config.agent_prompt.render(pack.policy)) + agent_tools) / 4
    est = Estimate(
        trials=len(run.specs),
        confidence="low (no history: size-based prior)",
        basis="policy, tool and instruction sizes with calls per trial from each task's expected actions",
    )
    share = action_share(run.config.agent.model, run.config.solo)
    grand50 = grand90 = 0.0
    for role in ROLES:
        calls = prompt_tokens = 0.0
        for spec in run.specs:
            prefix = prefix_of(prefixes, spec)
            if prefix.covered:  # replays to its end: nothing of it goes live
                continue
            n = prior_calls(spec, share)[role]
            fixed = agent_fixed if role == "agent" else (len(spec.task.user_scenario.render()) + user_tools) / 4 + 200
            live_n = max(1.0 if prefix.missed == role else 0.0, n - prefix.hits_of(role))
            calls += live_n
            # The conversation grows each turn: on average half the final length rides along.
            turns = sum(prior_calls(spec, share).values())
            prompt_tokens += live_n * (fixed + PRIOR_TOKENS_PER_TURN * turns / 2)
        completion_tokens = calls * PRIOR_COMPLETION_TOKENS[role]
        cost = _prior_cost(coster, role, prompt_tokens, completion_tokens)
        tokens = prompt_tokens + completion_tokens
        est.roles[role] = RoleEstimate(
            calls, calls * 1.5, tokens, tokens * 1.5, cost, None if cost is None else cost * 1.5
        )
        if cost is not None:
            grand50 += cost
            grand90 += cost * 1.5
    est.live_cost_p50, est.live_cost_p90 = grand50, grand90
    _replayed(prefixes, coster, est)
    return est


def prior_calls(spec: TrialSpec, share: ActionShare = EVERY_ACTION) -> dict[CallRole, float]:
    """The prior's calls per trial of `spec`'s task, by role (see PRIOR_AGENT_CALLS_PER_AGENT_ACTION),
    for an agent that performs `share` of the task's actions (every one by default)."""
    criteria = spec.task.evaluation_criteria
    actions = criteria.actions if criteria and criteria.actions else []
    by_user = share.user * sum(1 for action in actions if action.requestor == "user")
    by_agent = share.agent * sum(1 for action in actions if action.requestor != "user")
    return {
        "agent": PRIOR_AGENT_CALLS_PER_AGENT_ACTION * by_agent
        + PRIOR_AGENT_CALLS_PER_USER_ACTION * by_user
        + PRIOR_AGENT_CALLS_EXTRA,
        "user": PRIOR_USER_TURNS + PRIOR_USER_CALLS_PER_USER_ACTION * by_user,
        "judge": 1.0 if _has_nl(spec) else 0.0,
    }


def _has_nl(spec: TrialSpec) -> bool:
    criteria = spec.task.evaluation_criteria
    return bool(criteria and criteria.nl_assertions and "NL_ASSERTION" in criteria.reward_basis)


def _prior_cost(coster: _Coster, role: str, prompt_tokens: float, completion_tokens: float) -> float | None:
    usage = Usage(prompt_tokens=int(prompt_tokens), completion_tokens=int(completion_tokens))
    cost = coster.pricing.cost(coster.models[role], usage)
    if cost.usd is None:
        coster.unknown.add(coster.models[role])
    return cost.usd
