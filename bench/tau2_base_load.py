"""Loading τ²'s airline database from tauproxy's cache: every record unpickled at once (eager) against
users and reservations unpickled when first read (lazy, tauproxy/tau2bench/model_pickle.py).

    .venv/bin/python bench/tau2_base_load.py [--reps 15]      (about 10 s; needs the tau2 extra)

One sample of each side, interleaved: `pickle.loads` of the cached `BaseDatabases` (the garbage
collector paused throughout, as a run has it while it loads) and its `EnvironmentFactory`, the main thread's
part of a run; then, on that base, the 50 tasks a replay grades: a fork, `set_state`, the golden
actions and `get_db_hash` (the records a run reads, loaded there when lazy). Thread CPU time, medians.
Prints the raw numbers, then one RATIO line: lazy / eager of the load.
"""

from __future__ import annotations

import argparse
import gc
import pickle
import time
from typing import Any

from _common import median, play_task, print_machine


def play(env: Any, task: Any) -> str:
    play_task(env, task)
    return str(env.get_db_hash())


def sample(payload: bytes, get_environment: Any, tasks: list[Any]) -> tuple[float, float, list[str]]:
    from tauproxy.tau2bench.cow import EnvironmentFactory

    # The collector paused throughout: a run loads the base while it prepares, with the collector
    # paused, then freezes what it loaded; neither side should pay for scanning the other's leftovers.
    gc.collect()
    gc.disable()
    try:
        start = time.thread_time()
        factory = EnvironmentFactory(get_environment, bases=pickle.loads(payload))
        loaded = time.thread_time()
        hashes = [play(factory(), task) for task in tasks]
        return loaded - start, time.thread_time() - loaded, hashes
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    print_machine("tau2_base_load")
    from loguru import logger

    logger.remove()  # τ²'s tools log every write at DEBUG to stderr: that is not what is measured here
    from tau2.domains.airline.environment import get_environment, get_tasks

    from tauproxy.tau2bench.cow import BaseDatabases
    from tauproxy.tau2bench.environments import LAZY_FIELDS

    db = get_environment().tools.db
    tasks = list(get_tasks())[:50]
    sides = {
        "eager": pickle.dumps(BaseDatabases(db, None), protocol=pickle.HIGHEST_PROTOCOL),
        "lazy": pickle.dumps(
            BaseDatabases(db, None, LAZY_FIELDS["tau2.domains.airline.environment"]), protocol=pickle.HIGHEST_PROTOCOL
        ),
    }
    load: dict[str, list[float]] = {side: [] for side in sides}
    tasks_cpu: dict[str, list[float]] = {side: [] for side in sides}
    hashes: dict[str, list[str]] = {}
    for _ in range(args.reps):
        for side, payload in sides.items():
            load_s, tasks_s, found = sample(payload, get_environment, tasks)
            load[side].append(load_s)
            tasks_cpu[side].append(tasks_s)
            if hashes.setdefault(side, found) != found:
                raise SystemExit(f"{side}: the DB hashes changed from one sample to the next")
    if hashes["eager"] != hashes["lazy"]:
        raise SystemExit("lazy and eager bases give different DB hashes")
    for side, payload in sides.items():
        print(
            f"{side:5}  pickle {len(payload) / 1e6:.2f} MB  load + factory {median(load[side]) * 1e3:6.1f} ms"
            f"  50 tasks on it {median(tasks_cpu[side]) * 1e3:6.1f} ms"
            f"  both {median([a + b for a, b in zip(load[side], tasks_cpu[side], strict=True)]) * 1e3:6.1f} ms"
        )
    print("the 50 tasks' DB hashes: the same on both sides")
    ratio = median(load["lazy"]) / median(load["eager"])
    print(f"RATIO tau2_base_load: lazy/eager = {ratio:.2f} (goal: < 1, with the 50 tasks' total no higher)")


if __name__ == "__main__":
    main()
