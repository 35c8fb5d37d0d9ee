"""Start `tauproxy serve` as a real subprocess for tests, and talk to it."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLIENT_KEY = "sk-x"  # what clients and litellm send; never a real key


def serve_argv() -> list[str]:
    """`tauproxy serve` once main.py wires it; until then the same command via its module."""
    try:
        from tauproxy_cli.main import COMMANDS

        wired = "serve" in COMMANDS
    except Exception:
        wired = False
    if wired:
        return [str(Path(sys.executable).parent / "tauproxy"), "serve"]
    return [sys.executable, "-m", "tauproxy_cli.serve"]


@dataclass
class ServeProcess:
    proc: subprocess.Popen[str]
    url: str  # http://127.0.0.1:PORT/v1
    output: list[str] = field(default_factory=list)

    @property
    def root(self) -> str:
        return self.url.removesuffix("/v1")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)

    def stdout_text(self) -> str:
        return "".join(self.output)


def start_serve(*args: str, env: dict[str, str] | None = None, timeout: float = 180) -> ServeProcess:
    """Run `tauproxy serve --port 0 ARGS` and wait for its ready line (which comes as soon as it is
    ready: the timeout is waited out only by a serve that never gets ready, and a loaded 2-core
    machine running tau2 beside it took over 60 s to import litellm)."""
    full_env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": CLIENT_KEY, **(env or {})}
    proc: subprocess.Popen[str] = subprocess.Popen(
        [*serve_argv(), "--port", "0", *args], stdout=subprocess.PIPE, text=True, env=full_env, bufsize=1
    )
    lines: queue.Queue[str] = queue.Queue()
    served = ServeProcess(proc, url="")

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            served.output.append(line)
            lines.put(line)
        proc.stdout.close()
        lines.put("")

    threading.Thread(target=pump, name="serve-stdout", daemon=True).start()
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            line = ""
        if line.startswith("tauproxy serve: http://"):
            served.url = line.split()[2]
            return served
        if line == "" or time.monotonic() > deadline:
            proc.kill()
            proc.wait(timeout=10)
            raise RuntimeError(f"tauproxy serve did not get ready (exit {proc.returncode}): {served.stdout_text()}")


def write_upstream_map(path: Path, routes: dict[str, dict[str, Any]]) -> Path:
    path.write_text(json.dumps(routes), encoding="utf-8")
    return path


def cassette_calls(directory: Path) -> int:
    """Call lines in a cassette file, read straight from disk (what survives the process)."""
    file = directory / "calls.jsonl"
    if not file.exists():
        return 0
    return sum(1 for line in file.read_text().splitlines() if line.strip() and json.loads(line).get("t") == "call")
