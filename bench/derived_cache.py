"""The cache of derived artefacts (tauproxy/derived_cache.py): each artefact built against read back, and
strict replays with the cache off against warm.

    .venv/bin/python bench/derived_cache.py [--num-tasks 50 --trials 4 --rounds 4] [--no-tau2-replay]

1. In this process, per artefact, CPU time (median of --reps): built as with `TAUPROXY_CACHE_DIR=off`
   against read from a warm cache: airline's generated pack database (`build_db(0)` + canonical JSON),
   τ²'s airline database (`get_environment()`, i.e. `DB.load`), τ²'s airline catalog, τ²'s prompts.
2. Child processes, interleaved off / warm for --rounds: the demo's strict replay (airline 10 x 4 from
   the shipped cassette) and, unless --no-tau2-replay, a strict replay of `tau2/airline` --num-tasks x
   --trials recorded first through the stub upstream. CPU (user + system) from each child's rusage.
Ends with RATIO lines: warm / off CPU (goal: below 1; information for the issue's replay floor).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import BASE_ENV, REPO, print_machine, start_stub, tauproxy_bin, workdir

UNREACHABLE = "http://127.0.0.1:9/v1"


def cpu_median(fn: Callable[[], Any], reps: int, before: Callable[[], None] = lambda: None) -> float:
    times = []
    for _ in range(reps):
        before()
        started = time.process_time()
        fn()
        times.append(time.process_time() - started)
    return statistics.median(times)


def artefacts(reps: int, cache: Path) -> None:
    os.environ["TAUPROXY_CACHE_DIR"] = str(cache)
    from tauproxy.derived_cache import cached
    from tauproxy.domain import pack
    from tauproxy.domain.state import BaseState

    root = pack.find_pack_dir("airline")
    module = pack._load_tools_module(root)
    build_state = cpu_median(lambda: BaseState(pack._load_db(root, module)), reps)
    pack._base_state(root, module)  # fill
    read_state = cpu_median(lambda: pack._base_state(root, module), reps)
    rows = [("airline pack DB (build_db + canonical JSON)", build_state, read_state)]
    try:
        import tau2  # noqa: F401
    except ImportError:
        print("tau2 not installed: τ²'s artefacts skipped")
    else:
        from tauproxy.tau2bench import domain, source
        from tauproxy.tau2bench.cow import BaseDatabases
        from tauproxy.tau2bench.environments import base_databases
        from tauproxy.tau2bench.registry import tau2_registry

        reference = tau2_registry().domains["airline"]
        constructor = reference.load()
        build_db = cpu_median(lambda: BaseDatabases.load(constructor), reps)
        base_databases(reference, constructor, user_db=False)
        read_db = cpu_median(lambda: base_databases(reference, constructor, user_db=False), reps)
        rows.append(("τ² airline DB (DB.load, validated)", build_db, read_db))
        catalog = domain.load_catalog("tau2/airline")
        task_set = domain.registered_task_set(catalog.domain, None)
        build_catalog = cpu_median(lambda: domain._build_catalog(catalog.domain, task_set), reps)
        read_catalog = cpu_median(
            lambda: domain.load_catalog("tau2/airline"), reps, before=domain.load_catalog.cache_clear
        )
        rows.append(("τ² airline catalog (DB already loaded)", build_catalog, read_catalog))
        build_prompts = cpu_median(source.read_prompts, reps)
        read_prompts = cpu_median(
            lambda: cached("tau2-prompts-bench", {}, source.Tau2Prompts, source.read_prompts), reps
        )
        rows.append(("τ² prompts (ast over 3 sources)", build_prompts, read_prompts))
    for name, built, read in rows:
        print(
            f"  {name:<46} built {built * 1000:8.1f} ms   from the cache {read * 1000:7.1f} ms   {built / read:6.1f}x"
        )


def child_cpu(argv: list[str], cache: str) -> float:
    proc = subprocess.Popen(
        argv, env={**BASE_ENV, "TAUPROXY_CACHE_DIR": cache}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    assert proc.stderr is not None
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{proc.stderr.read().decode()[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def interleaved(name: str, argv: Callable[[str], list[str]], rounds: int, cache: Path) -> None:
    child_cpu(argv("fill"), str(cache))  # the warm side's cache, filled once
    cpu: dict[str, list[float]] = {"off": [], "warm": []}
    for index in range(rounds):
        cpu["off"].append(child_cpu(argv(f"off{index}"), "off"))
        cpu["warm"].append(child_cpu(argv(f"warm{index}"), str(cache)))
    off, warm = statistics.median(cpu["off"]), statistics.median(cpu["warm"])
    for side, values in cpu.items():
        print(
            f"  {name} {side:<4} cpu "
            + " ".join(f"{v:.2f}" for v in values)
            + f"  median {statistics.median(values):.2f} s"
        )
    print(f"RATIO derived_cache {name}: warm/off cpu = {warm / off:.3f} ({off:.2f} s -> {warm:.2f} s; goal: < 1)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-tasks", type=int, default=50)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--no-tau2-replay", action="store_true")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    print_machine("derived_cache")
    tmp = workdir("derived", args.keep)
    print("1. per artefact, CPU median of", args.reps)
    artefacts(args.reps, tmp / "cache-inproc")

    print("2. strict replays, off / warm interleaved,", args.rounds, "rounds")
    cassettes = REPO / "cassettes"

    def demo(name: str) -> list[str]:
        return [
            *tauproxy_bin(),
            "run",
            "--domain",
            "airline",
            "--agent-llm",
            "scripted/oracle?error_rate=0.2",
            "--user-llm",
            "scripted/user",
            "--num-tasks",
            "10",
            "--num-trials",
            "4",
            "--seed",
            "300",
            "--cassette",
            str(cassettes / "baseline-airline"),
            "--record-mode",
            "replay",
            "--prices",
            str(cassettes / "demo-prices.json"),
            "--save-to",
            str(tmp / "demo" / name),
        ]

    interleaved("demo replay (airline 10 x 4)", demo, args.rounds, tmp / "cache")
    if args.no_tau2_replay:
        return
    _, url = start_stub()

    def tau2(name: str, api_base: str = UNREACHABLE, mode: str = "replay") -> list[str]:
        llm = json.dumps({"api_base": api_base, "api_key": "sk-x", "num_retries": 0, "temperature": 0})
        return [
            *tauproxy_bin(),
            "run",
            "--domain",
            "tau2/airline",
            "--agent-llm",
            "openai/stub",
            "--user-llm",
            "openai/stub-user",
            "--agent-llm-args",
            llm,
            "--user-llm-args",
            llm,
            "--num-trials",
            str(args.trials),
            "--num-tasks",
            str(args.num_tasks),
            "--cassette",
            str(tmp / "tau2-cassette"),
            "--record-mode",
            mode,
            "--save-to",
            str(tmp / "tau2" / name),
        ]

    child_cpu(tau2("record", url, "record"), "off")
    interleaved(f"tau2/airline replay ({args.num_tasks} x {args.trials})", tau2, args.rounds, tmp / "cache")


if __name__ == "__main__":
    main()
