"""The run log of `tauproxy serve`: one JSON line per chat-completion call, for joining to results.

A line (every field always present; unknown values are null):
    ts                 unix time the answer was sent
    sample_key, key    the call's identity (tauproxy.data_model.key); null when the body was rejected
    model              the model name the client asked for
    scope              {task_id, trial} (see tauproxy.serve.identity)
    occurrence, call_index
    seed               the request's seed
    role               from X-Tauproxy-Role, else "agent"
    source             "live" | "replay"
    status             the HTTP status the client got
    error_code         the OpenAI error code when status is not 200
    usage              token usage of the answer (recorded usage for a replay)
    cost_usd           live: what the call cost; replay: what it cost when recorded (saved now)
    price_source
    latency_s          wall time of the answer as served here
    recorded_latency_s a replay's original upstream latency
    request_fp         role-blind fingerprints of the request's non-system messages (fingerprint.py)
    response_fp        fingerprint of the answer's message
    system_sha256      sha256 of the request's system prompt

It holds hashes, counts and names only: never message text, headers or keys. Lines are appended
with one `os.write` on an O_APPEND descriptor, so concurrent writers never interleave a line.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from tauproxy.data_model.call import CallRole, CallSource, Usage
from tauproxy.data_model.key import TrialScope
from tauproxy.errors import ConfigError


class RunLogLine(BaseModel):
    ts: float
    sample_key: str | None = None
    key: str | None = None
    model: str
    scope: TrialScope
    occurrence: int | None = None
    call_index: int | None = None
    seed: int | None = None
    role: CallRole = "agent"
    source: CallSource
    status: int
    error_code: str | None = None
    usage: Usage | None = None
    cost_usd: float | None = None
    price_source: str | None = None
    latency_s: float = 0.0
    recorded_latency_s: float | None = None
    request_fp: list[str] = Field(default_factory=list)
    response_fp: str | None = None
    system_sha256: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == 200


class RunLog:
    """Appends lines to one file; safe across threads and processes (one write per line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        except OSError as exc:
            raise ConfigError(f"cannot open run log {path}: {exc.strerror or exc}") from None

    def write(self, line: RunLogLine) -> None:
        data = (line.model_dump_json() + "\n").encode("utf-8")
        with self._lock:
            if self._fd is not None:
                os.write(self._fd, data)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def parse_run_log(lines: list[str] | str) -> list[RunLogLine]:
    """Lines of a run log; blank, cut-off or foreign lines are skipped (a crash may cut the last one)."""
    texts = lines.splitlines() if isinstance(lines, str) else lines
    parsed: list[RunLogLine] = []
    for text in texts:
        if not text.strip():
            continue
        try:
            raw: Any = json.loads(text)
            parsed.append(RunLogLine.model_validate(raw))
        except (json.JSONDecodeError, ValidationError):
            continue
    return parsed


def read_run_log(path: Path) -> list[RunLogLine]:
    try:
        return parse_run_log(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read run log {path}: {exc.strerror or exc}") from None
