"""The console script (`tauproxy`, `python -m tauproxy_cli`): the command, then out of the process
without the interpreter's teardown.

At exit CPython clears every module and runs a last collection over every object left, which, after a
τ² run had imported about 1,100 modules and loaded τ²'s databases, cost 40-50 ms of CPU (bench/floors.py
counts it against the replay). Nothing of the command's own needs it: its results and cassettes are
written and fsynced by explicit closes, and its streams are flushed here. So when the command has
finished (an exit code, not a crash) and no other thread is alive, the process runs its atexit
handlers (logging's flush, Ray's shutdown, coverage's data), flushes stdout and stderr and leaves with
os._exit. Anything else (a traceback, a thread still running, a stream that cannot be flushed) leaves
the ordinary way. `main()` itself never exits this way: the tests call it in-process.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading

from tauproxy.runner.collector import paused_collector

# The CLI's modules live as long as the process: the collector's passes over them while they load
# find no garbage (runner/collector.py).
with paused_collector():
    from tauproxy_cli.main import main


def console() -> None:
    try:
        main()
    except SystemExit as exc:
        leave(exc.code)
    leave(0)


def leave(code: str | int | None) -> None:
    """Exit with `code` (as SystemExit takes it), skipping the teardown when that loses nothing."""
    if not (code is None or isinstance(code, int)) or threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()  # what a normal exit runs first; each handler runs once (it unregisters)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe or stream: Python's own exit reports it as it does
        sys.exit(code)
    os._exit(code or 0)
