"""Where a strict replay spends its time (pyinstrument), to find hot paths worth fixing.

    .venv/bin/pip install pyinstrument && .venv/bin/python bench/profile_replay.py   (about 2 min)

Records airline (first --num-tasks tasks, default all) x --trials (default 4) through the stub, then
replays it strictly in this process with every trial on the main thread (what `execute` does on its
worker thread: run_trial, then append to the run directory, then write results.json), under
pyinstrument. Prints the call tree (trimmed), the top functions by self time and the known hot spots,
then one RATIO line: the share of the replay spent hashing whole DB states for the DB check.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict

from _common import BASE_ENV, print_machine, start_stub, workdir

# Hot spots seen in earlier profiles: (function, file) -> label. Inclusive time, outermost call only.
HOT_SPOTS = {
    ("sha256", "state.py"): "State.sha256: canonical JSON + sha256 of the whole DB (end state and golden)",
    ("request_key", "key.py"): "request_key: canonicalise (drop nulls) + hash every request, tools included",
    ("fsync", None): "os.fsync: run directory, one per trial, and results.json",
    ("load_pack", "pack.py"): "load_pack: generate the airline DB at start",
    ("build_transport", "stack.py"): "build_transport: read and index the cassette",
    ("response_of", "cassette.py"): "Cassette.response_of: rebuild each replayed response",
}


def name_of(frame) -> str:
    return f"{frame.class_name + '.' if frame.class_name else ''}{frame.function}"


def self_times(frame, out: dict[tuple[str, str], float]) -> None:
    # pyinstrument puts a frame's own time in a synthetic "[self]" child: count only those leaves.
    if frame.is_synthetic:
        parent = frame.parent
        if parent is not None:
            out[(name_of(parent), f"{os.path.basename(parent.file_path or '?')}:{parent.line_no}")] += frame.time
        return
    if not frame.children:
        out[(name_of(frame), f"{os.path.basename(frame.file_path or '?')}:{frame.line_no}")] += frame.time
    for child in frame.children:
        self_times(child, out)


def hot_spots(frame, out: dict[str, float]) -> None:
    base = os.path.basename(frame.file_path or "")
    for (function, file), label in HOT_SPOTS.items():
        if frame.function == function and (file is None or base == file):
            out[label] += frame.time
            return
    for child in frame.children:
        hot_spots(child, out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-tasks", type=int, default=None)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    try:
        from pyinstrument import Profiler
    except ImportError:
        print("SKIP: pyinstrument is not installed (.venv/bin/pip install pyinstrument)")
        print("RATIO profile_replay: ours/theirs = n/a (skipped: no pyinstrument)")
        return
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = BASE_ENV["LITELLM_LOCAL_MODEL_COST_MAP"]

    from tauproxy.engine.llm_config import LLMConfig
    from tauproxy.proxy.modes import RecordMode
    from tauproxy.runner.config import RunConfig
    from tauproxy.runner.run import execute, prepare
    from tauproxy.runner.stack import build_transport
    from tauproxy.runner.trial import run_trial

    print_machine("profile_replay")
    tmp = workdir("profile", args.keep)
    _, url = start_stub()
    agent = LLMConfig(model="openai/stub", args={"api_base": url, "api_key": "sk-x", "num_retries": 0})
    base = RunConfig(
        domain="airline", agent=agent, num_trials=args.trials, num_tasks=args.num_tasks, cassette=tmp / "cassette"
    )
    execute(base.model_copy(update={"record_mode": RecordMode.RECORD}))

    config = base.model_copy(update={"record_mode": RecordMode.REPLAY, "save_to": tmp / "replay"})
    profiler = Profiler(interval=0.0005)
    started = time.perf_counter()
    profiler.start()
    run = prepare(config)
    transport = build_transport(config, run.pack, run.pricing)
    sims = []
    for spec in run.specs:
        sim = run_trial(spec, run.pack, config, transport, run.pricing)
        run.results_dir.append(sim)
        sims.append(sim)
    run.results_dir.write_results(run.info, run.tasks, sims)
    profiler.stop()
    wall = time.perf_counter() - started
    calls = sum(len(s.calls) for s in sims)
    print(
        f"replayed {len(sims)} trials, {calls} calls in {wall:.2f} s under the profiler "
        f"({calls / wall:.0f} calls/s, profiler overhead included)"
    )

    print(profiler.output_text(unicode=False, color=False, show_all=False, timeline=False)[:12000])
    session = profiler.last_session
    totals: dict[tuple[str, str], float] = defaultdict(float)
    self_times(session.root_frame(), totals)
    duration = session.duration
    print(f"top {args.top} functions by self time (of {duration:.2f} s):")
    for (function, where), seconds in sorted(totals.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {seconds:7.3f} s {100 * seconds / duration:5.1f}%  {function}  {where}")

    spots: dict[str, float] = defaultdict(float)
    hot_spots(session.root_frame(), spots)
    print("hot spots (inclusive time, share of the profiled replay):")
    for label, seconds in sorted(spots.items(), key=lambda kv: -kv[1]):
        print(f"  {seconds:7.3f} s {100 * seconds / duration:5.1f}%  {label}")
    share = spots[HOT_SPOTS[("sha256", "state.py")]] / duration
    print(
        f"RATIO profile_replay: ours/theirs = {share:.3f} (share of replay wall time spent hashing whole DB "
        f"states for the DB check; information only, no goal; CPU time {session.cpu_time:.2f} s of "
        f"{duration:.2f} s wall)"
    )


if __name__ == "__main__":
    main()
