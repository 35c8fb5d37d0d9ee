"""Ctrl-C held off for a few steps that must happen together (`interrupt_deferred`).

A finished trial is handed on to the run's results (and counted as saved) and then appended to the
run directory. A KeyboardInterrupt raised between the two would leave a trial that the "N trials
saved" line and results.json count but simulations.jsonl, which a resume reads, lacks. Inside
`interrupt_deferred` a SIGINT is noted instead, and raised as KeyboardInterrupt once the steps are
done. Only on the main thread with Python's own SIGINT handler in place (where a Ctrl-C becomes a
KeyboardInterrupt at all); anywhere else nothing changes.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["interrupt_deferred"]


@contextmanager
def interrupt_deferred() -> Iterator[None]:
    """A SIGINT that arrives inside is raised as KeyboardInterrupt at the end, not in the middle."""
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    caught: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)

    signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if caught:
            raise KeyboardInterrupt
