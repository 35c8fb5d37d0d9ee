"""Trials per second of a strict replay on Ray (2 local workers) versus the thread executor.

    .venv/bin/python bench/ray_vs_thread.py            (about 2 min on 2 busy cores; needs tauproxy[ray])

1. Starts the deterministic stub upstream (tests/stub_upstream.py) in its own process and records the
   mock domain once: `tauproxy run --domain mock --agent-llm openai/stub --num-trials N --record-mode
   record` (thread executor), so the replay holds litellm-shaped agent calls as a real run would.
2. Thread: the same command with `--record-mode replay --max-concurrency 2`, --reps times.
3. Ray, end to end: `--executor ray` with no address, so each run starts and stops its own local Ray
   instance (os.cpu_count() CPUs: 2 workers here), --reps times. This is what a user pays.
4. Ray, joined: a 2-CPU Ray instance started once by this script, each run joining it with
   `--ray-address`: the same minus `ray.init`/`shutdown` (a job still starts its own workers).
Every run is the real CLI in a child process, each into a fresh --save-to; each replay is checked to
have made 0 live calls. Prints the raw numbers, then RATIO lines (ray trials/s over thread trials/s);
the last one, `ray_vs_thread`, is the end-to-end one.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable
from pathlib import Path

from _common import (
    BASE_ENV,
    Timed,
    call_sources,
    loadavg,
    median,
    print_machine,
    run_timed,
    spread,
    start_stub,
    stub_args,
    tauproxy_bin,
    workdir,
)


def run_cmd(url: str, cassette: Path, save_to: Path, mode: str, trials: int, *extra: str) -> list[str]:
    return [
        *tauproxy_bin(),
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "openai/stub",
        "--agent-llm-args",
        stub_args(url),
        "--num-trials",
        str(trials),
        "--cassette",
        str(cassette),
        "--record-mode",
        mode,
        "--save-to",
        str(save_to),
        *extra,
    ]


def replays(
    name: str, reps: int, make: Callable[[int], tuple[Path, list[str]]], trials: int, env: dict[str, str] | None = None
) -> list[float]:
    """Trials per second of `reps` strict replays; each must replay every call."""
    rates: list[float] = []
    for rep in range(reps):
        save_to, cmd = make(rep)
        timed: Timed = run_timed(cmd, env=env or BASE_ENV).check(f"{name} replay {rep}")
        sources = call_sources(save_to)
        if sources.get("live", 0):
            raise SystemExit(f"{name} replay {rep} made {sources['live']} live calls")
        rates.append(trials / timed.wall_s)
        print(
            f"  {name} rep {rep}: wall {timed.wall_s:.2f} s, driver cpu {timed.cpu_s:.2f} s, "
            f"{trials / timed.wall_s:.1f} trials/s, calls {sources}, load {loadavg()}",
            flush=True,
        )
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=8, help="trials per task (mock has 10 tasks)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    args = parser.parse_args()
    try:
        import ray
    except ImportError:
        raise SystemExit("needs the ray extra: .venv/bin/pip install -e '.[ray]'") from None

    print_machine("ray_vs_thread")
    tmp = workdir("ray", args.keep)
    _, url = start_stub()
    trials = 10 * args.trials
    cassette = tmp / "cassette"
    recorded = run_timed(run_cmd(url, cassette, tmp / "record", "record", args.trials)).check("record")
    print(
        f"workload: mock, 10 tasks x {args.trials} trials = {trials} trials, strict replay of a cassette recorded "
        f"in {recorded.wall_s:.1f} s (agent openai/stub via litellm, scripted user and judge); {args.reps} reps each"
    )

    def thread_run(rep: int) -> tuple[Path, list[str]]:
        save_to = tmp / f"thread-{rep}"
        return save_to, run_cmd(url, cassette, save_to, "replay", args.trials, "--max-concurrency", "2")

    def ray_run(rep: int) -> tuple[Path, list[str]]:
        save_to = tmp / f"ray-{rep}"
        return save_to, run_cmd(url, cassette, save_to, "replay", args.trials, "--executor", "ray")

    thread = replays("thread", args.reps, thread_run, trials)
    ray_own = replays("ray (own local instance)", args.reps, ray_run, trials)

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    try:
        address = ray.get_runtime_context().gcs_address

        def joined_run(rep: int) -> tuple[Path, list[str]]:
            save_to = tmp / f"joined-{rep}"
            return save_to, run_cmd(
                url, cassette, save_to, "replay", args.trials, "--executor", "ray", "--ray-address", address
            )

        # ray.init turned on token auth in our environment (Ray >= 2.5x); the joining runs need it too.
        joined_env = {**os.environ, **BASE_ENV, **{k: v for k, v in os.environ.items() if k.startswith("RAY_")}}
        ray_joined = replays("ray (joined 2-CPU instance)", args.reps, joined_run, trials, joined_env)
    finally:
        ray.shutdown()

    print(f"thread (max-concurrency 2): {spread(thread, 'trials/s', '.1f')}")
    print(f"ray, own local instance ({os.cpu_count()} CPUs): {spread(ray_own, 'trials/s', '.1f')}")
    print(f"ray, joined 2-CPU instance: {spread(ray_joined, 'trials/s', '.1f')}")
    print(
        f"RATIO ray_vs_thread_joined: ray/thread = {median(ray_joined) / median(thread):.3f} "
        f"({median(ray_joined):.1f} / {median(thread):.1f} trials/s, medians)"
    )
    print(
        f"RATIO ray_vs_thread: ray/thread = {median(ray_own) / median(thread):.3f} "
        f"({median(ray_own):.1f} / {median(thread):.1f} trials/s, medians, Ray start-up included)"
    )


if __name__ == "__main__":
    main()
