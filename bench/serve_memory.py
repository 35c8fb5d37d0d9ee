"""How a long-lived recording `tauproxy serve` grows: its resident memory per live call.

    .venv/bin/python bench/serve_memory.py [--warm-up 4000] [--calls 4000] [--answer-chars 2000]   (about 1 min)

A serve in record mode, in front of serve_overhead.py's fast upstream (the Responses API, each answer
`--answer-chars` of text: a real model's answer rather than the overhead bench's few words), is sent
`--warm-up` distinct τ²-sized requests without a seed, then `--calls` more, at concurrency 8. Its RSS
(VmRSS, from /proc) is read after the warm-up and at the end; it prints the growth per live call and
one RATIO line, the RSS at the end over the RSS after the warm-up (information: there is no goal for
it in issue #32, whose memory goal is a replay's; floors.py prints that one). The warm-up fills what is
bounded (the answers kept for GET /v1/responses/{id}, 4,096 of them here; the canonical texts remembered for keys,
6 MB; the cassette reader's caches, 4 MB of text; the lines the index has yet to take), so what the
second part adds is what grows with the calls.

What grows, and must: per distinct unseeded request, its sample key among those this serve recorded
(proxy/recorder.py: a repeat of it is read back from the cassette, not kept) and its occurrence
counter (serve/identity.py: k identical requests stay k samples), a few hundred bytes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from _common import loadavg, print_machine
from serve_overhead import encoded, responses_body, run_load, start_fast_upstream, start_serve


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def measure(warm_up: int, calls: int, answer_chars: int, out: Callable[[str], None] = print) -> tuple[float, float]:
    """(RSS after the warm-up, RSS after `calls` more live calls), in MB."""
    work = Path(tempfile.mkdtemp(prefix="serve-memory-"))
    fast = start_fast_upstream(answer_chars)
    try:
        routes = work / "upstream.json"
        routes.write_text(json.dumps({"fast": {"api_base": fast.url}}))
        serve = start_serve(
            "--cassette", str(work / "cassette"), "--record-mode", "record", "--upstream-map", str(routes)
        )
        try:
            bodies = encoded([responses_body(i) for i in range(warm_up + calls)])
            run_load(serve.url, "/responses", bodies[:warm_up], 8, serve.pid)
            warm = rss_mb(serve.pid)
            load = run_load(serve.url, "/responses", bodies[warm_up:], 8, serve.pid)
            end = rss_mb(serve.pid)
        finally:
            serve.stop()
        size = (work / "cassette" / "calls.jsonl").stat().st_size
        out(
            f"serve, record mode, {calls} live calls after {warm_up} (answers of {answer_chars} characters; "
            f"{load.per_s:.0f} calls/s; cassette {size / 1e6:.1f} MB): RSS {warm:.1f} -> {end:.1f} MB, "
            f"{(end - warm) * 1024 * 1024 / calls:.0f} bytes per call"
        )
        out(
            f"RATIO serve_record_memory: RSS after {warm_up + calls} / after {warm_up} live calls = {end / warm:.3f} "
            f"(information; load {loadavg()})"
        )
        return warm, end
    finally:
        fast.stop()
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--warm-up", type=int, default=4000, help="live calls before the first reading")
    parser.add_argument("--calls", type=int, default=4000, help="live calls measured after the warm-up")
    parser.add_argument("--answer-chars", type=int, default=2000, help="characters of each answer's text")
    args = parser.parse_args()
    print_machine("serve_memory")
    measure(args.warm_up, args.calls, args.answer_chars)
    return 0


if __name__ == "__main__":
    sys.exit(main())
