"""How long `tauproxy serve` takes to exit after SIGTERM while an upstream call hangs.

    .venv/bin/python bench/serve_shutdown.py [--repeats 3]

The upstream accepts the connection and never answers; its route allows it 600 s. Each repeat
starts serve, sends one call, waits until the upstream holds it, sends SIGTERM and times the exit.
Goal: exit within 5 s, the waiting client answered 503 (the drain is serve/app.py's
DEFAULT_DRAIN_S, 3 s, then a poll and the process's exit).

Measured on the 2-core dev box, 2026-12-03, load about 7 (other work running): 3.31-3.45 s from
SIGTERM to exit over 3 repeats, each client answered 503. Before the CLI froze the garbage collector
at exit, the same box took 4.9-8.3 s: the final collection over everything litellm loads was 4 s of it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 5.0


def one_shutdown() -> tuple[float, int]:
    """Seconds from SIGTERM to exit, and the status the waiting client got."""
    hole = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    reached = threading.Event()

    def accept() -> None:
        while True:
            try:
                held.append(hole.accept()[0])
            except OSError:
                return
            reached.set()

    threading.Thread(target=accept, daemon=True).start()
    work = Path(tempfile.mkdtemp(prefix="serve-shutdown-"))
    api_base = f"http://127.0.0.1:{hole.getsockname()[1]}/v1"
    routes = {"gpt-hang": {"model": "openai/hang", "api_base": api_base, "timeout": 600}}
    (work / "u.json").write_text(json.dumps(routes))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-bench"}
    argv = [sys.executable, "-m", "tauproxy_cli.serve", "--port", "0", "--cassette", str(work / "c")]
    proc = subprocess.Popen([*argv, "--upstream-map", str(work / "u.json")], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    url = proc.stdout.readline().split()[2]
    statuses: list[int] = []
    body = {"model": "gpt-hang", "messages": [{"role": "user", "content": "hello?"}]}
    client = threading.Thread(
        target=lambda: statuses.append(httpx.post(url + "/chat/completions", json=body, timeout=120).status_code)
    )
    client.start()
    reached.wait(60)
    started = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    elapsed = time.perf_counter() - started
    client.join(timeout=60)
    hole.close()
    for conn in held:
        conn.close()
    return elapsed, statuses[0] if statuses else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    results = [one_shutdown() for _ in range(args.repeats)]
    worst = max(seconds for seconds, _ in results)
    ok = worst <= GOAL_S and all(status == 503 for _, status in results)
    print(f"SIGTERM to exit: worst {worst:.2f} s (goal <= {GOAL_S:g} s): {'pass' if ok else 'FAIL'}")
    for seconds, status in results:
        print(f"  {seconds:.2f} s, client got {status}")


if __name__ == "__main__":
    main()
