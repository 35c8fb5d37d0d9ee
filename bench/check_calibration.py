"""Calibration of `tauproxy check`, measured: the interval's coverage, false alarms, detection.

    .venv/bin/python bench/check_calibration.py --adaptive-pairs 0   (about 2.5 minutes on a loaded 2-core machine)
    .venv/bin/python bench/check_calibration.py --pairs 1000 --adaptive-pairs 0

Pairs are simulated, not run through the engine: each trial of task i passes with the task's
probability p_i, from its own seeded draw. The engine would add nothing but time (its scripted
`oracle?error_rate=P` slips are such seeded Bernoulli outcomes, at about 30 trials/s here, so the
2 x 400 x 12 x 240 trials below would take hours). Four populations of tasks, because calibration
depends on how task difficulty is spread:
- uniform: every task passes with p = 0.6;
- mixed: per-task p drawn once from Beta(0.7, 0.45) (mean about 0.6, many tasks near 0 or 1);
- airline, retail (recorded): p_i is the share of passing trials of task i in a real run of
  `scripted/oracle?error_rate=0.2` with the scripted user, every task x 8 trials, run first
  (in-process, offline; about 20 s each) -- "pairs simulated from recorded per-task outcomes".
Each population at 60, 20 and 10 tasks (the first n) x 4 trials. Per cell --pairs A/A pairs (the
same agent twice, different trial seeds) and --pairs A/B pairs (B's p_i scaled so its mean pass^1 is
exactly --drop lower). The true drop is the mean of p_a - p_b over the cell's tasks.

For each interval method of tauproxy/reports/paired.py (percentile, BCa, the t-widened "expanded"
one that `run --until-decided` uses, and "expanded-cc", expanded with a continuity correction, which
check uses), with 2000 resamples at 95%: coverage (share of pairs whose
interval of the drop holds the true drop; goal 0.95), the bad rate (verdict bad: the whole interval
above --max-drop) at --max-drop 0 and 0.05 on A/A pairs (false alarms; at most 0.025 when
calibrated, one side of a 95% interval) and on A/B pairs (detection). The interval is computed by
`bootstrap_picks` and `bootstrap_interval`, the functions `check` calls, with check's seeds; for the
first pairs of every cell the bench also runs `compare_scores` (what `check` runs) end to end and
asserts that its interval is the one measured for the default method. Prints the tables and RATIO
lines.

`run --until-decided` against a fixed 8 trials (`--adaptive-pairs`, 100 a cell by default, 0 skips
it; `--adaptive-only` skips the tables above): the baseline has 8 trials per task; the fixed design
runs the candidate 8 trials per task and judges it as check does (95%); the adaptive one starts at 4
and runs the loop of tauproxy/workflows/adaptive.py (its sequential verdict, task choice and budget)
with --max-cost set to what the fixed 8 trials cost times `--adaptive-budget` (default 1; each
simulated trial $0.01). Per cell: decided share (good or bad) and wrong verdicts of each, how often
the adaptive verdict matches the fixed one where the fixed one decided, the mean trials per task and
the spend; the ratios adaptive / fixed.
"""

from __future__ import annotations

import argparse
import os
import time
import zlib

import numpy as np

from tauproxy.data_model.message import Message
from tauproxy.data_model.result import ModelInfo, Results, RewardInfo, RunInfo, SimulationRun
from tauproxy.data_model.task import Task, UserScenario
from tauproxy.reports.paired import (
    PAIRED_INTERVAL,
    IntervalMethod,
    bootstrap_interval,
    bootstrap_picks,
)
from tauproxy.reports.regression import Verdict, compare_scores


def make_results(passed: np.ndarray, agent: str, seed0: int) -> Results:
    """passed[task, trial] -> a Results of reward 1.0 / 0.0 trials; trial j has seed seed0 + j."""
    tasks = [Task(id=f"t{i}", user_scenario=UserScenario(instructions="x")) for i in range(passed.shape[0])]
    runs = [
        SimulationRun(
            id=f"t{i}:{j}",
            task_id=f"t{i}",
            trial=j,
            seed=seed0 + j,
            termination_reason="user_stop",
            messages=[Message(role="assistant", content="ok")],
            reward_info=RewardInfo(reward=float(passed[i, j])),
            agent_cost=0.0,
        )
        for i in range(passed.shape[0])
        for j in range(passed.shape[1])
    ]
    info = RunInfo(
        tauproxy_version="bench",
        domain="sim",
        domain_sha256="0" * 64,
        num_trials=passed.shape[1],
        seed=seed0,
        trial_seeds=[seed0 + j for j in range(passed.shape[1])],
        max_steps=1,
        max_errors=1,
        agent_info=ModelInfo(llm=agent),
        user_info=ModelInfo(llm="u"),
        judge_info=ModelInfo(llm="j"),
    )
    return Results(info=info, tasks=tasks, simulations=runs)


