"""What a `kill -9` in the middle of a recording run costs: trials run again, calls paid twice, time.

    .venv/bin/python bench/kill_resume.py            (about 3 min on 2 busy cores)

1. Starts the deterministic stub upstream in its own process (with a small delay per answer, so
   that the run is killed inside a trial, as a real one would be).
2. Unkilled: `tauproxy run --domain airline --agent-llm openai/stub --user-llm scripted/user
   --num-tasks N --num-trials T` recording into a fresh cassette, timed (wall, CPU via wait4).
3. Killed: the same command into another cassette and run directory, SIGKILLed once half of its
   trials are saved; then the same command again, which resumes.
Prints the trials saved at the kill, the trials the resume ran, the requests the upstream saw
against the unkilled run's (any extra one was paid twice), and the time the kill cost: killed +
resumed against unkilled, wall and CPU. Ends with one RATIO line: (killed + resumed) / unkilled CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from _common import BASE_ENV, print_machine, run_timed, start_stub, stub_args, stub_stats, tauproxy_bin, workdir


def run_cmd(url: str, cassette: Path, save_to: Path, tasks: int, trials: int) -> list[str]:
    return [
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
        "--num-tasks",
        str(tasks),
        "--num-trials",
        str(trials),
        "--cassette",
        str(cassette),
        "--save-to",
        str(save_to),
    ]


def configure(url: str, **config: object) -> None:
    root = url.rsplit("/v1", 1)[0]
    request = urllib.request.Request(f"{root}/_admin/config", data=json.dumps(config).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass


def saved(run_dir: Path) -> int:
    path = run_dir / "simulations.jsonl"
    return sum(1 for line in path.read_bytes().split(b"\n") if line) if path.exists() else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-tasks", type=int, default=10)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--delay", type=float, default=0.01, help="seconds per stub answer")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    print_machine("kill_resume")
    tmp = workdir("kill", args.keep)
    _, url = start_stub()
    configure(url, delay_s=args.delay)
    planned = args.num_tasks * args.trials

    before = stub_stats(url)["requests"]
    whole = run_timed(run_cmd(url, tmp / "c-whole", tmp / "whole", args.num_tasks, args.trials)).check("unkilled")
    whole_requests = stub_stats(url)["requests"] - before
    print(f"unkilled: {planned} trials, wall {whole.wall_s:.2f} s, cpu {whole.cpu_s:.2f} s, {whole_requests} requests")

    cmd = run_cmd(url, tmp / "c-killed", tmp / "killed", args.num_tasks, args.trials)
    before = stub_stats(url)["requests"]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=BASE_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while saved(tmp / "killed") < planned // 2 and proc.poll() is None:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    _, _, usage = os.wait4(proc.pid, 0)
    killed_wall, killed_cpu = time.perf_counter() - started, usage.ru_utime + usage.ru_stime
    at_kill = saved(tmp / "killed")
    killed_requests = stub_stats(url)["requests"] - before
    print(
        f"killed: after {at_kill} saved trials, wall {killed_wall:.2f} s, cpu {killed_cpu:.2f} s, "
        f"{killed_requests} requests"
    )

    before = stub_stats(url)["requests"]
    resumed = run_timed(cmd).check("resume")
    resumed_requests = stub_stats(url)["requests"] - before
    ran = saved(tmp / "killed") - at_kill
    results = json.loads((tmp / "killed" / "results.json").read_text(encoding="utf-8"))
    replayed = [sim for sim in results["simulations"] if any(c["source"] == "replay" for c in sim["calls"])]
    calls = sum(c["source"] == "replay" for sim in replayed for c in sim["calls"])
    print(
        f"resumed: ran {ran} of {planned} trials, of which {len(replayed)} had begun before the kill (run again, "
        f"{calls} of their calls replayed); wall {resumed.wall_s:.2f} s, cpu {resumed.cpu_s:.2f} s, "
        f"{resumed_requests} requests"
    )
    paid_twice = killed_requests + resumed_requests - whole_requests
    lost_wall = killed_wall + resumed.wall_s - whole.wall_s
    lost_cpu = killed_cpu + resumed.cpu_s - whole.cpu_s
    print(f"requests paid twice: {paid_twice}; time the kill cost: wall {lost_wall:+.2f} s, cpu {lost_cpu:+.2f} s")
    print(
        f"RATIO kill_resume_cpu: ours/theirs = {(killed_cpu + resumed.cpu_s) / whole.cpu_s:.3f} (goal: about 1 + one "
        "process start; killed + resumed CPU / unkilled CPU)"
    )


if __name__ == "__main__":
    main()
