"""Calibration of `tauproxy check`, measured: false alarms on A/A pairs, power against a true drop.

    .venv/bin/python bench/check_calibration.py            (about a minute)
    .venv/bin/python bench/check_calibration.py --pairs 400 --tasks 60 --trials 4

Agents of known per-task success probabilities, simulated at the level of SimulationRun rewards
(each trial passes with its task's probability, from its own seed) rather than through the engine:
the verdict is computed by the same code `check` runs (`tauproxy.reports.regression.compare_scores`
on two `Results`), and the engine would add nothing but time (its scripted
`oracle?error_rate=P` slips are such seeded Bernoulli outcomes, at about 100 trials/s, so the
2 x 200 x 2 x 240 trials here would take half an hour).

Two agent populations, because calibration depends on how task difficulty is spread:
- uniform: every task passes with p = 0.6 (what `oracle?error_rate=P` looks like);
- mixed: per-task p drawn once from Beta(0.7, 0.45) (mean about 0.6, many tasks near 0 or 1, as
  real benchmarks are).

Also the coverage of the 95% interval of the drop (the share of pairs whose interval holds the true
drop; 0.95 when calibrated). A/A: the same agent twice with different trial seeds; "false alarm" =
verdict bad (at --max-drop 0.05, the default, and at 0, the strictest). Power: B's per-task p is
A's scaled so that its mean pass^1 is exactly 10 points lower; "flagged" = verdict bad. The old
point-estimate rule (bad when the observed drop > max-drop) is shown for comparison. Prints the table, then RATIO lines.

`run --until-decided` against a fixed 8 trials (`--adaptive-pairs`, 100 a cell by default;
`--adaptive-only` skips the table above): the baseline has 8 trials per task; the fixed design runs
the candidate 8 trials per task and judges it as check does (95%); the adaptive one starts at 4 and
runs the loop of tauproxy/workflows/adaptive.py (its sequential verdict, task choice and budget) with
--max-cost set to what the fixed 8 trials cost times `--adaptive-budget` (default 1; each simulated
trial $0.01). Per cell: decided share (good or bad) and wrong verdicts of each, how often the
adaptive verdict matches the fixed one where the fixed one decided, the mean trials per task and the
spend; the ratios adaptive / fixed.
"""

from __future__ import annotations

import argparse
import time
import zlib

import numpy as np

from tauproxy.data_model.message import Message
from tauproxy.data_model.result import ModelInfo, Results, RewardInfo, RunInfo, SimulationRun
from tauproxy.data_model.task import Task, UserScenario
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


def rates(p_a: np.ndarray, p_b: np.ndarray, pairs: int, trials: int, max_drop: float, seed: int) -> dict[str, float]:
    """Share of pairs judged bad / undecided / good, and the point-estimate rule's share of 'bad'."""
    rng = np.random.default_rng(seed)
    counts = {Verdict.BAD: 0, Verdict.UNDECIDED: 0, Verdict.GOOD: 0}
    point_bad = covered = 0
    true_drop = float(p_a.mean() - p_b.mean())
    for pair in range(pairs):
        base = make_results(draw(p_a, trials, rng), "agent-a", seed0=10_000 + pair * 10)
        cand = make_results(draw(p_b, trials, rng), "agent-b", seed0=50_000 + pair * 10)
        result = compare_scores(cand, base, "pass^1", max_drop, seed=pair)
        counts[result.verdict] += 1
        point_bad += (result.drop or 0.0) > max_drop + 1e-9
        low, high = result.drop_ci or (0.0, 0.0)
        covered += low - 1e-9 <= true_drop <= high + 1e-9
    return {
        "bad": counts[Verdict.BAD] / pairs,
        "undecided": counts[Verdict.UNDECIDED] / pairs,
        "good": counts[Verdict.GOOD] / pairs,
        "point_bad": point_bad / pairs,
        "covered": covered / pairs,
    }


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
    parser.add_argument("--pairs", type=int, default=200)
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
    population = {
        "uniform": np.full(args.tasks, 0.6),
        "mixed": np.random.default_rng(12345).beta(0.7, 0.45, size=args.tasks),
    }
    if args.adaptive_only:
        adaptive_table(population, args.drop, args.adaptive_pairs, args.adaptive_budget)
        return
    print(
        f"{args.pairs} pairs per cell, {args.tasks} tasks x {args.trials} trials, 95% paired bootstrap "
        f"(2000 resamples), metric pass^1"
    )
    print("| population | case | --max-drop | bad | undecided | good | old point rule: bad | 95% CI covers true drop |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    worst_alarm = 0.0
    power_at: dict[str, float] = {}
    start = time.perf_counter()
    for name, p in population.items():
        lower = p * (1.0 - args.drop / p.mean())  # the same mean drop on every population
        for case, p_b in (("A/A", p), (f"true drop {args.drop:.2f}", lower)):
            for max_drop in (0.05, 0.0):
                cell_seed = zlib.crc32(f"{name}|{case}|{max_drop}".encode())
                found = rates(p, p_b, args.pairs, args.trials, max_drop, seed=cell_seed)
                print(
                    f"| {name} (mean p {p.mean():.2f}) | {case} | {max_drop:g} | {found['bad']:.3f} | "
                    f"{found['undecided']:.3f} | {found['good']:.3f} | {found['point_bad']:.3f} | "
                    f"{found['covered']:.3f} |"
                )
                if case == "A/A":
                    worst_alarm = max(worst_alarm, found["bad"])
                else:
                    power_at[f"{name}@{max_drop:g}"] = found["bad"]
    print(f"({time.perf_counter() - start:.1f} s)")
    print(f"RATIO check_false_alarm: bad/pairs on A/A = {worst_alarm:.3f} (worst cell; goal: <= 0.05)")
    for cell, power in power_at.items():
        print(
            f"RATIO check_power {cell}: bad/pairs at a true {args.drop:.2f} drop = {power:.3f} "
            f"({args.tasks} tasks x {args.trials} trials; no goal, measured)"
        )
    adaptive_table(population, args.drop, args.adaptive_pairs, args.adaptive_budget)


if __name__ == "__main__":
    main()
