"""How close `tauproxy estimate` gets to the real cost of a run, from a 10% pilot.

    .venv/bin/python bench/estimate_error.py          (about 2 min)

1. Writes a prices file giving the stub model a price:
   {"openai/stub": {"input_cost_per_token": 2e-6, "output_cost_per_token": 8e-6}}.
2. Full run, in-process (`execute`): airline, all tasks x 2 trials, agent openai/stub via litellm to
   the stub upstream, user scripted/user, `prices=` that file. Its actual cost is the sum of the
   recorded cost of its live calls.
3. Pilot: a separate run of the first 10% of the tasks (`num_tasks=6`), same settings.
4. `estimate(full_config, history=[pilot_dir], cassette=None, seed=s)` for --reps seeds; the median p50
   is compared with the actual cost. Also, for information: the no-history prior
   (`history=[]`), and a second pilot made of every 10th task (tasks 0, 10, 20, ...), to show how
   much the choice of pilot tasks matters.
5. The p90's coverage (the share of runs whose actual cost is at most the p90; goal 90%), out of
   sample, on synthetic pilots through the estimate's own sampler (`_TwoLevel`): per cell, --cov-reps
   populations of task sizes (lognormal(0, 0.8) as in bench/README.md, and gamma(2), a lighter tail),
   trial noise lognormal(0, 0.2); a pilot of n tasks x k trials, then the actual total of a fresh run
   of N tasks x k (the pilot's tasks among them, with new trials) against the p90 the pilot predicts.
   Also the former bootstrap-only sampler (no size predictive) for comparison, and the coverage the
   estimate itself reports for the first-10% pilot (halvings of the pilot's tasks).
Prints the raw numbers, then one RATIO line: p50 estimate from the first-10% pilot / actual cost.
`--coverage-only` runs step 5 alone (seconds, no stub).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import numpy as np
from _common import BASE_ENV, median, print_machine, spread, start_stub, workdir

PRICES = {"openai/stub": {"input_cost_per_token": 2e-6, "output_cost_per_token": 8e-6}}


def live_cost(results) -> tuple[float, int]:
    total, calls = 0.0, 0
    for simulation in results.simulations:
        for call in simulation.calls:
            if call.source == "live":
                calls += 1
                total += call.cost_usd or 0.0
    return total, calls


WORLDS = {
    "lognormal(0,0.8)": lambda rng, n: rng.lognormal(0.0, 0.8, n),
    "gamma(2)": lambda rng, n: rng.gamma(2.0, 1.0, n),
}
CELLS = [(6, 60, 2), (10, 20, 2), (20, 40, 2), (40, 80, 2), (60, 120, 4)]  # pilot tasks, planned tasks, trials


def _trials(rng, sizes, tasks, k):
    from tauproxy.runner.estimate import _PastTrial

    past, values = [], []
    for t in tasks:
        for _ in range(k):
            past.append(_PastTrial(f"t{t}", []))
            values.append(sizes[t] * rng.lognormal(0.0, 0.2))
    return past, np.array(values)


def coverage_cell(world, pilot_n: int, planned_n: int, k: int, reps: int, predictive: bool, seed: int) -> float:
    from tauproxy.runner.estimate import _TwoLevel

    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        sizes = world(rng, planned_n)
        past, values = _trials(rng, sizes, range(pilot_n), k)
        _, actual = _trials(rng, sizes, range(planned_n), k)
        sampler = _TwoLevel(past, 1000, rng, sizes=values if predictive else None)
        total = np.zeros(1000)
        for t in range(planned_n):
            for _ in range(k):
                picks, scale = sampler.picks(f"t{t}")
                total += values[picks] * scale
        hits += float(actual.sum()) <= float(np.percentile(total, 90))
    return hits / reps


def coverage_report(reps: int) -> list[float]:
    """Step 5; returns the predictive's coverage per cell."""
    ours = []
    for name, world in WORLDS.items():
        for pilot_n, planned_n, k in CELLS:
            now = coverage_cell(world, pilot_n, planned_n, k, reps, True, seed=pilot_n)
            before = coverage_cell(world, pilot_n, planned_n, k, reps, False, seed=pilot_n)
            ours.append(now)
            print(
                f"p90 coverage, {name:16s} pilot {pilot_n:2d} x {k} -> {planned_n:3d} x {k}: {now:.3f} "
                f"(bootstrap only: {before:.3f}; {reps} populations)",
                flush=True,
            )
    print(f"COVERAGE estimate_p90: {min(ours):.3f}-{max(ours):.3f} over {len(ours)} cells (goal 0.90)")
    return ours


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5, help="estimate seeds")
    parser.add_argument("--cov-reps", type=int, default=200, help="populations per coverage cell")
    parser.add_argument("--coverage-only", action="store_true")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = BASE_ENV["LITELLM_LOCAL_MODEL_COST_MAP"]
    if args.coverage_only:
        coverage_report(args.cov_reps)
        return

    from tauproxy.domain.pack import load_pack
    from tauproxy.engine.llm_config import LLMConfig
    from tauproxy.runner.config import RunConfig
    from tauproxy.runner.estimate import estimate
    from tauproxy.runner.run import execute

    print_machine("estimate_error")
    tmp = workdir("estimate", args.keep)
    _, url = start_stub()
    prices = tmp / "prices.json"
    prices.write_text(json.dumps(PRICES))

    agent = LLMConfig(model="openai/stub", args={"api_base": url, "api_key": "sk-x", "num_retries": 0})
    full = RunConfig(
        domain="airline",
        agent=agent,
        user=LLMConfig(model="scripted/user"),
        num_trials=args.trials,
        prices=prices,
        save_to=tmp / "full",
    )
    task_ids = [task.id for task in load_pack("airline").tasks]
    pilot_n = max(1, math.ceil(0.1 * len(task_ids)))

    started = time.perf_counter()
    outcome = execute(full)
    actual, actual_calls = live_cost(outcome.results)
    print(
        f"full run: {len(task_ids)} tasks x {args.trials} trials, {actual_calls} live calls, "
        f"actual cost ${actual:.6f}, {time.perf_counter() - started:.1f} s"
    )

    pilots = {
        "first10%": full.model_copy(update={"num_tasks": pilot_n, "save_to": tmp / "pilot-first"}),
        "every10th": full.model_copy(update={"task_ids": task_ids[::10][:pilot_n], "save_to": tmp / "pilot-stride"}),
    }
    for name, config in pilots.items():
        pilot_cost, pilot_calls = live_cost(execute(config).results)
        print(f"pilot {name}: {pilot_n} tasks x {args.trials} trials, {pilot_calls} live calls, ${pilot_cost:.6f}")

    plan = full.model_copy(update={"save_to": None})
    results = {}
    for name, config in [*pilots.items(), ("prior", None)]:
        history = [config.save_to] if config is not None else []
        p50s, p90s, secs = [], [], []
        seeds = range(args.reps) if config is not None else range(1)  # the prior is deterministic
        for seed in seeds:
            started = time.perf_counter()
            est = estimate(plan, history=history, cassette=None, seed=seed)
            secs.append(time.perf_counter() - started)
            p50s.append(est.live_cost_p50)
            p90s.append(est.live_cost_p90)
        p50, p90 = median(p50s), median(p90s)
        calls = {role: round(r.calls_p50) for role, r in est.roles.items()}
        results[name] = p50
        own = "" if est.p90_coverage is None else f", own p90 coverage {est.p90_coverage:.2f} ({est.coverage_of})"
        print(
            f"estimate from {name:9s}: p50 ${p50:.6f} (seeds {[f'{v:.6f}' for v in p50s]}), p90 ${p90:.6f}, "
            f"error of p50 {100 * (p50 - actual) / actual:+.1f}%, actual <= p90: {actual <= p90}, "
            f"calls p50 {calls}, confidence {est.confidence!r}{own}, estimate time {spread(secs)}",
            flush=True,
        )

    coverage_report(args.cov_reps)

    err = (results["first10%"] - actual) / actual
    prior_err = (results["prior"] - actual) / actual
    print(
        f"RATIO estimate_error: ours/theirs = {results['first10%'] / actual:.3f} (goal: within 25%, i.e. "
        f"0.75-1.25; p50 from the first-10% pilot ${results['first10%']:.6f} vs actual ${actual:.6f}: "
        f"{100 * err:+.1f}% {'PASS' if abs(err) <= 0.25 else 'FAIL'}; no-history prior {100 * prior_err:+.1f}%)"
    )


if __name__ == "__main__":
    main()