def draw(p: np.ndarray, trials: int, rng: np.random.Generator) -> np.ndarray:
    return (rng.random((len(p), trials)) < p[:, None]).astype(float)


LEVEL, RESAMPLES, TOLERANCE = 0.95, 2000, 1e-9
METHODS = (IntervalMethod.PERCENTILE, IntervalMethod.BCA, IntervalMethod.EXPANDED, IntervalMethod.EXPANDED_CORRECTED)
VERIFIED_PAIRS = 10  # per cell, also judged end to end by compare_scores


def calibration_cell(
    p_a: np.ndarray, p_b: np.ndarray, pairs: int, trials: int, seed: int
) -> dict[str, dict[str, float]]:
    """Per interval method: coverage of the true drop, and the bad rate at --max-drop 0 and 0.05."""
    rng = np.random.default_rng(seed)
    true_drop = float(p_a.mean() - p_b.mean())
    found = {method.value: {"covered": 0.0, "bad@0": 0.0, "bad@0.05": 0.0} for method in METHODS}
    for pair in range(pairs):
        base_passed, cand_passed = draw(p_a, trials, rng), draw(p_b, trials, rng)
        deltas = cand_passed.mean(axis=1) - base_passed.mean(axis=1)  # per-task pass^1, candidate - baseline
        picks = bootstrap_picks(len(p_a), RESAMPLES, seed=pair)  # check's seed is its --seed; here the pair
        step = 1.0 / (len(p_a) * trials)  # the lattice of a mean pass^1 difference
        for method in METHODS:
            low, high = bootstrap_interval(deltas, picks, LEVEL, method, step)
            drop_low, drop_high = -high, -low
            cell = found[method.value]
            cell["covered"] += drop_low - TOLERANCE <= true_drop <= drop_high + TOLERANCE
            cell["bad@0"] += drop_low > 0.0 + TOLERANCE
            cell["bad@0.05"] += drop_low > 0.05 + TOLERANCE
            if method is PAIRED_INTERVAL and pair < VERIFIED_PAIRS:
                base = make_results(base_passed, "agent-a", seed0=10_000 + pair * 10)
                cand = make_results(cand_passed, "agent-b", seed0=50_000 + pair * 10)
                result = compare_scores(cand, base, "pass^1", 0.05, seed=pair)
                assert result.drop_ci is not None
                assert np.allclose(result.drop_ci, (drop_low, drop_high)), (result.drop_ci, drop_low, drop_high)
                assert (result.verdict is Verdict.BAD) == (drop_low > 0.05 + TOLERANCE)
    return {method: {key: value / pairs for key, value in cell.items()} for method, cell in found.items()}


def recorded_population(domain: str, trials: int) -> np.ndarray:
    """p_i = the share of passing trials of task i in a real scripted run (offline, in-process)."""
    import tempfile
    from pathlib import Path

    from tauproxy.engine.llm_config import LLMConfig
    from tauproxy.reports.metrics import is_success
    from tauproxy.runner.config import RunConfig
    from tauproxy.runner.run import execute

    with tempfile.TemporaryDirectory(prefix="tauproxy-bench-calibration-") as tmp:
        config = RunConfig(
            domain=domain,
            agent=LLMConfig(model="scripted/oracle?error_rate=0.2"),
            user=LLMConfig(model="scripted/user"),
            num_trials=trials,
            save_to=Path(tmp) / "run",
        )
        results = execute(config).results
    passed: dict[str, list[bool]] = {}
    for run in results.simulations:
        passed.setdefault(run.task_id, []).append(is_success(run))
    return np.array([sum(values) / len(values) for values in passed.values()])


