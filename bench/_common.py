"""Helpers shared by the benchmark scripts: machine facts, the stub upstream, timed subprocesses.

Not a benchmark itself. Every script in bench/ imports it as `_common` (bench/ is the script's own
directory, so it is on sys.path when a script runs as `.venv/bin/python bench/<name>.py`).
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

# litellm fetches its price map over the network at import unless told not to; we are offline.
BASE_ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def print_machine(name: str) -> None:
    print(
        f"# {name}  date={datetime.date.today().isoformat()}  nproc={os.cpu_count()}  "
        f"cpu={cpu_model()!r}  python={platform.python_version()}  loadavg(1,5,15)={loadavg()}",
        flush=True,
    )


def per_call(fn: Callable[[int], Any], reps: int, budget_s: float | None = None, min_reps: int = 20) -> list[float]:
    """Seconds per call, one call per sample; with a budget, stop after it (but not before min_reps)."""
    samples: list[float] = []
    deadline = None if budget_s is None else time.perf_counter() + budget_s
    for i in range(reps):
        started = time.perf_counter_ns()
        fn(i)
        samples.append((time.perf_counter_ns() - started) / 1e9)
        if deadline is not None and i + 1 >= min_reps and time.perf_counter() > deadline:
            break
    return samples


def play_task(env: Any, task: Any, with_actions: bool = True) -> None:
    """Set a τ² task's initial state on `env` and make its golden actions (each one's error ignored, as
    τ²'s evaluator ignores them): what grading a trial does to an environment."""
    state = task.initial_state
    env.set_state(
        initialization_data=state.initialization_data if state is not None else None,
        initialization_actions=state.initialization_actions if state is not None else None,
        message_history=[],
    )
    criteria = task.evaluation_criteria
    for action in (criteria.actions or []) if (criteria is not None and with_actions) else []:
        with contextlib.suppress(Exception):
            env.make_tool_call(action.name, requestor=action.requestor, **action.arguments)


def median(values: list[float]) -> float:
    return statistics.median(values)


def spread(values: list[float], unit: str = "s", fmt: str = ".3f") -> str:
    """`median (min–max, n=N)` for one line of raw numbers."""
    return (
        f"median {format(median(values), fmt)} {unit} (min {format(min(values), fmt)}, "
        f"max {format(max(values), fmt)}, n={len(values)})"
    )


def workdir(prefix: str, keep: bool = False) -> Path:
    path = Path(tempfile.mkdtemp(prefix=f"tauproxy-bench-{prefix}-"))
    if not keep:
        atexit.register(shutil.rmtree, path, True)
    return path


# -- the stub upstream ---------------------------------------------------------------------------


def start_stub() -> tuple[subprocess.Popen[str], str]:
    """The deterministic OpenAI-compatible stub in its own process (so it never competes for our
    GIL); killed at exit. Returns (process, base url ending in /v1)."""
    from stub_upstream import start_stub_process

    proc, url = start_stub_process()

    def stop() -> None:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)

    atexit.register(stop)
    return proc, url


def stub_stats(url: str) -> dict[str, Any]:
    root = url.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(f"{root}/_admin/stats", timeout=10) as response:
        return json.loads(response.read())


def stub_args(url: str) -> str:
    return json.dumps({"api_base": url, "api_key": "sk-x", "num_retries": 0})


# -- timed subprocesses --------------------------------------------------------------------------


def tauproxy_bin() -> list[str]:
    """The installed console script next to this interpreter (what a user runs)."""
    script = Path(sys.executable).parent / "tauproxy"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "tauproxy_cli"]


@dataclass
class Timed:
    wall_s: float
    cpu_s: float  # user + system of the child
    maxrss_mb: float  # peak resident set of the child itself (ru_maxrss, KiB on Linux, over 1024)
    returncode: int
    stdout: str
    stderr: str

    def check(self, what: str) -> Timed:
        if self.returncode != 0:
            raise SystemExit(f"{what} failed (exit {self.returncode})\n{self.stdout[-3000:]}\n{self.stderr[-3000:]}")
        return self


# Starts a command and writes its own peak RSS (KiB), CPU and wall seconds to the file argv[1]. A
# child's ru_maxrss counts the resident memory of the process that forked it (Linux carries the
# parent's high-water mark through fork and exec into the child's), so a child started by a bench that
# has grown reports at least the bench's size: floors.py, after measuring serve in-process, is 88 MB,
# and its replays all "peaked" at exactly 88 MB. Forked from this small launcher, the command's peak
# is its own; its CPU and wall are taken here too, so the launcher's own start is in neither.
_LAUNCHER = (
    "import os, subprocess, sys, time\n"
    "started = time.perf_counter()\n"
    "child = subprocess.Popen(sys.argv[2:])\n"
    "_, status, usage = os.wait4(child.pid, 0)\n"
    "wall = time.perf_counter() - started\n"
    "with open(sys.argv[1], 'w') as out:\n"
    "    out.write(f'{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime} {wall}')\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def run_timed(cmd: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None) -> Timed:
    """Run one child to completion: its own wall clock, CPU and peak RSS (from its rusage, taken by a
    small launcher: _LAUNCHER says why), so neither the stub, earlier children nor this process are
    mixed in."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "rusage"
        launched = [sys.executable, "-S", "-c", _LAUNCHER, str(report), *cmd]
        started = time.perf_counter()
        proc = subprocess.Popen(launched, stdout=out, stderr=err, env=env or BASE_ENV, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        maxrss_kib, cpu_s = float(usage.ru_maxrss), usage.ru_utime + usage.ru_stime
        if report.exists():  # else the command could not start: the launcher's error is in stderr
            kib, cpu, own_wall = report.read_text().split()
            maxrss_kib, cpu_s, wall = float(kib), float(cpu), float(own_wall)
        out.seek(0)
        err.seek(0)
        return Timed(
            wall_s=wall,
            cpu_s=cpu_s,
            maxrss_mb=maxrss_kib / 1024,
            returncode=proc.returncode,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
        )


def call_sources(run_dir: Path) -> dict[str, int]:
    """How many calls of a finished tauproxy run came from where (live / replay)."""
    counts: dict[str, int] = {}
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    for simulation in results["simulations"]:
        for call in simulation["calls"]:
            counts[call["source"]] = counts.get(call["source"], 0) + 1
    return counts


def cassette_calls(cassette: Path) -> int:
    """Call lines in a cassette (each line holding `"sample_key"` is one recorded call)."""
    from tauproxy.store.cassette import Cassette

    return len(Cassette.open(cassette, create=False))
