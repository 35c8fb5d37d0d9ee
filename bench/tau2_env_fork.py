"""Cost of a τ²-bench environment per use: a copy-on-write fork (tauproxy/tau2bench/cow.py) vs τ²'s own.

    .venv/bin/python bench/tau2_env_fork.py             (about 2 min; needs the tau2 extra)

For each of τ²'s domains (mock, airline, retail, telecom), cycling through the tasks of its default split,
one sample is: make an environment, `set_state(initialization data and actions)`, run the task's golden
actions (exceptions caught, as τ²'s evaluator does), then `get_db_hash()` and `get_user_db_hash()`:
- ours: `EnvironmentFactory.for_domain(d)()`, the fork (its DB hash is the delta hash);
- theirs: `tau2.domains.<d>.environment.get_environment()` (loads and validates the DB, full hash).
Also "make + hash" alone (no actions), and fast_copy against copy.deepcopy of one record of each
copy-on-write field. Medians over --reps samples (theirs capped by --budget seconds per domain).
Prints the raw numbers, then one RATIO line: ours / theirs for the domain where ours is slowest.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import time
from collections.abc import Callable
from typing import Any

from _common import median, per_call, play_task, print_machine


def play(env: Any, task: Any, with_actions: bool = True) -> tuple[Any, Any]:
    play_task(env, task, with_actions)
    return env.get_db_hash(), env.get_user_db_hash()


def cycle(make: Callable[[], Any], tasks: list[Any], with_actions: bool) -> Callable[[int], Any]:
    """One sample per call: environment i plays task i (cycling)."""
    return lambda i: play(make(), tasks[i % len(tasks)], with_actions)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--budget", type=float, default=15.0, help="seconds per domain for τ²'s side")
    args = parser.parse_args()
    print_machine("tau2_env_fork")
    from loguru import logger

    logger.remove()  # τ²'s tools log every write at DEBUG to stderr: that is not what is measured here
    from tauproxy.tau2bench.cow import EnvironmentFactory, fast_copy

    rows = []
    for domain in ("mock", "airline", "retail", "telecom"):
        module = importlib.import_module(f"tau2.domains.{domain}.environment")
        tasks = list(module.get_tasks())
        started = time.perf_counter()
        factory = EnvironmentFactory.for_domain(domain, check_base=True)
        factory_s = time.perf_counter() - started
        ours = per_call(cycle(factory, tasks, True), args.reps)
        ours_bare = per_call(cycle(factory, tasks, False), args.reps)
        theirs = per_call(cycle(module.get_environment, tasks, True), args.reps, args.budget, min_reps=10)
        theirs_bare = per_call(cycle(module.get_environment, tasks, False), args.reps, args.budget / 2, min_reps=10)
        copies = []
        base = factory.base_db
        for name in factory.cow_fields:
            record = next(iter(getattr(base, name).values()))
            fast = median(per_call(lambda i: fast_copy(record), 2000))  # noqa: B023
            deep = median(per_call(lambda i: copy.deepcopy(record), 2000))  # noqa: B023
            copies.append(f"{name} {fast * 1e6:.1f}/{deep * 1e6:.1f} us")
        row = {
            "domain": domain,
            "tasks": len(tasks),
            "ours_ms": median(ours) * 1e3,
            "ours_p90_ms": sorted(ours)[int(0.9 * (len(ours) - 1))] * 1e3,
            "ours_n": len(ours),
            "theirs_ms": median(theirs) * 1e3,
            "theirs_n": len(theirs),
            "ours_bare_ms": median(ours_bare) * 1e3,
            "theirs_bare_ms": median(theirs_bare) * 1e3,
        }
        rows.append(row)
        print(
            f"{domain:8s} tasks={row['tasks']:3d} factory(load once)={factory_s * 1e3:.0f} ms  "
            f"make+gold+hash: ours {row['ours_ms']:.3f} ms (p90 {row['ours_p90_ms']:.3f}, n={row['ours_n']}) "
            f"theirs {row['theirs_ms']:.3f} ms (n={row['theirs_n']})  ratio {row['ours_ms'] / row['theirs_ms']:.4f}  "
            f"make+hash: ours {row['ours_bare_ms']:.3f} ms theirs {row['theirs_bare_ms']:.3f} ms  "
            f"record copy fast/deepcopy: {', '.join(copies) or 'n/a (no copy-on-write field)'}",
            flush=True,
        )
        if not factory.base_unchanged():
            raise SystemExit(f"{domain}: the base DB changed")
    worst = max(rows, key=lambda r: r["ours_ms"] / r["theirs_ms"])
    ratio = worst["ours_ms"] / worst["theirs_ms"]
    print(f"RATIO {ratio:.4f} (ours/theirs, make+gold+hash, slowest: {worst['domain']})")


if __name__ == "__main__":
    main()
