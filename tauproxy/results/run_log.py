"""The run log of `tauproxy serve`: one JSON line per model call, read back for joining.

A line (every field always present; unknown values are null):
    ts                 unix time the answer was sent
    sample_key, key    the call's identity (tauproxy.data_model.key); null when the body was rejected
    model              the model name the client asked for
    api                the wire API it was asked through: "chat", "responses", ... (lines written
                       before it existed read as "chat")
    scope              {task_id, trial} (see tauproxy.serve.identity)
    occurrence, call_index
    seed               the request's seed
    role               from X-Tauproxy-Role, else "agent"
    source             "live" | "replay" | "shared" (this server's own live answer to the identical sample)
    status             the HTTP status the client got
    error_code         the OpenAI error code when status is not 200
    usage              token usage of the answer (recorded usage for a replay)
    cost_usd           live: what the call cost; replay: what it cost when recorded (saved now)
    price_source
    latency_s          wall time of the answer as served here
    recorded_latency_s a replayed or shared answer's original upstream latency
    request_fp         role-blind fingerprints of the request's non-system messages (fingerprint.py),
                       over the chat-shaped view of the conversation for the other wire APIs
    response_fp        fingerprint of the answer's message (its chat-shaped view)
    system_sha256      sha256 of the request's system prompt

It holds hashes, counts and names only: never message text, headers or keys. The writer is
tauproxy.serve.runlog; the model and the reader live here, below the commands that read it.

Where a results file finds its run log without being told (`run_log_beside`): beside it, named
after it, `NAME.runlog.jsonl` for `NAME.json` (for a run directory, `results.runlog.jsonl` in it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from tauproxy.data_model.call import CallRole, CallSource, Usage
from tauproxy.data_model.key import TrialScope
from tauproxy.errors import ConfigError

RUN_LOG_SUFFIX = ".runlog.jsonl"


class RunLogLine(BaseModel):
    ts: float
    sample_key: str | None = None
    key: str | None = None
    model: str
    api: str = "chat"  # the wire API of the call: "chat", "responses", ... (tauproxy/wire_apis/)
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
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read run log {path}: {getattr(exc, 'strerror', None) or exc}") from None


def run_log_path_for(results_file: Path) -> Path:
    """The run log named after a results file: `NAME.runlog.jsonl` beside `NAME.json`."""
    return results_file.with_name(results_file.name.removesuffix(".json") + RUN_LOG_SUFFIX)


def run_log_beside(results_file: Path) -> Path | None:
    """The run log a results file has beside it by the naming convention, if one is there."""
    path = run_log_path_for(results_file)
    return path if path.is_file() else None


def logged_sample_keys(lines: list[RunLogLine]) -> set[str]:
    """The sample keys of the calls a run log says were answered (what a cassette must keep for it)."""
    return {line.sample_key for line in lines if line.ok and line.sample_key is not None}
