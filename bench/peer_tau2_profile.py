"""Where τ²-bench's time goes in a run through the stub: DB loads and grading versus the rest.

    .venv/bin/python bench/peer_tau2_profile.py --peer-venv /tmp/peer     (about 30 s)

Explains peer_tau2_cache.py's numbers (a warm cached tau2 re-run costs as much CPU as a cold one).
Runs `tau2 run --domain airline --num-tasks 10 --num-trials 1` (no LLM cache; agent and user through
the stub) in the peer venv with three functions wrapped to count calls and their CPU time:
`tau2.environment.db.DB.load` (reads and validates the domain DB from JSON), the evaluator's
`calculate_reward` (the DB check) and `tau2.run.run_task` (a whole simulation). tau2 runs
simulations on worker threads, which cProfile on the main thread does not see; the wrappers do.
Prints the counts, then one RATIO line: CPU share of DB.load in the whole process. Skips like
peer_tau2_cache.py without the peer venv.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

from _common import BASE_ENV, print_machine, run_timed, start_stub, workdir

WRAPPED = r"""
import atexit, functools, json, sys, time
import tau2.environment.db as dbm
import tau2.evaluator.evaluator_env as ee
import tau2.run as run

stats = {}

def wrap(owner, name, label):
    raw = owner.__dict__[name]
    is_classmethod = isinstance(raw, classmethod)
    fn = raw.__func__ if is_classmethod else raw

    @functools.wraps(fn)
    def timed(*args, **kwargs):
        started = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            count, total = stats.get(label, (0, 0.0))
            stats[label] = (count + 1, total + time.process_time() - started)

    setattr(owner, name, classmethod(timed) if is_classmethod else timed)

wrap(dbm.DB, "load", "DB.load")
for value in list(vars(ee).values()):
    if isinstance(value, type) and "calculate_reward" in value.__dict__:
        wrap(value, "calculate_reward", value.__name__ + ".calculate_reward")
wrap(run, "run_task", "run_task")
started = time.process_time()
atexit.register(lambda: sys.stderr.write("STATS " + json.dumps(
    {"stats": stats, "process_cpu": time.process_time() - started}) + "\n"))
from tau2.cli import main
sys.argv = ["tau2", *sys.argv[1:]]
main()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer-venv", type=Path, default=Path("/tmp/peer"))
    parser.add_argument("--num-tasks", type=int, default=10)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    print_machine("peer_tau2_profile")
    python = args.peer_venv / "bin" / "python"
    probe = None
    if python.exists():
        probe = subprocess.run([str(python), "-c", "import tau2"], capture_output=True, text=True)
    if probe is None or probe.returncode != 0:
        reason = f"tau2 is not importable with {python} (see bench/README.md)"
        print(f"SKIP: {reason}")
        print(f"RATIO peer_tau2_profile: ours/theirs = n/a (skipped: {reason})")
        return
    tmp = workdir("peer-profile", args.keep)
    _, url = start_stub()
    llm_args = json.dumps({"api_base": url, "api_key": "sk-x", "temperature": 0.0})
    cmd = [
        str(python),
        "-c",
        WRAPPED,
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
        "1",
        "--num-tasks",
        str(args.num_tasks),
        "--max-concurrency",
        "1",
        "--results-dir",
        str(tmp),
        "--save-to",
        "profile",
    ]
    timed = run_timed(cmd, env=BASE_ENV, cwd=tmp).check("tau2 run")
    line = next(x for x in reversed(timed.stderr.splitlines()) if x.startswith("STATS "))
    data = json.loads(line[len("STATS ") :])
    cpu = data["process_cpu"]
    print(
        f"tau2 run: {args.num_tasks} simulations, wall {timed.wall_s:.2f} s, child CPU {timed.cpu_s:.2f} s, "
        f"CPU after imports {cpu:.2f} s"
    )
    for label, (count, seconds) in sorted(data["stats"].items(), key=lambda kv: -kv[1][1]):
        print(
            f"  {label:40s} {count:4d} calls  {seconds:7.2f} s CPU  ({seconds / count:.3f} s each, "
            f"{100 * seconds / cpu:.0f}% of the run)"
        )
    db_load = data["stats"].get("DB.load", (0, 0.0))
    print(
        f"RATIO peer_tau2_profile: ours/theirs = {db_load[1] / cpu:.3f} (share of tau2's CPU spent in DB.load, "
        f"{db_load[0]} loads for {args.num_tasks} simulations; information only, no goal)"
    )


if __name__ == "__main__":
    main()
