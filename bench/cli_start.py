"""CLI start-up: `tauproxy --help` and a small strict replay, and proof that neither imports litellm.

    .venv/bin/python bench/cli_start.py               (about 1.5 min)

1. `tauproxy --help` (the installed console script) in a child process, --reps times (default 10).
2. Records a small run through the stub (mock, all tasks, 1 trial, agent openai/stub via litellm,
   user scripted/user), then times its strict replay (`--record-mode replay`, no network), --reps
   times.
3. Runs both once more inside a wrapper (the console script's command, `main()`, with the same argv) that
   reports whether `litellm` is in sys.modules afterwards.
4. For comparison ("theirs"): `python -c "import litellm"`, the start-up floor of any CLI that imports
   litellm at start (as tau2's does), --litellm-reps times (default 5).
Prints the raw numbers, then one RATIO line: `tauproxy --help` median / `import litellm` median.
"""

from __future__ import annotations

import argparse
import json
import sys

from _common import loadavg, median, print_machine, run_timed, spread, start_stub, stub_args, tauproxy_bin, workdir

PROBE = """
import importlib, sys
sys.argv = ["tauproxy", *{argv}]
code = 0
try:
    # The console script's module and command, without its exit (console.leave), which would end this
    # wrapper before it reports.
    importlib.import_module("tauproxy_cli.console").main()
except SystemExit as exc:
    code = exc.code or 0
sys.stderr.write("LITELLM_IMPORTED=%s\\n" % ("litellm" in sys.modules))
sys.exit(code)
"""


def litellm_imported(argv: list[str]) -> bool:
    timed = run_timed([sys.executable, "-c", PROBE.format(argv=json.dumps(argv))]).check("probe " + " ".join(argv))
    lines = [line for line in timed.stderr.splitlines() if line.startswith("LITELLM_IMPORTED=")]
    if not lines:
        raise SystemExit(f"probe printed no verdict:\n{timed.stderr[-2000:]}")
    return lines[-1].endswith("True")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--litellm-reps", type=int, default=5)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    print_machine("cli_start")
    tmp = workdir("cli", args.keep)
    _, url = start_stub()

    helps = [run_timed([*tauproxy_bin(), "--help"]).check("tauproxy --help") for _ in range(args.reps)]
    print(f"tauproxy --help wall:  {spread([t.wall_s for t in helps])}")
    print(f"tauproxy --help cpu:   {spread([t.cpu_s for t in helps])}")
    print(f"tauproxy --help RSS:   {spread([t.maxrss_mb for t in helps], 'MB', '.1f')}")

    cassette = tmp / "cassette"
    common = [
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "openai/stub",
        "--agent-llm-args",
        stub_args(url),
        "--user-llm",
        "scripted/user",
        "--num-trials",
        "1",
        "--cassette",
        str(cassette),
    ]
    record = run_timed([*tauproxy_bin(), *common, "--record-mode", "record"]).check("recording")
    print(
        f"record (live) once:    wall {record.wall_s:.3f} s, cpu {record.cpu_s:.3f} s, "
        f"peak RSS {record.maxrss_mb:.1f} MB"
    )
    replay_argv = [*common, "--record-mode", "replay"]
    replays = [run_timed([*tauproxy_bin(), *replay_argv]).check("replay") for _ in range(args.reps)]
    print(f"small replay wall:     {spread([t.wall_s for t in replays])}")
    print(f"small replay cpu:      {spread([t.cpu_s for t in replays])}")
    print(f"small replay RSS:      {spread([t.maxrss_mb for t in replays], 'MB', '.1f')}")

    help_imports = litellm_imported(["--help"])
    replay_imports = litellm_imported(replay_argv)
    record_imports = litellm_imported([*common[:-1], str(tmp / "cassette-probe"), "--record-mode", "record"])
    print(
        f"litellm imported by --help: {help_imports}; by the replay: {replay_imports}; "
        f"by a live record (control, must be True): {record_imports}"
    )

    imports = [
        run_timed([sys.executable, "-c", "import litellm"]).check("import litellm") for _ in range(args.litellm_reps)
    ]
    print(f"python -c 'import litellm' wall: {spread([t.wall_s for t in imports])}")
    print(f"python -c 'import litellm' cpu:  {spread([t.cpu_s for t in imports])}")

    ours = median([t.wall_s for t in helps])
    ours_cpu = median([t.cpu_s for t in helps])
    theirs = median([t.wall_s for t in imports])
    no_litellm = not help_imports and not replay_imports and record_imports
    print(
        f"RATIO cli_start: ours/theirs = {ours / theirs:.3f} (goal: tauproxy --help < 0.5 s: "
        f"{'PASS' if ours < 0.5 else 'FAIL'} at {ours:.3f} s wall, {ours_cpu:.3f} s CPU, load {loadavg()}; "
        f"litellm never imported by --help or replay: {'PASS' if no_litellm else 'FAIL'}; "
        f"theirs = import litellm {theirs:.3f} s; small replay {median([t.wall_s for t in replays]):.3f} s)"
    )


if __name__ == "__main__":
    main()
