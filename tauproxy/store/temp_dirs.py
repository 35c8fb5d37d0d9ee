"""Private temporary directories that outlive no process: a cassette's snapshot on a Ray worker, the
fresh index `cassette verify` builds.

Removing such a directory at exit (atexit) is not enough: a Ray worker is stopped by a signal when
its driver shuts Ray down, and a process killed with -9 runs no handler, so every run on a cluster
used to leave one directory per worker in the temp dir for good. Each directory therefore holds an
`owner` file that its process keeps open with a shared flock for as long as it lives. The kernel
drops that lock however the process ends, so the next directory of the same kind made on this
machine removes every one whose `owner` it can lock exclusively: their process is gone. (A flock
rather than a pid in the name: a pid is reused, and a process in another pid namespace that shares
the temp dir is invisible to a pid check, never to the lock.)
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

OWNER_FILE = "owner"
_held: dict[Path, int] = {}  # each live directory's owner descriptor, kept open for the lock


def owned_temp_dir(prefix: str) -> Path:
    """A new private directory `<tempdir>/<prefix>XXXX`, removed by `release`, else at exit, else (the
    process killed) by the next call with the same prefix; first removes what dead processes left."""
    sweep(prefix)
    path = Path(tempfile.mkdtemp(prefix=prefix))
    # Locked under another name, then renamed: a sweeper never finds an owner file not yet locked.
    fd = os.open(path / f".{OWNER_FILE}", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_SH)
    os.rename(path / f".{OWNER_FILE}", path / OWNER_FILE)
    _held[path] = fd
    return path


def release(path: Path) -> None:
    """Remove a directory made by `owned_temp_dir` and let go of its lock (idempotent)."""
    shutil.rmtree(path, ignore_errors=True)
    fd = _held.pop(path, None)
    if fd is not None:
        os.close(fd)


@atexit.register
def _release_all() -> None:
    # One handler for every directory still held, not one per directory: a long-lived process that
    # verifies cassettes again and again would otherwise pile up a handler per closed one.
    for path in list(_held):
        release(path)


def sweep(prefix: str) -> list[Path]:
    """Remove the directories `<tempdir>/<prefix>*` whose owning process is gone; returns them.

    A directory without an owner file (being made, or made by an older version) is left alone; one
    whose owner this process holds is live.
    """
    removed: list[Path] = []
    for path in Path(tempfile.gettempdir()).glob(f"{prefix}*"):
        if path in _held or not path.is_dir():
            continue
        try:
            fd = os.open(path / OWNER_FILE, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            continue  # no owner file, or not ours to open
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # its process still holds it
        else:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
    return removed
