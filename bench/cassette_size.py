"""Bytes per recorded call: a tauproxy cassette versus a vcrpy cassette holding the same calls.

    .venv/bin/python bench/cassette_size.py           (about 1 min; needs vcrpy, in the [dev] extra)

Workloads: mock (all tasks) x 4 trials, and airline (first 10 tasks) x 4 trials. Every role goes
through the stub upstream over HTTP (agent openai/stub, user openai/stub-user, judge openai/stub-judge)
so that every call tauproxy records is an HTTP call vcrpy can record too: same calls, same count.

1. tauproxy records the run in-process (`execute(RunConfig(..., record_mode=record))`).
2. vcrpy: every call of that cassette is re-issued, in file order, as the same litellm call
   (`Cassette.request_of(entry)` -> `litellm.completion(**body, api_base=STUB, api_key=..)`, the way
   the engine calls it) inside
   `vcr.VCR(match_on=["method","scheme","host","port","path","query","body"], record_mode="all")
   .use_cassette(path)`; `--client httpx` posts the body straight with httpx instead.
3. Compares file sizes, and gzip -6 sizes (git stores objects zlib-compressed, so this is what a
   repository carries).
4. For reference, the same calls in the previous formats, made by rewriting our v4 file line by line:
   v3 (the key and every null and zero field on the call line, `h` on node lines) and v2 (also 64-hex
   references and a stored sample key). Both keep v4's recording times (to the second) and latencies
   (to the millisecond): v3 as written had milliseconds and microseconds, a few more bytes.
Sizes are deterministic up to timestamps, so one recording per workload is measured.
Prints the raw numbers, then RATIO lines: tauproxy bytes / vcrpy bytes over both workloads, raw and
under gzip (per workload too).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
from pathlib import Path

from _common import BASE_ENV, print_machine, start_stub, stub_stats, workdir

WORKLOADS = [("mock", None, 4), ("airline", 10, 4)]


def record_ours(domain: str, num_tasks: int | None, trials: int, url: str, cassette: Path) -> None:
    from tauproxy.engine.llm_config import LLMConfig
    from tauproxy.proxy.modes import RecordMode
    from tauproxy.runner.config import RunConfig
    from tauproxy.runner.run import execute

    args = {"api_base": url, "api_key": "sk-x", "num_retries": 0}
    config = RunConfig(
        domain=domain,
        agent=LLMConfig(model="openai/stub", args=args),
        user=LLMConfig(model="openai/stub-user", args=args),
        judge=LLMConfig(model="openai/stub-judge", args=args),
        num_trials=trials,
        num_tasks=num_tasks,
        cassette=cassette,
        record_mode=RecordMode.RECORD,
    )
    outcome = execute(config)
    errors = [s.error for s in outcome.results.simulations if s.error]
    if errors:
        raise SystemExit(f"{domain}: {len(errors)} trials failed, first: {errors[0]}")


def reissue_with_vcr(cassette: Path, url: str, path: Path, client: str) -> int:
    import vcr

    from tauproxy.store.cassette import Cassette

    ours = Cassette.open(cassette, create=False)
    my_vcr = vcr.VCR(match_on=["method", "scheme", "host", "port", "path", "query", "body"], record_mode="all")
    with my_vcr.use_cassette(str(path)) as recorded:
        if client == "litellm":
            import litellm

            for entry in ours.entries():
                body = ours.request_of(entry)
                litellm.completion(**body, api_base=url, api_key="sk-x", num_retries=0)
        else:
            import httpx

            with httpx.Client(timeout=60) as http:
                for entry in ours.entries():
                    body = ours.request_of(entry)
                    body["model"] = body["model"].split("/", 1)[1]  # what litellm sends: "openai/stub" -> "stub"
                    http.post(url + "/chat/completions", json=body).raise_for_status()
        count = len(recorded)
    return count


def gz(path: Path) -> int:
    return len(gzip.compress(path.read_bytes(), compresslevel=6))


def as_v3(cassette: Path) -> bytes:
    """Our v4 cassette in the v3 layout (call lines with their key and every field; nodes with `h`)."""
    from tauproxy.data_model.key import canonical_json
    from tauproxy.store.cassette import Cassette
    from tauproxy.store.format import encode_call, node_hash, short_ref

    entries = dict(Cassette.open(cassette, create=False).history())  # line number -> entry, key derived
    out = []
    for number, raw in enumerate((cassette / "calls.jsonl").read_bytes().split(b"\n"), start=1):
        if not raw.strip():
            continue
        line = json.loads(raw)
        if line["t"] == "call":
            out.append(encode_call(entries[number].model_copy(update={"v": 3})))
            continue
        if line["t"] == "node":
            line["h"] = short_ref(node_hash(line["p"], line["m"]))
        out.append(canonical_json(line) + "\n")
    return "".join(out).encode()


def as_v2(v3: bytes) -> bytes:
    """A v3 cassette in the v2 layout (full references, stored sample key), for comparison."""
    from tauproxy.data_model.key import canonical_json, sample_key
    from tauproxy.store.format import node_hash

    full: dict[str, str] = {}  # v3 reference -> v2 (full) hash
    out = []
    for raw in v3.splitlines():
        if not raw.strip():
            continue
        line = json.loads(raw)
        kind = line["t"]
        if kind in ("msg", "blob"):
            text = canonical_json(line["m"] if kind == "msg" else line["v"])
            full[line["h"]] = line["h"] = hashlib.sha256(text.encode()).hexdigest()
        elif kind == "node":
            line["m"] = full[line["m"]]
            line["p"] = full[line["p"]] if line["p"] else None
            full[line["h"]] = line["h"] = node_hash(line["p"], line["m"])
        else:
            request, response = line["request"], line["response"]
            for part, name in ((request, "chain"), (request, "tools"), (response, "message"), (response, "raw")):
                if part.get(name):
                    part[name] = full[part[name]]
            line["sample_key"] = sample_key(
                line["key"], line["seed"], line["task_id"], line["trial"], line["occurrence"]
            )
            line["v"] = 2
        out.append(canonical_json(line) + "\n")
    return "".join(out).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--client", choices=["litellm", "httpx"], default="litellm")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    os.environ.update({k: v for k, v in BASE_ENV.items() if k == "LITELLM_LOCAL_MODEL_COST_MAP"})

    print_machine("cassette_size")
    tmp = workdir("size", args.keep)
    _, url = start_stub()
    from tauproxy.store.cassette import Cassette

    totals = {"calls": 0, "ours": 0, "vcr": 0, "ours_gz": 0, "vcr_gz": 0, "v3": 0, "v3_gz": 0, "v2": 0, "v2_gz": 0}
    for domain, num_tasks, trials in WORKLOADS:
        name = f"{domain} {'all' if num_tasks is None else num_tasks} tasks x {trials} trials"
        cassette = tmp / f"ours-{domain}"
        record_ours(domain, num_tasks, trials, url, cassette)
        ours_calls = len(Cassette.open(cassette, create=False))
        before = stub_stats(url)["requests"]
        vcr_path = tmp / f"vcr-{domain}.yaml"
        vcr_calls = reissue_with_vcr(cassette, url, vcr_path, args.client)
        sent = stub_stats(url)["requests"] - before
        if not ours_calls == vcr_calls == sent:
            raise SystemExit(f"{name}: call counts differ: tauproxy {ours_calls}, vcrpy {vcr_calls}, sent {sent}")
        ours_bytes = (cassette / "calls.jsonl").stat().st_size
        vcr_bytes = vcr_path.stat().st_size
        v3 = as_v3(cassette)
        v2 = as_v2(v3)
        row = {
            "calls": ours_calls,
            "ours": ours_bytes,
            "vcr": vcr_bytes,
            "ours_gz": gz(cassette / "calls.jsonl"),
            "vcr_gz": gz(vcr_path),
            "v3": len(v3),
            "v3_gz": len(gzip.compress(v3, compresslevel=6)),
            "v2": len(v2),
            "v2_gz": len(gzip.compress(v2, compresslevel=6)),
        }
        for k, v in row.items():
            totals[k] += v
        print(
            f"{name}: {ours_calls} calls | tauproxy {ours_bytes} B ({ours_bytes / ours_calls:.0f} B/call, "
            f"gzip {row['ours_gz'] / ours_calls:.0f} B/call) | vcrpy {vcr_bytes} B "
            f"({vcr_bytes / vcr_calls:.0f} B/call, gzip {row['vcr_gz'] / vcr_calls:.0f} B/call) | "
            f"ratio {ours_bytes / vcr_bytes:.4f} (gzip {row['ours_gz'] / row['vcr_gz']:.4f}) | previous formats: "
            f"v3 {row['v3']} B, gzip {row['v3_gz'] / ours_calls:.0f} B/call, gzip ratio "
            f"{row['v3_gz'] / row['vcr_gz']:.4f}; v2 {row['v2']} B, gzip {row['v2_gz'] / ours_calls:.0f} B/call, "
            f"gzip ratio {row['v2_gz'] / row['vcr_gz']:.4f}",
            flush=True,
        )
        print(
            f"RATIO cassette_size_gzip_{domain}: ours/theirs = {row['ours_gz'] / row['vcr_gz']:.4f} (goal: <= 0.333, "
            f"gzip -6 bytes; v3 layout {row['v3_gz'] / row['vcr_gz']:.4f}, v2 {row['v2_gz'] / row['vcr_gz']:.4f})",
            flush=True,
        )

    calls = totals["calls"]
    print(
        f"total: {calls} calls | tauproxy {totals['ours']} B ({totals['ours'] / calls:.0f} B/call) | "
        f"vcrpy {totals['vcr']} B ({totals['vcr'] / calls:.0f} B/call) | "
        f"gzip ratio {totals['ours_gz'] / totals['vcr_gz']:.4f} (v3: {totals['v3_gz'] / totals['vcr_gz']:.4f}, "
        f"v2: {totals['v2_gz'] / totals['vcr_gz']:.4f})"
    )
    print(json.dumps({"client": args.client, **totals}))
    ratio = totals["ours"] / totals["vcr"]
    print(
        f"RATIO cassette_size: ours/theirs = {ratio:.4f} (goal: <= 0.2, tauproxy calls.jsonl bytes / "
        f"vcrpy YAML bytes for the same {calls} calls; 1/{1 / ratio:.1f})"
    )
    gz_ratio = totals["ours_gz"] / totals["vcr_gz"]
    v3_ratio, v2_ratio = totals["v3_gz"] / totals["vcr_gz"], totals["v2_gz"] / totals["vcr_gz"]
    print(
        f"RATIO cassette_size_gzip: ours/theirs = {gz_ratio:.4f} (goal: <= 0.333, gzip -6 bytes over both "
        f"workloads; v3 layout {v3_ratio:.4f}, v2 {v2_ratio:.4f})"
    )


if __name__ == "__main__":
    main()
