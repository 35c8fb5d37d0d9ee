"""Strict replay of a recorded airline run versus the live run that recorded it.

    .venv/bin/python bench/replay_speed.py            (about 6 min on 2 busy cores)

1. Starts the deterministic stub upstream (tests/stub_upstream.py) in its own process.
2. Live: `tauproxy run --domain airline --agent-llm openai/stub --agent-llm-args '{"api_base": STUB,
   ...}' --user-llm scripted/user --num-trials 4 --record-mode record` into a fresh cassette, --lives
   times (each a fresh cassette and run directory). The agent's calls go through litellm and HTTP to
   the stub; the user is scripted; every call is recorded and fsynced.
3. Replay: the same command with `--record-mode replay` (strict and offline: a miss is an error)
   against the first live cassette, --replays times, each into a fresh --save-to.
Every run is the real CLI in a child process; wall time around it, CPU time and peak RSS from the
child's own rusage (os.wait4). Prints the raw numbers, then one RATIO line: replay wall / live wall.
"""

from __future__ import annotations

import argparse

from _common import (
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


def run_cmd(url: str, cassette, save_to, mode: str, trials: int, num_tasks: int | None, concurrency: int) -> list[str]:
    cmd = [*tauproxy_bin(), "run", "--domain", "airline", "--agent-llm", "openai/stub",
           "--agent-llm-args", stub_args(url), "--user-llm", "scripted/user",
           "--num-trials", str(trials), "--max-concurrency", str(concurrency),
           "--cassette", str(cassette), "--record-mode", mode, "--save-to", str(save_to)]
    if num_tasks:
        cmd += ["--num-tasks", str(num_tasks)]
    return cmd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-tasks", type=int, default=None, help="first N airline tasks (default: all 60)")
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--lives", type=int, default=3, help="live (recording) repetitions")
    parser.add_argument("--replays", type=int, default=5, help="strict replay repetitions")
    parser.add_argument("--max-concurrency", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    args = parser.parse_args()

    print_machine("replay_speed")
    tmp = workdir("replay", args.keep)
    _, url = start_stub()
    tasks = args.num_tasks or "all"
    print(f"workload: airline, tasks={tasks}, trials={args.trials}, agent openai/stub via litellm -> stub, "
          f"user scripted/user, max-concurrency {args.max_concurrency}; dir {tmp}")

    lives = []
    for i in range(args.lives):
        before = stub_stats(url)["requests"]
        timed = run_timed(run_cmd(url, tmp / f"cassette{i}", tmp / f"live{i}", "record", args.trials,
                                  args.num_tasks, args.max_concurrency)).check("live run")
        http = stub_stats(url)["requests"] - before
        sources = call_sources(tmp / f"live{i}")
        lives.append(timed)
        print(f"live   #{i}: wall {timed.wall_s:7.2f} s  cpu {timed.cpu_s:6.2f} s  peak RSS {timed.maxrss_mb:6.1f} MB  "
              f"calls {sources}  HTTP requests to stub {http}  load {loadavg()}", flush=True)

    cassette = tmp / "cassette0"
    calls = cassette_calls(cassette)
    size = (cassette / "calls.jsonl").stat().st_size
    print(f"cassette: {calls} calls, {size} bytes ({size / calls:.0f} B/call)")

    replays = []
    for j in range(args.replays):
        before = stub_stats(url)["requests"]
        timed = run_timed(run_cmd(url, cassette, tmp / f"replay{j}", "replay", args.trials,
                                  args.num_tasks, args.max_concurrency)).check("replay run")
        http = stub_stats(url)["requests"] - before
        sources = call_sources(tmp / f"replay{j}")
        if sources.get("live") or http:
            raise SystemExit(f"replay #{j} was not a pure replay: sources {sources}, {http} HTTP requests")
        replays.append(timed)
        print(f"replay #{j}: wall {timed.wall_s:7.2f} s  cpu {timed.cpu_s:6.2f} s  peak RSS {timed.maxrss_mb:6.1f} MB  "
              f"calls {sources}  HTTP requests to stub {http}  load {loadavg()}", flush=True)

    live_wall = median([t.wall_s for t in lives])
    replay_wall = median([t.wall_s for t in replays])
    live_cpu = median([t.cpu_s for t in lives])
    replay_cpu = median([t.cpu_s for t in replays])
    print(f"live wall:        {spread([t.wall_s for t in lives])}")
    print(f"live cpu:         {spread([t.cpu_s for t in lives])}")
    print(f"live peak RSS:    {spread([t.maxrss_mb for t in lives], 'MB', '.1f')}")
    print(f"replay wall:      {spread([t.wall_s for t in replays])}")
    print(f"replay cpu:       {spread([t.cpu_s for t in replays])}")
    print(f"replay peak RSS:  {spread([t.maxrss_mb for t in replays], 'MB', '.1f')}")
    print(f"calls per run:    {calls}")
    print(f"live calls/s:     {calls / live_wall:.0f} (wall), {calls / live_cpu:.0f} (per CPU s)")
    print(f"replay calls/s:   {calls / replay_wall:.0f} (wall), {calls / replay_cpu:.0f} (per CPU s)")
    print(f"replay/live cpu:  {replay_cpu / live_cpu:.3f}")
    print(f"RATIO replay_speed: ours/theirs = {replay_wall / live_wall:.3f} (goal: < 1, strict replay wall "
          f"time / live-through-stub wall time, same {calls} calls; ours {replay_wall:.2f} s, "
          f"live {live_wall:.2f} s)")


if __name__ == "__main__":
    main()
