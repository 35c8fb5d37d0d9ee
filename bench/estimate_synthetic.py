"""The estimate's sampler alone on synthetic pilots: the p90's out-of-sample coverage.

    .venv/bin/python bench/estimate_error.py --synthetic     (adds this to the held-out measurement)

Per cell, --cov-reps populations of task sizes (lognormal(0, 0.8), and gamma(2), a lighter tail),
trial noise lognormal(0, 0.2); a pilot of n tasks x k trials, then the actual total of a fresh run of
N tasks x k (the pilot's tasks among them, with new trials) against the p90 the pilot predicts through
`_TwoLevel`, the estimate's sampler; also the former bootstrap-only sampler (no size predictive).
"""

from __future__ import annotations

import numpy as np

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
