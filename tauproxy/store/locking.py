"""The cassette's file lock, and making a created or renamed file durable.

Writers hold an exclusive `filelock.FileLock` on `calls.jsonl.lock` (processes); readers take it too,
so they never mistake a write in progress for a cut-off line. Where the lock file cannot be created
(a read-only checkout) readers proceed without it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from tauproxy.errors import CassetteError
from tauproxy.store.format import LOCK_FILE

LOCK_TIMEOUT_S = 120.0
LOCK_POLL_S = 0.002


def cassette_lock(directory: Path) -> FileLock:
    """The process-wide lock object of a cassette: one per path, re-entrant within a thread."""
    # Holds last well under a millisecond (one append and fsync), so waiters poll often.
    return FileLock(
        str(directory.resolve() / LOCK_FILE),
        timeout=LOCK_TIMEOUT_S,
        poll_interval=LOCK_POLL_S,
        is_singleton=True,
    )


@contextmanager
def locked(directory: Path, *, read_only_ok: bool = False) -> Iterator[None]:
    """Hold the cassette's file lock; `read_only_ok` proceeds unlocked where no lock file can exist."""
    lock = cassette_lock(directory)
    acquired = _acquire(lock, directory, read_only_ok)
    try:
        yield
    finally:
        if acquired:
            lock.release()


def _acquire(lock: FileLock, directory: Path, read_only_ok: bool) -> bool:
    try:
        lock.acquire()
    except Timeout:
        raise CassetteError(
            f"cassette {directory} is locked by another process for over {LOCK_TIMEOUT_S:.0f} s ({lock.lock_file})"
        ) from None
    except OSError as exc:
        if read_only_ok:
            return False
        raise CassetteError(f"cannot lock cassette {directory}: {exc.strerror or exc}") from None
    return True


def fsync_dir(directory: Path) -> None:
    """Make a created or renamed file's directory entry durable too."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
