"""Cassettes at scale: replay from a cassette of a million calls versus one holding only its own calls.

    .venv/bin/python bench/cassette_scale.py                 (about 40 min on 2 busy cores)
    .venv/bin/python bench/cassette_scale.py --calls 100000  (about 5 min)

1. Records a 240-trial run (airline, all 60 tasks x 4 trials, agent scripted/oracle, user
   scripted/user, thread executor) with `tauproxy run --record-mode record` into cassette OWN.
2. Builds cassette BIG: --calls (default 1,000,000) synthetic calls written directly in the cassette
   format (v4 lines: short conversations of 1 to 6 calls over 40 system prompts, each call a valid
   request whose key is key.request_key's, so `cassette verify` passes), then OWN's lines appended.
   Generating them is not timed as a cassette operation.
3. Index build: `Cassette.open(BIG)` in a child process (wall, CPU, peak RSS) and the index's size.
4. Strict replay of the same run (`--record-mode replay`, the real CLI in a child process) from OWN
   and from BIG, --replays times each, alternating; wall and CPU around it, peak RSS from the child's
   rusage. Both cassettes' indexes are built before the first timed replay.
5. `tauproxy cassette verify` (which builds a private index from scratch: it trusts no cache),
   `stats`, `merge` (BIG and OWN into a new cassette) and `prune` (BIG itself, last, keeping the
   run's calls), each timed once.
--reuse DIR (a directory kept with --keep, with --no-ops if BIG was pruned) repeats step 4 only.
Prints the raw numbers, then RATIO lines: replay from BIG / replay from OWN, for wall time and for
peak memory (goals: <= 1.5 and <= 1.3).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from _common import BASE_ENV, median, print_machine, run_timed, spread, tauproxy_bin, workdir

SYSTEMS = 40
PARAMETERS = {"type": "object", "properties": {"id": {"type": "string"}}}
TOOLS = [
    {
        "type": "function",
        "function": {"name": "lookup", "description": "Find a record by id.", "parameters": PARAMETERS},
    }
]


def run_cmd(cassette: Path, save_to: Path, mode: str, trials: int) -> list[str]:
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


def synthetic_lines(calls: int, seed: int = 7) -> Iterator[str]:
    """Lines of `calls` synthetic calls (short conversations) in the current entry format, as the
    writer would append them."""
    from tauproxy.data_model.call import Usage
    from tauproxy.data_model.key import canonical_json, message_hash, request_key, sample_key
    from tauproxy.store.entry import CassetteEntry, StoredRequest, StoredResponse
    from tauproxy.store.format import encode_blob_text, encode_call, encode_msg_text, encode_node, node_hash, short_ref

    out: list[str] = []  # flushed to the caller every conversation
    tools_hash = hashlib.sha256(canonical_json(TOOLS).encode()).hexdigest()
    out.append(encode_blob_text(short_ref(tools_hash), canonical_json(TOOLS)))
    systems = []
    for n in range(SYSTEMS):
        system = {"role": "system", "content": f"You are support agent number {n}. Be brief and exact. " * 4}
        digest = short_ref(message_hash(system))
        out.append(encode_msg_text(digest, canonical_json(system)))
        node = short_ref(node_hash(None, digest))
        out.append(encode_node(None, digest))
        systems.append((system, digest, node))
    written, conversation = 0, 0
    while written < calls:
        system, _, parent = systems[conversation % SYSTEMS]
        messages = [system]
        turns = 1 + (conversation * 2654435761 + seed) % 6
        for turn in range(min(turns, calls - written)):
            question = {
                "role": "user",
                "content": f"conversation {conversation} question {turn}: where is order "
                f"#{(conversation * 31 + turn) % 99991}?",
            }
            answer = {
                "role": "assistant",
                "content": f"Order #{(conversation * 31 + turn) % 99991} ships on day "
                f"{turn + 1}; anything else, conversation {conversation}?",
            }
            question_ref, answer_ref = short_ref(message_hash(question)), short_ref(message_hash(answer))
            out.append(encode_msg_text(question_ref, canonical_json(question)))
            out.append(encode_msg_text(answer_ref, canonical_json(answer)))
            messages.append(question)
            node = short_ref(node_hash(parent, question_ref))
            out.append(encode_node(parent, question_ref))
            wire = {
                "model": "openai/synthetic",
                "messages": messages,
                "tools": TOOLS,
                "tool_choice": "auto",
                "seed": conversation,
            }
            key = request_key(wire)
            task = f"synthetic_{conversation}"
            out.append(
                encode_call(
                    CassetteEntry(  # the key is derived on read: written as the writer does
                        key=key,
                        sample_key=sample_key(key, conversation, task, 0, 0),
                        task_id=task,
                        trial=0,
                        occurrence=0,
                        seed=conversation,
                        role="agent",
                        call_index=turn,
                        request=StoredRequest(
                            model="openai/synthetic",
                            chain=node,
                            tools=short_ref(tools_hash),
                            tool_choice="auto",
                            params={"seed": conversation},
                        ),
                        response=StoredResponse(message=answer_ref, finish_reason="stop"),
                        usage=Usage(prompt_tokens=40 + 20 * turn, completion_tokens=18, total_tokens=58 + 20 * turn),
                        latency_s=0.5,
                        recorded_at="2026-12-01T00:00:00Z",
                    )
                )
            )
            messages.append(answer)
            answer_node = short_ref(node_hash(node, answer_ref))
            out.append(encode_node(node, answer_ref))
            parent = answer_node
            written += 1
        conversation += 1
        yield from out
        out.clear()


def write_big(path: Path, calls: int, own: Path) -> int:
    path.mkdir(parents=True)
    with (path / "calls.jsonl").open("w", encoding="utf-8", buffering=1 << 20) as handle:
        handle.writelines(synthetic_lines(calls))
        handle.write(own.joinpath("calls.jsonl").read_text(encoding="utf-8"))
    return calls


def timed_python(code: str) -> tuple[float, float, float, str]:
    import sys

    done = run_timed([sys.executable, "-c", code], env=BASE_ENV).check("python -c")
    return done.wall_s, done.cpu_s, done.maxrss_mb, done.stdout.strip()


def index_files(cassette: Path) -> int:
    return sum(path.stat().st_size for path in (cassette / ".tauproxy-index").glob("*.sqlite"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1_000_000, help="synthetic calls in the big cassette")
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--replays", type=int, default=3)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--reuse",
        type=Path,
        help="a kept directory of an earlier run: replay and time again "
        "from its cassettes (their indexes already built), skipping steps 1-3",
    )
    parser.add_argument("--no-ops", action="store_true", help="skip step 5")
    parser.add_argument("--ops", default="verify,stats,merge,prune", help="which of step 5 (comma-separated)")
    args = parser.parse_args()

    print_machine("cassette_scale")
    if args.reuse:
        reuse(args)
        return
    tmp = workdir("scale", args.keep)
    own, big = tmp / "own", tmp / "big"
    record = run_timed(run_cmd(own, tmp / "rec", "record", args.trials)).check("record")
    own_calls = sum(1 for line in (own / "calls.jsonl").open() if '"t":"call"' in line)
    print(
        f"recorded run: airline 60 tasks x {args.trials} trials, {own_calls} calls, "
        f"{(own / 'calls.jsonl').stat().st_size} B, {record.wall_s:.1f} s",
        flush=True,
    )

    started = time.perf_counter()
    synthetic = write_big(big, args.calls, own)
    size = (big / "calls.jsonl").stat().st_size
    print(
        f"big cassette: {synthetic} synthetic + {own_calls} recorded calls, {size / 1e6:.0f} MB "
        f"(generated in {time.perf_counter() - started:.0f} s, not a cassette operation)",
        flush=True,
    )

    opener = (
        "from tauproxy.store.cassette import Cassette; c = Cassette.open({!r}, create=False); "
        "print(len(c), len(c.problems))"
    )
    wall, cpu, rss, out = timed_python(opener.format(str(big)))
    entries, problems = (int(v) for v in out.split())
    if problems:
        raise SystemExit(f"the big cassette has {problems} problems")
    index_bytes = index_files(big)
    millions = entries / 1e6
    print(
        f"index build: {entries} calls in {wall:.1f} s wall, {cpu:.1f} s CPU, peak {rss:.0f} MB; index "
        f"{index_bytes / 1e6:.0f} MB ({index_bytes / size:.2f} x calls.jsonl) | per million calls: "
        f"{wall / millions:.1f} s, {index_bytes / 1e6 / millions:.0f} MB",
        flush=True,
    )
    wall, cpu, rss, out = timed_python(opener.format(str(big)))
    print(f"open again (index up to date): {wall:.2f} s wall, peak {rss:.0f} MB", flush=True)
    timed_python(opener.format(str(own)))
    replays_and_ops(args, tmp, own_calls, entries, size, index_bytes)


def reuse(args: argparse.Namespace) -> None:
    tmp = args.reuse
    own, big = tmp / "own", tmp / "big"
    own_calls = sum(1 for line in (own / "calls.jsonl").open() if '"t":"call"' in line)
    size = (big / "calls.jsonl").stat().st_size
    opener = (
        "from tauproxy.store.cassette import Cassette; c = Cassette.open({!r}, create=False); "
        "print(len(c), len(c.problems))"
    )
    wall, _, rss, out = timed_python(opener.format(str(big)))
    entries = int(out.split()[0])
    timed_python(opener.format(str(own)))
    print(
        f"reusing {tmp}: big {entries} calls, {size / 1e6:.0f} MB, index {index_files(big) / 1e6:.0f} MB; "
        f"open with the index up to date: {wall:.2f} s wall, peak {rss:.0f} MB",
        flush=True,
    )
    for stale in tmp.glob("replay-*"):
        shutil.rmtree(stale)
    replays_and_ops(args, tmp, own_calls, entries, size, index_files(big))


def replays_and_ops(
    args: argparse.Namespace, tmp: Path, own_calls: int, entries: int, size: int, index_bytes: int
) -> None:
    own, big = tmp / "own", tmp / "big"
    results: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": [], "rss": []} for name in ("own", "big")}
    for n in range(args.replays):
        for name, cassette in (("own", own), ("big", big)):
            cmd = run_cmd(cassette, tmp / f"replay-{name}-{n}", "replay", args.trials)
            done = run_timed(cmd).check(f"replay {name}")
            results[name]["wall"].append(done.wall_s)
            results[name]["cpu"].append(done.cpu_s)
            results[name]["rss"].append(done.maxrss_mb)
    for name in ("own", "big"):
        r = results[name]
        print(
            f"replay from {name}: wall {spread(r['wall'])} | cpu {spread(r['cpu'])} | "
            f"peak RSS {spread(r['rss'], 'MB', '.0f')}",
            flush=True,
        )

    if not args.no_ops:
        time_ops(tmp, entries, args.ops.split(","))

    time_ratio = median(results["big"]["wall"]) / median(results["own"]["wall"])
    cpu_ratio = median(results["big"]["cpu"]) / median(results["own"]["cpu"])
    rss_ratio = median(results["big"]["rss"]) / median(results["own"]["rss"])
    print(
        json.dumps(
            {
                "calls": entries,
                "bytes": size,
                "index_bytes": index_bytes,
                **{f"{name}_{k}": median(v) for name, r in results.items() for k, v in r.items()},
            }
        )
    )
    print(
        f"RATIO cassette_scale_time: big/own = {time_ratio:.3f} (goal: <= 1.5, strict replay wall of a "
        f"{own_calls}-call run from a {entries}-call cassette / from its own; CPU {cpu_ratio:.3f})"
    )
    print(f"RATIO cassette_scale_memory: big/own = {rss_ratio:.3f} (goal: <= 1.3, peak RSS of the same replays)")


def time_ops(tmp: Path, entries: int, wanted: list[str]) -> None:
    own, big = tmp / "own", tmp / "big"
    shutil.rmtree(tmp / "merged", ignore_errors=True)
    cli = tauproxy_bin()
    ops = {
        "verify": [*cli, "cassette", "verify", str(big)],
        "stats": [*cli, "cassette", "stats", str(big)],
        "merge": [*cli, "cassette", "merge", str(tmp / "merged"), str(big), str(own)],
    }
    # Last, on BIG itself (its index is built; a copy would first need its own): BIG is left pruned.
    ops["prune"] = [*cli, "cassette", "prune", str(big), "--runs", str(tmp / "replay-own-0")]
    for name, cmd in ops.items():
        if name not in wanted:
            continue
        done = run_timed(cmd).check(name)
        last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        print(
            f"cassette {name} on {entries} calls: {done.wall_s:.1f} s wall, {done.cpu_s:.1f} s CPU, "
            f"peak {done.maxrss_mb:.0f} MB | {last[:160]}",
            flush=True,
        )


if __name__ == "__main__":
    main()
