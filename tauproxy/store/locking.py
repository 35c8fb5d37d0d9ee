"""The cassette's file lock, its private directory, and making a created or renamed file durable.

Writers hold an exclusive lock (flock) on `.tauproxy-index/calls.jsonl.lock` (processes); readers
take it too, so they never mistake a write in progress for a cut-off line. Where the lock file cannot
be created (a read-only checkout) readers proceed without it.

`locked` keeps the lock file open (until its cassette is closed: `let_go`) and takes the lock with one
flock (`_HeldFile`; a thread lock orders this process's threads before it), rather than through a
`filelock.FileLock`, which opens, checks and closes the file at every hold: a writer locks once per
commit, and that cost a lone writer about 0.25 ms of its 3 ms per call (the bench's misses at
concurrency 1). It is the same lock on the same file, so it excludes a `filelock.FileLock` on that file
(older versions) as it excludes itself. One object holds each lock file, by its resolved path, so a
thread takes it again by any name of its directory. A lock file removed while held open (its links gone)
is opened again; a forked child opens its own.

The lock lives in the cassette's private directory (format.PRIVATE_DIR), which holds a `.gitignore`
of "*", so git never offers it for commit; so does the temp file of a rewrite. `remove_leftovers`
clears what a killed rewrite left, and the lock file older versions kept beside calls.jsonl.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from tauproxy.errors import CassetteError
from tauproxy.store.format import LOCK_FILE, PRIVATE_DIR, REWRITE_PREFIX, REWRITE_SUFFIX

LOCK_TIMEOUT_S = 120.0
LOCK_POLL_S = 0.002
_REGISTRY = threading.Lock()  # makes each lock file's one _HeldFile
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


class _HeldFile:
    """One cassette's lock file, held open by this process: re-entrant within a thread, one thread at
    a time, and one flock per outermost hold (module docstring)."""

    def __init__(self, directory: Path, path: str) -> None:
        self.directory = directory
        self.path = path
        self.pid = os.getpid()
        self._mutex = threading.RLock()
        self._fd: int | None = None
        self._depth = 0

    def acquire(self, timeout: float | None = None) -> None:
        """Hold the lock; filelock's Timeout after `timeout` seconds (0: at once; None: LOCK_TIMEOUT_S),
        OSError if the file cannot be opened."""
        timeout = LOCK_TIMEOUT_S if timeout is None else timeout
        deadline = time.monotonic() + timeout
        if not self._mutex.acquire(timeout=timeout):
            raise Timeout(self.path)
        try:
            if self._depth == 0:
                self._lock_file(deadline)
            self._depth += 1
        except BaseException:
            self._mutex.release()
            raise

    def release(self) -> None:
        self._depth -= 1
        try:
            if self._depth == 0 and self._fd is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._mutex.release()

    def _lock_file(self, deadline: float) -> None:
        while True:
            fd = self._fd
            if fd is None:
                fd = self._fd = self._open()
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise Timeout(self.path) from None
                    time.sleep(LOCK_POLL_S)
            if os.fstat(fd).st_nlink:  # still the file the others lock by its name
                return
            self._fd = None  # removed while held open: lock the one there now
            _OPEN.discard(self)
            os.close(fd)

    def close_if_idle(self) -> bool:
        """Close the lock file unless a thread holds (or is taking) the lock: whether it did. A
        later hold opens it again."""
        if not self._mutex.acquire(blocking=False):
            return False
        try:
            if self._depth:
                return False
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
                _OPEN.discard(self)
            return True
        finally:
            self._mutex.release()

    def _open(self) -> int:
        if len(_OPEN) >= MAX_HELD_FILES:  # make room: close the idle ones (see _LOCKS)
            for other in list(_OPEN):
                if other is not self and other.pid == self.pid:
                    other.close_if_idle()
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # the private directory is gone: made again, as filelock would
            private_dir(self.directory.resolve())
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        _OPEN.add(self)
        return fd


# The held lock file of each cassette directory this process has locked, by the path it was named
# by: a writer locks once per commit, and resolving the path and making sure of the private
# directory every time cost more than taking the lock. (Once made, the private directory stays:
# should it be removed, _HeldFile makes it again, and the next index built there writes its
# `.gitignore`.) One object per lock file (`_FILES`, by its resolved path), however its directory
# is named, so a thread that holds it takes it again by any name. At most MAX_HELD_FILES keep their
# file open (`_OPEN`): a process that goes through many cassettes (a test suite) closes the idle
# ones' before it opens another, so it never runs out of descriptors; a closed one opens again
# when next taken.
_LOCKS: dict[Path, _HeldFile] = {}
_FILES: dict[str, _HeldFile] = {}
_OPEN: set[_HeldFile] = set()
MAX_HELD_FILES = 16


@contextmanager
def locked(directory: Path, *, read_only_ok: bool = False) -> Iterator[None]:
    """Hold the cassette's file lock; `read_only_ok` proceeds unlocked where no lock file can exist."""
    held = _LOCKS.get(directory)
    if held is None or held.pid != os.getpid():  # a forked child never shares its parent's descriptor
        held = _LOCKS[directory] = _held_file(directory)
    acquired = _acquire(held, read_only_ok)
    try:
        yield
    finally:
        if acquired:
            held.release()


def let_go(directory: Path) -> None:
    """The cassette at `directory` was closed: close its lock file unless a thread holds the lock (a
    later `locked` opens it again), so a closed cassette keeps no file of its directory open (a
    directory on a mount can then be unmounted)."""
    held = _LOCKS.get(directory)
    if held is not None and held.pid == os.getpid():
        held.close_if_idle()


def _held_file(directory: Path) -> _HeldFile:
    path = str(directory.resolve() / PRIVATE_DIR / LOCK_FILE)
    with _REGISTRY:
        held = _FILES.get(path)
        if held is None or held.pid != os.getpid():
            held = _FILES[path] = _HeldFile(directory, path)
        return held


def _acquire(held: _HeldFile, read_only_ok: bool) -> bool:
    directory = held.directory
    try:
        held.acquire()
    except Timeout:
        raise CassetteError(
            f"cassette {directory} is locked by another process for over {LOCK_TIMEOUT_S:.0f} s ({held.path})"
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
    held = _held_file(directory)  # the one `locked` holds: a thread that holds it already goes on
    try:
        private_dir(directory.resolve())
        held.acquire(timeout=0)
    except (Timeout, OSError):
        return
    try:
        for temp in temps:
            temp.unlink(missing_ok=True)
        _remove_old_lock(old_lock)
    except OSError:
        pass  # not ours to remove (permissions): harmless, tried again on the next open
    finally:
        held.release()


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