def calibration_tables(population: dict[str, np.ndarray], pairs: int, trials: int, drop: float) -> None:
    sizes = (60, 20, 10)
    print(
        f"\n{pairs} A/A and {pairs} A/B pairs per cell, x {trials} trials, 95% paired bootstrap "
        f"({RESAMPLES} resamples), metric pass^1; A/B: a true {drop:.2f} drop; "
        f"check's interval: {PAIRED_INTERVAL.value}"
    )
    print(
        "| population | tasks | interval | A/A coverage | A/B coverage | A/A bad @0 | A/A bad @0.05 | "
        "A/B bad (detection) @0 | A/B bad @0.05 |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    start = time.perf_counter()
    summary: dict[str, dict[str, list[float]]] = {
        m.value: {"coverage": [], "alarm": [], "power0": [], "power5": []} for m in METHODS
    }
    for name, p_all in population.items():
        for n in sizes:
            p = p_all[:n]
            lower = p * (1.0 - drop / p.mean())  # the same mean drop on every population
            same = calibration_cell(p, p, pairs, trials, seed=zlib.crc32(f"{name}|{n}|A/A".encode()))
            worse = calibration_cell(p, lower, pairs, trials, seed=zlib.crc32(f"{name}|{n}|A/B".encode()))
            for method in METHODS:
                a, b = same[method.value], worse[method.value]
                print(
                    f"| {name} (mean p {p.mean():.2f}) | {n} | {method.value} | {a['covered']:.3f} | "
                    f"{b['covered']:.3f} | {a['bad@0']:.3f} | {a['bad@0.05']:.3f} | {b['bad@0']:.3f} | "
                    f"{b['bad@0.05']:.3f} |",
                    flush=True,
                )
                found = summary[method.value]
                found["coverage"] += [a["covered"], b["covered"]]
                found["alarm"] += [a["bad@0"], a["bad@0.05"]]
                found["power0"].append(b["bad@0"])
                found["power5"].append(b["bad@0.05"])
    print(f"({time.perf_counter() - start:.1f} s)")
    for method, found in summary.items():
        coverage = found["coverage"]
        print(
            f"RATIO check_coverage {method}: covered/pairs = {min(coverage):.3f}-{max(coverage):.3f}, mean "
            f"{float(np.mean(coverage)):.3f} over {len(coverage)} cells (goal 0.95); A/A bad at most "
            f"{max(found['alarm']):.3f} (goal <= 0.025); detection of a true {drop:.2f} drop "
            f"{min(found['power0']):.3f}-{max(found['power0']):.3f} at --max-drop 0, "
            f"{min(found['power5']):.3f}-{max(found['power5']):.3f} at 0.05"
            + (" [check]" if method == PAIRED_INTERVAL.value else "")
        )


TRIAL_COST = 0.01


class SimulatedCandidate:
    """A TrialSource for the adaptive loop: trial j of task i passes when u[i, j] < p[i]."""

    def __init__(self, p: np.ndarray, rng: np.random.Generator, seed0: int) -> None:
        self.p, self.u, self.seed0 = p, rng.random((len(p), 1000)), seed0
        self.runs: dict[int, list[SimulationRun]] = {i: [] for i in range(len(p))}

    def run(self, plan, budget):  # type: ignore[no-untyped-def]
        from tauproxy.workflows.adaptive import SourceOutcome

        for task, n in plan.items():
            i = int(task[1:])
            while len(self.runs[i]) < n:
                j = len(self.runs[i])
                self.runs[i].append(
                    SimulationRun(
                        id=f"t{i}:{j}",
                        task_id=f"t{i}",
                        trial=j,
                        seed=self.seed0 + j,
                        termination_reason="user_stop",
                        messages=[Message(role="assistant", content="ok")],
                        reward_info=RewardInfo(reward=float(self.u[i, j] < self.p[i])),
                        agent_cost=TRIAL_COST,
                        user_cost=0.0,
                        judge_cost=0.0,
                    )
                )
        template = make_results(np.zeros((len(self.p), 1)), "agent-b", self.seed0)
        runs = [run for i in range(len(self.p)) for run in self.runs[i]]
        return SourceOutcome(template.model_copy(update={"simulations": runs}))


def adaptive_cell(
    p_a: np.ndarray, p_b: np.ndarray, pairs: int, max_drop: float, seed: int, budget_factor: float
) -> dict[str, float]:
    """Fixed 8 trials (check at 95%) against --until-decided from 4 with the fixed design's budget."""
    from tauproxy.workflows.adaptive import AdaptiveSettings, until_decided
    from tauproxy.workflows.sequential import LookSchedule

    rng = np.random.default_rng(seed)
    true_drop = float(p_a.mean() - p_b.mean())
    wrong = {Verdict.BAD: true_drop <= max_drop, Verdict.GOOD: true_drop > max_drop}
    n = len(p_a)
    budget = n * 8 * TRIAL_COST * budget_factor
    sums = dict.fromkeys(
        (
            "fixed_decided",
            "fixed_wrong",
            "adaptive_decided",
            "adaptive_wrong",
            "agree",
            "fixed_decisions",
            "trials",
            "spend",
        ),
        0.0,
    )
    for pair in range(pairs):
        base = make_results(draw(p_a, 8, rng), "agent-a", seed0=10_000 + pair * 10)
        fixed = compare_scores(
            make_results(draw(p_b, 8, rng), "agent-b", seed0=50_000 + pair * 10), base, "pass^1", max_drop, seed=pair
        ).verdict
        source = SimulatedCandidate(p_b, rng, seed0=50_000 + pair * 10)
        outcome = until_decided(
            source,
            base,
            {f"t{i}": 4 for i in range(n)},
            AdaptiveSettings(max_drop=max_drop, schedule=LookSchedule(confidence=0.95), max_cost=budget, seed=pair),
        )
        adaptive = outcome.final.verdict
        decided = (Verdict.GOOD, Verdict.BAD)
        sums["fixed_decided"] += fixed in decided
        sums["fixed_wrong"] += wrong.get(fixed, False)
        sums["adaptive_decided"] += adaptive in decided
        sums["adaptive_wrong"] += wrong.get(adaptive, False)
        if fixed in decided:
            sums["fixed_decisions"] += 1
            sums["agree"] += adaptive is fixed
        sums["trials"] += outcome.trials
        sums["spend"] += outcome.spend_usd or 0.0
    found = {key: value / pairs for key, value in sums.items() if key not in ("agree", "fixed_decisions")}
    found["agree"] = sums["agree"] / sums["fixed_decisions"] if sums["fixed_decisions"] else float("nan")
    found["trials_per_task"] = found.pop("trials") / n
    return found


def adaptive_table(population: dict[str, np.ndarray], drop: float, pairs: int, budget_factor: float) -> None:
    print(
        f"\n--until-decided (from 4 trials, budget = {budget_factor:g} x the fixed 8 trials' cost, {pairs} "
        "pairs a cell) against a fixed 8 trials judged by check; baseline 8 trials per task"
    )
    print(
        "| population | case | --max-drop | fixed 8: decided | wrong | until-decided: decided | wrong | "
        "agrees with fixed | trials/task | spend | trials ratio | spend ratio |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    trial_ratios, decided_ratios = [], []
    start = time.perf_counter()
    for name, p in population.items():
        lower = p * (1.0 - drop / p.mean())
        for case, p_b, max_drop in (
            ("A/A", p, 0.05),
            (f"true drop {drop:.2f}", lower, 0.05),
            (f"true drop {drop:.2f}", lower, 0.0),
        ):
            cell_seed = zlib.crc32(f"adaptive|{name}|{case}|{max_drop}".encode())
            found = adaptive_cell(p, p_b, pairs, max_drop, seed=cell_seed, budget_factor=budget_factor)
            fixed_spend = len(p) * 8 * TRIAL_COST
            ratio = found["trials_per_task"] / 8
            trial_ratios.append(ratio)
            if found["fixed_decided"]:
                decided_ratios.append(found["adaptive_decided"] / found["fixed_decided"])
            print(
                f"| {name} | {case} | {max_drop:g} | {found['fixed_decided']:.3f} | {found['fixed_wrong']:.3f} | "
                f"{found['adaptive_decided']:.3f} | {found['adaptive_wrong']:.3f} | {found['agree']:.3f} | "
                f"{found['trials_per_task']:.2f} (fixed 8) | ${found['spend']:.2f} (fixed ${fixed_spend:.2f}) | "
                f"{ratio:.3f} | {found['spend'] / fixed_spend:.3f} |",
                flush=True,
            )
    print(f"({time.perf_counter() - start:.1f} s)")
    print(
        f"RATIO until_decided_trials: until-decided/fixed-8 trials = "
        f"{min(trial_ratios):.3f}-{max(trial_ratios):.3f} (decided share until-decided/fixed-8 = "
        f"{min(decided_ratios):.3f}-{max(decided_ratios):.3f}; "
        "goal: fewer trials, as many decisions)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=400, help="A/A pairs and A/B pairs per cell (each)")
    parser.add_argument("--recorded-trials", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--drop", type=float, default=0.10)
    parser.add_argument("--adaptive-pairs", type=int, default=100)
    parser.add_argument("--adaptive-only", action="store_true")
    parser.add_argument(
        "--adaptive-budget",
        type=float,
        default=1.0,
        help="--max-cost of --until-decided, as a multiple of the fixed 8 trials' cost",
    )
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    population = {
        "uniform": np.full(args.tasks, 0.6),
        "mixed": np.random.default_rng(12345).beta(0.7, 0.45, size=args.tasks),
    }
    if args.adaptive_only:
        adaptive_table(population, args.drop, args.adaptive_pairs, args.adaptive_budget)
        return
    recorded = {}
    for domain in ("airline", "retail"):
        started = time.perf_counter()
        recorded[domain] = recorded_population(domain, args.recorded_trials)
        print(
            f"recorded {domain}: {len(recorded[domain])} tasks x {args.recorded_trials} trials of "
            f"scripted/oracle?error_rate=0.2, mean pass^1 {recorded[domain].mean():.3f}, "
            f"tasks never / always passing {int((recorded[domain] == 0).sum())} / {int((recorded[domain] == 1).sum())} "
            f"({time.perf_counter() - started:.1f} s)",
            flush=True,
        )
    calibration_tables({**population, **recorded}, args.pairs, args.trials, args.drop)
    if args.adaptive_pairs:
        adaptive_table(population, args.drop, args.adaptive_pairs, args.adaptive_budget)


if __name__ == "__main__":
    main()
