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
        SimulationRun(id=f"t{i}:{j}", task_id=f"t{i}", trial=j, seed=seed0 + j, termination_reason="user_stop",
                      messages=[Message(role="assistant", content="ok")],
                      reward_info=RewardInfo(reward=float(passed[i, j])), agent_cost=0.0)
        for i in range(passed.shape[0]) for j in range(passed.shape[1])
    ]
    info = RunInfo(tauproxy_version="bench", domain="sim", domain_sha256="0" * 64, num_trials=passed.shape[1],
                   seed=seed0, trial_seeds=[seed0 + j for j in range(passed.shape[1])], max_steps=1, max_errors=1,
                   agent_info=ModelInfo(llm=agent), user_info=ModelInfo(llm="u"), judge_info=ModelInfo(llm="j"))
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
    return {"bad": counts[Verdict.BAD] / pairs, "undecided": counts[Verdict.UNDECIDED] / pairs,
            "good": counts[Verdict.GOOD] / pairs, "point_bad": point_bad / pairs,
            "covered": covered / pairs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--drop", type=float, default=0.10)
    args = parser.parse_args()
    population = {
        "uniform": np.full(args.tasks, 0.6),
        "mixed": np.random.default_rng(12345).beta(0.7, 0.45, size=args.tasks),
    }
    print(f"{args.pairs} pairs per cell, {args.tasks} tasks x {args.trials} trials, 95% paired bootstrap "
          f"(2000 resamples), metric pass^1")
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
                print(f"| {name} (mean p {p.mean():.2f}) | {case} | {max_drop:g} | {found['bad']:.3f} | "
                      f"{found['undecided']:.3f} | {found['good']:.3f} | {found['point_bad']:.3f} | "
                      f"{found['covered']:.3f} |")
                if case == "A/A":
                    worst_alarm = max(worst_alarm, found["bad"])
                else:
                    power_at[f"{name}@{max_drop:g}"] = found["bad"]
    print(f"({time.perf_counter() - start:.1f} s)")
    print(f"RATIO check_false_alarm: bad/pairs on A/A = {worst_alarm:.3f} (worst cell; goal: <= 0.05)")
    for cell, power in power_at.items():
        print(f"RATIO check_power {cell}: bad/pairs at a true {args.drop:.2f} drop = {power:.3f} "
              f"({args.tasks} tasks x {args.trials} trials; no goal, measured)")


if __name__ == "__main__":
    main()
