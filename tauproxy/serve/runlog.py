"""The run log of `tauproxy serve`, written: one JSON line per chat-completion call.

The line model, its fields and the reader are tauproxy.results.run_log, below every command that
reads a run log (`report --run-log`, the join onto another harness's results); this is the writer.
Lines are appended with one `os.write` on an O_APPEND descriptor, so concurrent writers never
interleave a line.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from tauproxy.errors import ConfigError
from tauproxy.results.run_log import RunLogLine

# RunLogLine is exported too: the serve modules that write lines import both from here.
__all__ = ["RunLog", "RunLogLine"]


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
