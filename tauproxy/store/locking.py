"""The cassette's file lock, its private directory, and making a created or renamed file durable.

Writers hold an exclusive `filelock.FileLock` on `.tauproxy-index/calls.jsonl.lock` (processes);
readers take it too, so they never mistake a write in progress for a cut-off line. Where the lock
file cannot be created (a read-only checkout) readers proceed without it.

The lock lives in the cassette's private directory (format.PRIVATE_DIR), which holds a `.gitignore`
of "*", so git never offers it for commit; so does the temp file of a rewrite. `remove_leftovers`
clears what a killed rewrite left, and the lock file older versions kept beside calls.jsonl.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from tauproxy.errors import CassetteError
from tauproxy.store.format import LOCK_FILE, PRIVATE_DIR, REWRITE_PREFIX, REWRITE_SUFFIX

LOCK_TIMEOUT_S = 120.0
LOCK_POLL_S = 0.002
_IGNORE_ALL = "# tauproxy's private files for calls.jsonl (index, lock, rewrites): never committed\n*\n"


def private_dir(directory: Path) -> Path:
    """The cassette's private directory, made (with its `.gitignore`) if absent; OSError if it cannot be.

    The cassette directory itself must exist: it is never created here.
    """
    private = directory / PRIVATE_DIR
    private.mkdir(exist_ok=True)
    ignore = private / ".gitignore"
    if not ignore.exists():
        ignore.write_text(_IGNORE_ALL)
    return private


def cassette_lock(directory: Path) -> FileLock:
    """The process-wide lock object of a cassette: one per path, re-entrant within a thread."""
    # Holds last well under a millisecond (one append and fsync), so waiters poll often.
    return FileLock(
        str(directory.resolve() / PRIVATE_DIR / LOCK_FILE),
        timeout=LOCK_TIMEOUT_S,
        poll_interval=LOCK_POLL_S,
        is_singleton=True,
    )


# The lock of each cassette directory this process has locked, by the path it was named by: a
# writer locks once per commit, and resolving the path, finding the singleton lock and making sure
# of the private directory every time cost more than taking the lock. (Once made, the private
# directory stays: should it be removed, filelock makes it again, and the next index built there
# writes its `.gitignore`.)
_LOCKS: dict[Path, FileLock] = {}


@contextmanager
def locked(directory: Path, *, read_only_ok: bool = False) -> Iterator[None]:
    """Hold the cassette's file lock; `read_only_ok` proceeds unlocked where no lock file can exist."""
    lock = _LOCKS.get(directory)
    if lock is None:
        lock = cassette_lock(directory)
        acquired = _acquire(lock, directory, read_only_ok)
        if acquired:
            _LOCKS[directory] = lock
    else:
        acquired = _acquire(lock, directory, read_only_ok, made=True)
    try:
        yield
    finally:
        if acquired:
            lock.release()


def _acquire(lock: FileLock, directory: Path, read_only_ok: bool, made: bool = False) -> bool:
    try:
        if not made:
            private_dir(directory.resolve())
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


def rewrite_leftovers(directory: Path) -> list[Path]:
    """Temp files of rewrites (in the private directory, or beside calls.jsonl from older versions)."""
    pattern = f"{REWRITE_PREFIX}*{REWRITE_SUFFIX}"
    return [*directory.glob(pattern), *(directory / PRIVATE_DIR).glob(pattern)]


def remove_leftovers(directory: Path) -> None:
    """Remove the temp files of rewrites that were killed, and an old version's lock file beside calls.jsonl.

    Only while holding the lock, taken without waiting: a rewrite holds it from its first line to
    its rename, so a temp file seen now is one whose writer died. Busy or read-only: left for the
    next open. Called on open, so a killed `cassette compact` leaves nothing behind for long.
    """
    old_lock = directory / LOCK_FILE
    temps = rewrite_leftovers(directory)
    if not temps and not old_lock.exists():
        return
    lock = cassette_lock(directory)
    try:
        private_dir(directory.resolve())
        lock.acquire(timeout=0)
    except (Timeout, OSError):
        return
    try:
        for temp in temps:
            temp.unlink(missing_ok=True)
        _remove_old_lock(old_lock)
    except OSError:
        pass  # not ours to remove (permissions): harmless, tried again on the next open
    finally:
        lock.release()


def _remove_old_lock(old_lock: Path) -> None:
    """The empty lock file of an older version, unless a process of that version holds it now."""
    if not old_lock.exists() or old_lock.stat().st_size:
        return
    held = FileLock(str(old_lock), timeout=0)
    try:
        held.acquire()
    except (Timeout, OSError):
        return
    try:
        old_lock.unlink(missing_ok=True)
    finally:
        held.release()


def fsync_dir(directory: Path) -> None:
    """Make a created or renamed file's directory entry durable too."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
