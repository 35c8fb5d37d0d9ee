"""What `tauproxy serve` adds to a call, measured on loopback with τ²-sized bodies.

    .venv/bin/python bench/serve_overhead.py [--calls 400] [--quick]

`measure(out=print)` is the whole measurement as a function (the one-bench script calls it); it
prints one `RATIO` line per figure, then the numbers. The request is τ²-airline-sized: a 15 KB
policy as the system prompt, 14 tool schemas, three tool-call turns (about 23 KB of JSON).

Arms, each at concurrency 1 and 32 (32 threads of a raw keep-alive HTTP/1.1 client in this
process, one connection each; the servers each in their own process):
    direct   client -> the stub upstream (tests/stub_upstream.py), chat completions: the baseline
    hit      client -> serve (replay mode, every call a hit), chat completions
    miss     client -> serve (record mode) -> a fast Responses API upstream (this file's
             `fast_upstream`, its own process): every call goes upstream and is appended to the
             cassette, fsynced (group commit) before it is answered; the Responses route is a
             pass-through, so this measures serve, not litellm. Compared with calling that upstream
             directly at the same concurrency.
    chat miss  the chat route's miss path (record mode, through litellm unless a pass-through
             route answers it): calls/s while the hit arm's cassette is recorded, at concurrency 8

Figures and goals (issue #32): hit p50 minus direct p50 <= 0.5 ms at c=1 and <= 5 ms at c=32;
misses >= 300 calls/s (at c=32: one fsync covers every append that arrived while the previous one
ran). Beside each wall-clock figure the serve process's own CPU time per call (from /proc, user +
system) is printed: on a shared machine that is the steadier number.

Measured 2026-12-03 on the 2-core dev box, load average 3-4 (the other workers mostly idle):
    CPU per call         direct stub 0.76-0.80 ms, serve hit 1.20-1.50 ms (at load 17-23 before
                         this round's hit work: 1.97-2.09 ms, after it 0.98-1.50), serve miss
                         7.9-9.3 ms; of a miss, the upstream call is about 0.8 ms; most of the rest
                         is the cassette's indexing of the appended call (the request key derived
                         again from the stored chain, hashing the policy each time; about 34 index
                         queries per call)
    hit p50 added        +0.78 ms at c=1 (0.91 -> 1.68 ms), +20.4 ms at c=32 (20.7 -> 41.1 ms)
    misses               60 calls/s at c=1, 95 at c=32 (the fast upstream alone: 9240 / 11215);
                         in a profiled run at c=32, 48 fsyncs covered 600 misses (group commit);
                         the chat route's misses, passed through, 80 calls/s at c=8 (through
                         litellm, before: 15 at load 17-23)
The goals were not met on that machine; the RATIO lines of a run on an idle machine decide.

Then the cassette's own CPU per recorded call was cut (stored_parts encodes each message once and
the key is checked from those texts; one index query per kind per commit; the appended content
lines reach the index parsed; the lock found once per process). The writer alone, in-process, on
the captured recordings of this bench's misses, fsync stubbed, best of 5, interleaved with the
previous code: 2.6 -> 1.6 ms per call one at a time, 1.6 -> 0.96 ms in batches of 32. Whole serve
runs at load 2-9 could not tell the difference apart from noise: serve CPU per miss 4.4-6.4 ms both
before and after, misses 170-235 calls/s at c=32 (the rest of a miss: the upstream call through
httpx, a thread per call, uvicorn). Parsing a 24 KB request costs h11 about 0.05 ms and httptools
0.02 ms, so httptools was not added then: a hit's 1.1-1.4 ms of CPU is not in the HTTP parser
(but see below: h11's whole protocol, its events and state machine, costs more than its parsing).

Then serve's own CPU per call was cut (profiled with cProfile and py-spy on a serve process driven by
this file's client): the canonical text of every message and tool list is remembered by its marshal
bytes (key.py), and a recorded call's messages are stored as those texts rather than canonicalised
again; a model call's route is found before Starlette's middleware and router, and its drain is its
own task cancelled at the drain's end, not two tasks and a wait per call; a stored reply is read by
its hash without a JSON parse; an answer's head and body leave in one send (uvicorn wrote them in
two, waking the client twice); a live call's daemon thread is kept for the next one, and bounded by
an asyncio semaphore rather than anyio's limiter; the chain nodes an append writes reach the index
parsed, as its content lines did. Measured 2026-12-03 on the same box, the commit before this work
(0202dc5) and this one run one after the other, twice (base, new, base, new), at load average 2.6-3.0:
    serve CPU per hit    c=1 1.08 / 1.28 -> 0.85 / 1.00 ms, c=32 1.09 / 1.20 -> 0.71 / 0.90 ms
                         (the stub called directly: 0.53-0.75 ms at c=1, 0.54-0.84 at c=32)
    hit p50 added        c=1 +0.24 / +0.69 -> +0.07 / +0.56 ms, c=32 +8.4 / +14.3 -> +2.4 / +15.0 ms
                         (the +15.0 in a run whose direct arm was unusually fast: 13.8 ms p50 at c=32)
    serve CPU per miss   c=1 5.81 / 6.99 -> 5.84 / 5.84 ms, c=32 5.63 / 5.57 -> 5.30 / 3.83 ms
    misses               c=1 103 / 118 -> 140 / 149 calls/s, c=32 136 / 168 -> 169 / 246 calls/s
    chat route misses    127 / 138 -> 171 / 164 calls/s at c=8 (6.05 / 6.60 -> 3.72 / 4.51 ms CPU per call)
The same at load 6-8 (three other workers busy): CPU per hit 1.58 / 1.40 -> 1.65 / 1.05 ms (c=1),
1.52 / 1.39 -> 1.36 / 1.14 ms (c=32); per miss 7.94 / 7.74 -> 6.09 / 5.36 ms (c=1), 6.52 / 7.20 ->
4.13 / 3.99 ms (c=32); misses 144 / 121 -> 239 / 225 calls/s at c=32.
Steadier, in-process without the HTTP server (the app called as ASGI, thread CPU, the lowest quarter
of 50-call batches over 3 x 1500 distinct bodies, each round a fresh cassette reader), at load 5-6:
1.08 / 0.76 -> 0.66 / 0.60 ms per hit. A miss one at a time in-process is
5.6 ms before and after: the cassette append (3.3 ms: SQLite's index transaction and the fsync) and
the upstream call through httpx (1.5 ms) are most of it, and this round did not change them; what
came off a served miss is the thread start, the drain's tasks, the second send, the limiter's loop
turns and, at c=32, the re-canonicalising and re-hashing of what a batch appends.
Tried without a measurable difference: SQLite's journal in TRUNCATE or PERSIST mode instead of
DELETE (record 1.8-2.6 ms per call alone, 1.0-1.5 in batches of 32, either way). The hit goals were
met in one of these runs and not the other; the miss goals are not met (a miss needs about 3 ms of CPU
for 300 calls/s); the RATIO lines of a run on an idle machine decide.

Then a hit's CPU again, on uvloop: uvicorn's httptools protocol replaces h11's (serve's head timeout,
JSON refusals and one send per turn carried over, plus a 64 KiB head limit, which httptools lacks); a
request's tool list, the same on every call, is copied from memory by its exact text instead of parsed
and walked again; a system prompt's role is remembered by its text, and so is the hash state after it;
a message of strings is remembered by its strings; canonical_json calls the C encoder directly; the
body's JSON decoder is built once; a hit's reply and raw body come from one index query; a head that
arrives whole sets no timer; no X-Forwarded-* middleware. The memos hold only what the garbage
collector does not track (strings, bytes, numbers, hash states): a first version keyed by frozensets
and hasher objects made every collection scan thousands of entries, and gave back half the gain.
Measured 2026-12-04 against the commit before this work (054080e), each server run from its own tree,
at load average 1.4-2.3 (the other workers running tests):
    serve, c=32      both servers up at once, batches of 1000 distinct bodies alternating between
                     them, 4 runs: CPU per hit 0.876 -> 0.692, 0.901 -> 0.764, 0.863 -> 0.659,
                     0.894 -> 0.674 ms (new / before 0.75-0.85); p50 27.4 -> 20.9, 28.2 -> 24.8,
                     26.9 -> 20.2, 27.3 -> 20.1 ms
                     and, with the last commits: 0.881 -> 0.677, 0.956 -> 0.757 ms (p50 25.8 -> 21.3,
                     30.8 -> 22.7 ms)
    serve, c=1       the same way: 1.186 -> 0.918 and 1.006 -> 0.741 ms per hit (p50 1.27 -> 1.02 ms,
                     1.06 -> 0.77 ms)
    this script      once, at the end, load 1.6-2.2: hit p50 added +0.26 ms at c=1 (0.58 -> 0.84 ms),
                     +2.29 ms at c=32 (18.40 -> 20.69 ms), both goals met; serve CPU 0.78 ms per hit
                     at c=1 and 0.71 ms at c=32 (the stub called directly: 0.55 and 0.82 ms)
    this script's    a server per run, c=1 then c=32 over 800 bodies, 4 rounds: c=32 median 1.055 ->
    arms             0.846 ms per hit (lowest 0.820 -> 0.638), c=1 median 1.204 -> 1.037
    HTTP alone       serve's protocol around an app that answers at once: 0.045-0.064 ms of CPU per
                     call at c=32 (h11's: 0.108), so nearly all of a hit is the app
On this 2-core box one run differs from the next by 10% or more. Of a hit's app CPU in-process
(0.41-0.52 ms, the app called as ASGI, thread CPU, lowest quarter of 50-call batches): parsing the 24 KB
body about 70 us (the 14 tool schemas copied from memory: 15 us of it), the key 40-50 us for a
conversation not seen before (mostly the canonical text of its new messages; a conversation's next call
reuses them), the cassette lookup 60-70 us (two SQLite statements, each taking and dropping the file's
read lock, about 7 system calls, then the call line parsed and checked), the reply 40-60 us. The c=32
goal needs about 0.6 ms per hit on the lead's machine; the RATIO lines of a run on an idle machine
decide.

Then a miss's CPU was cut on the thread side (profiled with perf and py-spy on a serve process at
c=32: about a fifth of its CPU was the kernel switching threads, as 32 threads handed the GIL round
at every socket call of httpx's, and h11 cost about 0.2 ms a call): a plain-http upstream is sent
its calls over kept-alive sockets of serve's own (wire_apis/plain_http.py: one sendall, one recv,
the socket's own timeout; futex calls per miss 118 -> 63, polls 5 -> 0); a request sent unchanged
goes as the client's bytes rather than encoded again; the cassette lock is a flock on a descriptor
kept open rather than filelock's open-check-close per commit (about 0.25 ms of a lone writer's call).
With uvloop installed, measured 2026-12-04 at load 1.5-2.8 (two other workers), serve's CPU per miss
as this file prints it, this commit and the one before (054080e) run alternately, twice:
    serve CPU per miss   c=1 3.73 / 5.16 -> 2.83 / 3.48 ms, c=32 4.08 / 4.24 -> 2.50 / 3.07 ms
    misses               c=1 231 / 162 -> 285 / 242 calls/s, c=32 270 / 204 -> 380 / 310 calls/s
    chat route misses    3.37 / 4.65 -> 2.13 / 2.83 ms CPU per call (249 / 172 -> 366 / 269 calls/s)
and with this file's miss arm alone (1000 calls a round, 3 rounds a process, 3 processes each,
alternating), CPU per miss at c=32 median 3.36 -> 2.58 ms (lowest 2.70 -> 2.22), at c=1 (500 calls a
round) median 4.09 -> 2.71 ms (lowest 3.75 -> 2.08); the same again on the final commit at load
2.2-2.8: c=32 median 4.01 -> 2.91 ms, c=1 4.62 -> 3.53 ms. What is left of a miss at c=32 (in-process,
thread CPU): parsing and keying the request on the loop (h11, json, the key's hashing: about 1 ms
in serve), the cassette append (about 1.2 ms: the entry built and its key checked 0.3, the index's
rows for the held lines 0.2, dedup queries, line encoding), the upstream call (about 0.2 ms); and
the garbage collector, about 0.24 ms a miss at its default thresholds (over 2000 misses at c=32:
820 young, 74 middle and 6 full collections, timed with gc.callbacks after serve's freeze).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from stub_upstream import start_stub_process  # noqa: E402 - needs tests/ on sys.path first

GOAL_HIT_ADDED_MS = {1: 0.5, 32: 5.0}
GOAL_MISSES_PER_S = 300.0
CONCURRENCY = (1, 32)
POLICY = ("Agents must follow the airline policy exactly: confirm identity, explain every change. " * 180)[:15_000]


def tool(index: int) -> dict[str, Any]:
    properties = {f"arg_{j}": {"type": "string", "description": f"argument {j} of tool {index}"} for j in range(4)}
    return {
        "type": "function",
        "function": {
            "name": f"tool_{index}",
            "description": f"Tool number {index}, which does one thing well. " * 3,
            "parameters": {"type": "object", "properties": properties, "required": ["arg_0"]},
        },
    }


TOOLS = [tool(i) for i in range(14)]


def conversation(index: int) -> list[dict[str, Any]]:
    """A τ²-like agent conversation: the policy, then three turns that each call a tool."""
    turns: list[dict[str, Any]] = []
    for turn in range(3):
        call_id = f"call_{index}_{turn}"
        arguments = json.dumps({"arg_0": f"booking-{index}", "turn": turn})
        turns.append({"role": "user", "content": f"Request {index}, turn {turn}: please check my booking."})
        turns.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": "tool_1", "arguments": arguments}}
                ],
            }
        )
        turns.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps({"booking": index, "ok": True})})
    turns.append({"role": "user", "content": f"Final question {index}."})
    return [{"role": "system", "content": POLICY}, *turns]


def chat_body(index: int, model: str = "gpt-stub") -> dict[str, Any]:
    return {
        "model": model,
        "messages": conversation(index),
        "tools": TOOLS,
        "tool_choice": "auto",
        "temperature": 0,
        "seed": 300,
    }


def responses_body(index: int) -> dict[str, Any]:
    messages = conversation(index)
    items: list[dict[str, Any]] = []
    for message in messages[1:]:
        if message["role"] == "tool":
            items.append(
                {"type": "function_call_output", "call_id": message["tool_call_id"], "output": message["content"]}
            )
        elif message.get("tool_calls"):
            function = message["tool_calls"][0]["function"]
            call_id = message["tool_calls"][0]["id"]
            items.append(
                {
                    "type": "function_call",
                    "call_id": call_id,
                    "name": function["name"],
                    "arguments": function["arguments"],
                }
            )
        else:
            items.append({"role": message["role"], "content": message["content"]})
    tools = [{"type": "function", **t["function"]} for t in TOOLS]
    return {"model": "fast", "instructions": POLICY, "input": items, "tools": tools, "temperature": 0}


# -- a raw keep-alive client: the client's own cost must not hide what a server adds ----------------


class RawClient:
    """One HTTP/1.1 keep-alive connection that POSTs pre-encoded JSON bodies."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.prefix = parts.path.rstrip("/")
        self.host = parts.netloc
        self.sock = socket.create_connection((parts.hostname, parts.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def request(self, path: str, body: bytes) -> tuple[int, bytes]:
        head = (
            f"POST {self.prefix}{path} HTTP/1.1\r\nHost: {self.host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode("ascii")
        self.sock.sendall(head + body)
        while b"\r\n\r\n" not in self.buffer:
            self._more()
        head_bytes, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head_bytes.split(b"\r\n")
        status = int(lines[0].split()[1])
        length = next(int(line.split(b":", 1)[1]) for line in lines[1:] if line.lower().startswith(b"content-length:"))
        while len(self.buffer) < length:
            self._more()
        answer, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, answer

    def _more(self) -> None:
        chunk = self.sock.recv(262_144)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


@dataclass
class Load:
    """One arm at one concurrency: every call's latency, and the wall time of the timed part."""

    latencies_s: list[float]
    elapsed_s: float
    cpu_s: float | None  # the server process's CPU time over the timed part

    def pct(self, q: float) -> float:
        ordered = sorted(self.latencies_s)
        return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] * 1000

    @property
    def p50(self) -> float:
        return self.pct(50)

    @property
    def p99(self) -> float:
        return self.pct(99)

    @property
    def per_s(self) -> float:
        return len(self.latencies_s) / self.elapsed_s

    @property
    def cpu_ms_per_call(self) -> float | None:
        return None if self.cpu_s is None else self.cpu_s * 1000 / len(self.latencies_s)


def process_cpu_s(pid: int | None) -> float | None:
    """User + system CPU seconds of a process so far (Linux /proc), or None where unreadable."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_load(url: str, path: str, bodies: Sequence[bytes], concurrency: int, server_pid: int | None) -> Load:
    """POST every body once, `concurrency` connections at a time; each connection warms up first."""
    shares = [list(bodies[i::concurrency]) for i in range(concurrency)]
    barrier = threading.Barrier(concurrency + 1)
    samples: list[list[float]] = [[] for _ in shares]
    errors: list[BaseException] = []

    def worker(index: int) -> None:
        client = None
        try:
            client = RawClient(url)
            share = shares[index]
            _check(client.request(path, share[0]))  # connect and warm up before the clock starts
            barrier.wait()
            for payload in share[1:]:
                started = time.perf_counter()
                _check(client.request(path, payload))
                samples[index].append(time.perf_counter() - started)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()
        finally:
            if client is not None:
                client.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    with contextlib.suppress(threading.BrokenBarrierError):  # a worker failed: reported below
        barrier.wait()
    cpu_before = process_cpu_s(server_pid)
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    cpu_after = process_cpu_s(server_pid)
    if errors:
        raise SystemExit(f"bench call failed: {errors[0]}")
    cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    return Load([s for share in samples for s in share], elapsed, cpu)


def _check(answer: tuple[int, bytes]) -> None:
    status, content = answer
    if status != 200:
        raise RuntimeError(f"{status} {content[:300]!r}")


# -- the fast upstream: a Responses API answer in microseconds --------------------------------------


def fast_upstream(port_out: Callable[[int], None], answer_chars: int = 0) -> None:
    """An asyncio HTTP/1.1 server answering every POST with a small Responses API answer (its id
    counts up, so every answer differs), as fast as Python can: the miss path's upstream. With
    `answer_chars`, each answer's text is that long (a real model's answer, for serve_memory.py)."""
    counter = itertools.count()
    padding = " ".join(f"word{i % 97}" for i in range(answer_chars // 6 + 1))[:answer_chars]

    class Upstream(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            self.transport = transport
            self.buffer = b""

        def data_received(self, data: bytes) -> None:
            self.buffer += data
            while b"\r\n\r\n" in self.buffer:
                head, rest = self.buffer.split(b"\r\n\r\n", 1)
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if len(rest) < length:
                    return
                self.buffer = rest[length:]
                number = next(counter)
                answer = json.dumps(
                    {
                        "id": f"resp_{number:08d}",
                        "object": "response",
                        "created_at": 1_700_000_000,
                        "status": "completed",
                        "model": "fast",
                        "output": [
                            {
                                "type": "message",
                                "id": f"msg_{number:08d}",
                                "status": "completed",
                                "role": "assistant",
                                "content": [
                                    {"type": "output_text", "text": f"answer {number}{padding}", "annotations": []}
                                ],
                            }
                        ],
                        "usage": {"input_tokens": 5000, "output_tokens": 3, "total_tokens": 5003},
                    }
                ).encode()
                self.transport.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                    % (len(answer), answer)
                )

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Upstream, "127.0.0.1", 0)
        port_out(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(main())


class Proc:
    """A child process whose first stdout line says where it listens."""

    def __init__(self, argv: list[str], ready: Callable[[str], str | None]) -> None:
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-bench"}
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        url = ready(line)
        if url is None:
            self.proc.kill()
            raise SystemExit(f"{argv[1:3]} did not start: {line!r}")
        self.url = url

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def start_serve(*args: str) -> Proc:
    def ready(line: str) -> str | None:
        return line.split()[2] if line.startswith("tauproxy serve: http://") else None

    return Proc([sys.executable, "-m", "tauproxy_cli.serve", "--port", "0", *args], ready)


def start_fast_upstream(answer_chars: int = 0) -> Proc:
    def ready(line: str) -> str | None:
        return f"http://127.0.0.1:{int(line)}/v1" if line.strip().isdigit() else None

    return Proc([sys.executable, __file__, "--fast-upstream", "--answer-chars", str(answer_chars)], ready)


def encoded(bodies: list[dict[str, Any]]) -> list[bytes]:
    return [json.dumps(b).encode() for b in bodies]


@dataclass
class Figures:
    direct: dict[int, Load]
    hit: dict[int, Load]
    miss: dict[int, Load]
    miss_direct: dict[int, Load]
    chat_miss: Load
    request_bytes: int


def measure(calls: int = 400, out: Callable[[str], None] = print) -> Figures:
    """Every arm at c=1 and c=32, then the RATIO lines and the numbers (module docstring)."""
    work = Path(tempfile.mkdtemp(prefix="serve-bench-"))
    stub_proc, stub_url = start_stub_process()
    fast = start_fast_upstream()
    routes = work / "upstream.json"
    routes.write_text(
        json.dumps({"gpt-stub": {"model": "openai/stub", "api_base": stub_url}, "fast": {"api_base": fast.url}})
    )
    per_arm = {c: max(calls, 8 * c) for c in CONCURRENCY}
    chat = {c: encoded([chat_body(c * 100_000 + i) for i in range(per_arm[c])]) for c in CONCURRENCY}
    direct_chat = {c: encoded([chat_body(c * 100_000 + i, "stub") for i in range(per_arm[c])]) for c in CONCURRENCY}
    try:
        direct = {c: run_load(stub_url, "/chat/completions", direct_chat[c], c, stub_proc.pid) for c in CONCURRENCY}
        recorder = start_serve(
            "--cassette", str(work / "chat"), "--record-mode", "record", "--upstream-map", str(routes)
        )
        try:
            chat_miss = run_load(
                recorder.url, "/chat/completions", [b for c in CONCURRENCY for b in chat[c]], 8, recorder.pid
            )
        finally:
            recorder.stop()
        replayer = start_serve("--cassette", str(work / "chat"), "--record-mode", "replay")
        try:
            hit = {c: run_load(replayer.url, "/chat/completions", chat[c], c, replayer.pid) for c in CONCURRENCY}
        finally:
            replayer.stop()
        miss_bodies = {
            c: encoded([{**responses_body(c * 100_000 + i)} for i in range(per_arm[c])]) for c in CONCURRENCY
        }
        miss_direct = {c: run_load(fast.url, "/responses", miss_bodies[c], c, fast.pid) for c in CONCURRENCY}
        live = start_serve(
            "--cassette", str(work / "responses"), "--record-mode", "record", "--upstream-map", str(routes)
        )
        try:
            miss = {c: run_load(live.url, "/responses", miss_bodies[c], c, live.pid) for c in CONCURRENCY}
        finally:
            live.stop()
    finally:
        fast.stop()
        stub_proc.kill()
        stub_proc.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    figures = Figures(direct, hit, miss, miss_direct, chat_miss, len(chat[1][0]))
    report(figures, out)
    return figures


def report(f: Figures, out: Callable[[str], None]) -> None:
    for c in CONCURRENCY:
        added = f.hit[c].p50 - f.direct[c].p50
        goal = GOAL_HIT_ADDED_MS[c]
        out(
            f"RATIO serve_hit_c{c}: serve hit p50 / direct p50 = {f.hit[c].p50 / f.direct[c].p50:.2f}x "
            f"(added {added:+.2f} ms; goal: added <= {goal} ms, {'met' if added <= goal else 'NOT met'}; "
            f"serve CPU {_ms(f.hit[c].cpu_ms_per_call)} per hit)"
        )
    for c in CONCURRENCY:
        rate = f.miss[c].per_s
        out(
            f"RATIO serve_miss_c{c}: serve miss calls/s / direct calls/s = {rate / f.miss_direct[c].per_s:.2f}x "
            f"({rate:.0f} vs {f.miss_direct[c].per_s:.0f} calls/s, each fsynced before its answer; goal: >= "
            f"{GOAL_MISSES_PER_S:.0f} calls/s, "
            f"{'met' if rate >= GOAL_MISSES_PER_S else 'NOT met'}; serve CPU {_ms(f.miss[c].cpu_ms_per_call)} per miss)"
        )
    out(
        f"chat route miss (record mode, c=8): {f.chat_miss.per_s:.0f} calls/s, "
        f"serve CPU {_ms(f.chat_miss.cpu_ms_per_call)} per call"
    )
    out(f"{'arm':30s} {'p50 ms':>8s} {'p99 ms':>8s} {'calls/s':>8s} {'CPU/call':>9s}")
    for name, loads in (
        ("direct to stub", f.direct),
        ("serve hit", f.hit),
        ("direct to fast upstream", f.miss_direct),
        ("serve miss (responses)", f.miss),
    ):
        for c, load in loads.items():
            label = f"{name} c={c}"
            out(f"{label:30s} {load.p50:8.2f} {load.p99:8.2f} {load.per_s:8.0f} {_ms(load.cpu_ms_per_call):>9s}")
    out(f"(request body {f.request_bytes} bytes; {len(f.hit[1].latencies_s)} timed calls at c=1)")


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=400, help="timed calls per arm at c=1 (c=32: at least 8 each)")
    parser.add_argument("--fast-upstream", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--answer-chars", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fast_upstream:
        fast_upstream(lambda port: print(port, flush=True), args.answer_chars)
        return 0
    measure(args.calls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
