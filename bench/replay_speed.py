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

    .venv/bin/python bench/replay_speed.py --memory   (about 4 min)

Memory of long replays instead: records airline (all 60 tasks, scripted/oracle agent, scripted/user)
at 4, 16 and 64 trials (240, 960, 3840 trials) and replays each strictly, printing peak RSS and the
size of the results.json the run must hold and write; then one RATIO line: how much peak RSS grew per
trial beyond the results, from 960 to 3840 trials, relative to the 240-trial peak.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

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
        str(trials),
        "--max-concurrency",
        str(concurrency),
        "--cassette",
        str(cassette),
        "--record-mode",
        mode,
        "--save-to",
        str(save_to),
    ]
    if num_tasks:
        cmd += ["--num-tasks", str(num_tasks)]
    return cmd


def scripted_cmd(cassette, save_to, mode: str, trials: int) -> list[str]:
    return [
        *tauproxy_bin(),
        "run",
        "--domain",
        "airline",
        "--agent-llm",
        "scripted/oracle",
        "--user-llm",
        "scripted/user",
        "--num-trials",
        str(trials),
        "--cassette",
        str(cassette),
        "--record-mode",
        mode,
        "--save-to",
        str(save_to),
    ]


def memory(keep: bool, directory: Path | None) -> None:
    print_machine("replay_speed --memory")
    tmp = directory or workdir("replay-memory", keep)
    rows = []
    for trials in (4, 16, 64):
        cassette = tmp / f"cassette{trials}"
        # Recording resumes (or does nothing) when --dir holds an earlier recording.
        run_timed(scripted_cmd(cassette, tmp / f"rec{trials}", "record", trials)).check("record")
        shutil.rmtree(tmp / f"replay{trials}", ignore_errors=True)
        timed = run_timed(scripted_cmd(cassette, tmp / f"replay{trials}", "replay", trials)).check("replay")
        results = (tmp / f"replay{trials}" / "results.json").stat().st_size / 1e6
        size = (cassette / "calls.jsonl").stat().st_size / 1e6
        rows.append((60 * trials, timed.maxrss_mb, results))
        print(
            f"{60 * trials:5d} trials: replay wall {timed.wall_s:6.2f} s  cpu {timed.cpu_s:6.2f} s  peak RSS "
            f"{timed.maxrss_mb:6.1f} MB  results.json {results:6.1f} MB  cassette {size:6.1f} MB  load {loadavg()}",
            flush=True,
        )
    (n1, rss1, _), (n2, rss2, res2), (n3, rss3, res3) = rows
    per_trial = ((rss3 - rss2) - (res3 - res2)) / (n3 - n2)
    print(
        f"peak RSS growth 960 -> 3840 trials: {(rss3 - rss2) / (n3 - n2) * 1000:.1f} kB/trial, of which results.json "
        f"{(res3 - res2) / (n3 - n2) * 1000:.1f} kB/trial"
    )
    print(
        f"RATIO replay_memory_growth: ours/theirs = {per_trial * (n3 - n1) / rss1:.3f} (goal: small; peak RSS "
        f"growth beyond results.json from 240 to 3840 trials at the 960->3840 rate / the 240-trial peak "
        f"{rss1:.0f} MB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory", action="store_true", help="peak memory of long replays instead")
    parser.add_argument("--dir", type=Path, help="with --memory: work (and keep recordings) here")
    parser.add_argument("--num-tasks", type=int, default=None, help="first N airline tasks (default: all 60)")
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--lives", type=int, default=3, help="live (recording) repetitions")
    parser.add_argument("--replays", type=int, default=5, help="strict replay repetitions")
    parser.add_argument("--max-concurrency", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the temp directory")
    args = parser.parse_args()
    if args.memory:
        memory(args.keep, args.dir)
        return

    print_machine("replay_speed")
    tmp = workdir("replay", args.keep)
    _, url = start_stub()
    tasks = args.num_tasks or "all"
    print(
        f"workload: airline, tasks={tasks}, trials={args.trials}, agent openai/stub via litellm -> stub, "
        f"user scripted/user, max-concurrency {args.max_concurrency}; dir {tmp}"
    )

    lives = []
    for i in range(args.lives):
        before = stub_stats(url)["requests"]
        timed = run_timed(
            run_cmd(
                url, tmp / f"cassette{i}", tmp / f"live{i}", "record", args.trials, args.num_tasks, args.max_concurrency
            )
        ).check("live run")
        http = stub_stats(url)["requests"] - before
        sources = call_sources(tmp / f"live{i}")
        lives.append(timed)
        print(
            f"live   #{i}: wall {timed.wall_s:7.2f} s  cpu {timed.cpu_s:6.2f} s  peak RSS {timed.maxrss_mb:6.1f} MB  "
            f"calls {sources}  HTTP requests to stub {http}  load {loadavg()}",
            flush=True,
        )

    cassette = tmp / "cassette0"
    calls = cassette_calls(cassette)
    size = (cassette / "calls.jsonl").stat().st_size
    print(f"cassette: {calls} calls, {size} bytes ({size / calls:.0f} B/call)")

    replays = []
    for j in range(args.replays):
        before = stub_stats(url)["requests"]
        timed = run_timed(
            run_cmd(url, cassette, tmp / f"replay{j}", "replay", args.trials, args.num_tasks, args.max_concurrency)
        ).check("replay run")
        http = stub_stats(url)["requests"] - before
        sources = call_sources(tmp / f"replay{j}")
        if sources.get("live") or http:
            raise SystemExit(f"replay #{j} was not a pure replay: sources {sources}, {http} HTTP requests")
        replays.append(timed)
        print(
            f"replay #{j}: wall {timed.wall_s:7.2f} s  cpu {timed.cpu_s:6.2f} s  peak RSS {timed.maxrss_mb:6.1f} MB  "
            f"calls {sources}  HTTP requests to stub {http}  load {loadavg()}",
            flush=True,
        )

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
    print(
        f"RATIO replay_speed: ours/theirs = {replay_wall / live_wall:.3f} (goal: < 1, strict replay wall "
        f"time / live-through-stub wall time, same {calls} calls; ours {replay_wall:.2f} s, "
        f"live {live_wall:.2f} s)"
    )


if __name__ == "__main__":
    main()
