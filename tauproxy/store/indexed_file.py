"""One cassette's calls.jsonl and the index that describes it, kept in step.

Opening, reloading and closing live here, with the one rule every read and write follows: the index
is caught up with the file under the file lock (or rebuilt when the file was replaced), and a read
that finds the index stale rebuilds it once. `generation` moves whenever the index does, so the
reader's caches know when to drop what they hold.

A writer's appends are indexed lazily (index_pending.py): `appended` holds them beside the index,
which catches up every so many calls, before a read that scans it (IndexQuery.catch_up), before a
writer indexes lines another one appended (`load_locked`), and on `close`. While the file is as this
process left it after its last append (same inode, size and modification time, checked under the
file lock: `unchanged`), the next append needs no catch-up at all.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from tauproxy.errors import CassetteError
from tauproxy.store.format import CALLS_FILE, CassetteProblem
from tauproxy.store.index import CassetteIndex, FileState, StaleIndex, index_dir_for
from tauproxy.store.index_pending import AppendedLine
from tauproxy.store.locking import fsync_dir, let_go, locked

_T = TypeVar("_T")


class IndexedFile:
    """calls.jsonl (or a snapshot's private copy of it) with its open index; thread-safe."""

    def __init__(self, directory: Path, source: Path | None = None, index_dir: Path | None = None) -> None:
        self.directory = directory
        self.file = directory / CALLS_FILE
        self.problems: list[CassetteProblem] = []
        self._samples = 0
        self.generation = 0  # moves whenever the index does (see the module docstring)
        self.snapshot = False  # built from bytes (a Ray worker's copy): never reloads, never writes
        self.lock = threading.RLock()  # threads sharing one cassette; the file lock is for processes
        self._source = source or self.file  # what is read: the file, or a snapshot's private copy
        self._index_dir = index_dir
        self._idx: CassetteIndex | None = None
        self._fd: int | None = None
        self._refreshed: tuple[CassetteIndex, int, list[Any]] | None = None  # what the last refresh saw
        # The file as this process's last append left it (device, inode, size, mtime), every line of it
        # indexed or held unindexed (index_pending.py); None when that is not known.
        self._left: tuple[int, int, int, int] | None = None

    @property
    def samples(self) -> int:
        """How many sample keys can be replayed (what this process appended counted too)."""
        self.catch_up()
        return self._samples

    @staticmethod
    def create(directory: Path) -> None:
        """Make an empty cassette at `directory`."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(directory / CALLS_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.close(fd)
            fsync_dir(directory)
        except OSError as exc:
            raise CassetteError(f"cannot create cassette {directory}: {exc.strerror or exc}") from None

    def read_bytes(self) -> bytes:
        """The file's bytes as they are now, read under the lock (never a write in progress)."""
        with self.lock, locked(self.directory, read_only_ok=True):
            try:
                return self.file.read_bytes()
            except FileNotFoundError:
                return b""
            except OSError as exc:
                raise CassetteError(f"cannot read {self.file}: {exc.strerror or exc}") from None

    def reload(self) -> None:
        """Look at the file again: index what was appended, or rebuild the index if it was replaced."""
        self.refuse_if_snapshot("reload")
        with self.lock:
            with locked(self.directory, read_only_ok=True):
                state = self._stat()  # complete bytes: writers append whole lines under this lock
            self.load_locked(state)

    def refuse_if_snapshot(self, action: str) -> None:
        if self.snapshot:
            raise CassetteError(f"cannot {action} {self.file}: this is a read-only in-memory snapshot of it")

    def _stat(self) -> FileState | None:
        try:
            stat = os.stat(self._source)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CassetteError(f"cannot read {self._source}: {exc.strerror or exc}") from None
        return FileState(stat.st_dev, stat.st_ino, stat.st_size)

    def load_locked(self, state: FileState | None = None) -> None:
        """Bring the index up to `state` (the file as it is now by default); the caller holds the lock."""
        state = state or self._stat()
        if state is None:
            self._close_index()
            self.problems, self._samples = [], 0
            self.generation += 1
            return
        idx = self._idx
        if idx is not None and (idx.state.dev, idx.state.ino) == (state.dev, state.ino):
            try:
                idx.sync(state.size)
            except (StaleIndex, sqlite3.DatabaseError):
                self._close_index()
        elif idx is not None:
            self._close_index()
        if self._idx is None:
            self._open_index(state)
        self.refresh(state.size)

    def unchanged(self, stat: os.stat_result) -> bool:
        """Whether the file (`stat`, taken under the file lock) is as this process's last append left
        it: then every line of it is indexed or held, and the next append needs no catch-up."""
        left = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
        return self._idx is not None and self._left == left

    def appended(
        self, start: int, lines: Sequence[tuple[bytes, AppendedLine]], after: os.stat_result, hold: bool = True
    ) -> None:
        """An append of ours wrote `lines` (each with its newline) at byte `start`, and `after` is the
        file once they were written; the caller holds the file lock, and caught the index up with the
        file before the append (or found it `unchanged` since the last one). So the lines follow what
        is indexed or held, and are held too (index_pending.py), unless it is time to catch up or
        `hold` is False (lines that must be indexed through the slow path: a clash, a cut line)."""
        idx = self.index()
        pending = idx.query.unindexed
        state = FileState(after.st_dev, after.st_ino, after.st_size)
        ours = (state.dev, state.ino) == (idx.state.dev, idx.state.ino)
        if hold and ours and start + sum(len(raw) for raw, _ in lines) == state.size:
            pending.add(start, idx.query.lines, lines, idx.query.depth)
            if pending.full():
                self.synced_to(state)
            else:
                self.generation += 1  # the reader's caches may hold a miss for a call just appended
        else:
            self.synced_to(state, {raw[:-1]: line for raw, line in lines})
        self._left = (after.st_dev, after.st_ino, after.st_size, after.st_mtime_ns) if ours else None

    def catch_up(self) -> None:
        """Index what this process appended and holds unindexed (index_pending.py), if anything."""
        with self.lock:
            idx = self._idx
            if idx is not None and idx.query.unindexed:
                self.synced_to(FileState(idx.state.dev, idx.state.ino, idx.query.unindexed.end))

    def synced_to(self, state: FileState, written: Mapping[bytes, AppendedLine] | None = None) -> None:
        """The file grew to `state.size` by an append of ours: index it (reopened if the index failed).
        `written`: the lines of that append, parsed (IndexBuilder.sync)."""
        idx = self.index()
        try:
            idx.sync(state.size, written)
        except (StaleIndex, sqlite3.DatabaseError):
            self._close_index()
        if self._idx is None:
            self._open_index(state)
        self.refresh(state.size)

    def _open_index(self, state: FileState, rebuild: bool = False) -> None:
        try:
            fd = os.open(self._source, os.O_RDONLY)
        except OSError as exc:
            raise CassetteError(f"cannot read {self._source}: {exc.strerror or exc}") from None
        stat = os.fstat(fd)
        if (stat.st_dev, stat.st_ino) != (state.dev, state.ino):  # replaced since the stat: read what is there
            state = FileState(stat.st_dev, stat.st_ino, stat.st_size)
        directory = self._index_dir or index_dir_for(self._source)
        try:
            opener = CassetteIndex.rebuild if rebuild else CassetteIndex.open
            try:
                self._idx = opener(self._source, fd, state, directory)
            except (sqlite3.Error, OSError):
                # No index can be written there (a full disk): keep one in memory instead, so that the
                # cassette itself decides what works (an append then fails, and says why).
                self._idx = CassetteIndex.in_memory(self._source, fd, state)
            self._idx.query.catch_up = self.catch_up
        except (sqlite3.Error, OSError) as exc:
            os.close(fd)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise CassetteError(f"cannot index {self.file}: {reason}") from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def close(self) -> None:
        """Index what this process appended, then release the index connection, the file descriptor
        and the lock file (also done when garbage-collected, without the indexing and the lock file:
        the next open does the one, the bounded set of held lock files the other, locking.py)."""
        with self.lock:
            with contextlib.suppress(CassetteError, OSError, sqlite3.Error):  # a later open indexes them
                self.catch_up()
            self._close_index()
            if not self.snapshot:
                let_go(self.directory)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown there may be nothing to release
            self._close_index()

    def _close_index(self) -> None:
        self._refreshed = None
        self._left = None
        if self._idx is not None:
            self._idx.close()
            self._idx = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def refresh(self, size: int) -> None:
        """Take the problems and the sample count from the index, now that it covers `size` bytes.

        Nothing to take when the same index says what it said at the last refresh, for the same
        size (a writer's catch-up before its append, when no other process appended): then the
        generation stays too, and the reader's caches with it."""
        idx = self.index()
        seen = (idx, size, idx.query.db.execute("SELECT k, v FROM meta ORDER BY k").fetchall())
        if self._refreshed is not None and self._refreshed[0] is idx and self._refreshed[1:] == seen[1:]:
            return
        self._refreshed = seen
        self.generation += 1
        problems = idx.problems()
        covered = idx.query.covered()
        if size > covered:  # a last line with no newline: cut off, or being written by another process
            problems.append(
                CassetteProblem(
                    self.file,
                    idx.query.lines() + 1,
                    "truncated last line (a write was cut off): no newline at the end of the file",
                )
            )
        self.problems = problems
        self._samples = idx.query.samples()

    def index(self) -> CassetteIndex:
        if self._idx is None:
            raise CassetteError(f"{self.file}: the cassette has no file (it was removed)")
        return self._idx

    def current(self) -> CassetteIndex | None:
        """The index in use, with everything this process appended indexed, or None (for readers
        that stream outside the lock)."""
        with self.lock:
            self.catch_up()
            return self._idx

    def read(self, action: Callable[[CassetteIndex], _T]) -> _T:
        """Run a read on the index; a stale index (the file changed under it) is rebuilt once."""
        with self.lock:
            try:
                return action(self.index())
            except (StaleIndex, sqlite3.DatabaseError):
                state = self._stat()
                self._close_index()
                if state is not None:
                    self._open_index(state, rebuild=True)  # it lied once: build it again from the file
                    self.refresh(state.size)
                try:
                    return action(self.index())
                except StaleIndex as exc:
                    raise CassetteError(f"{self.file}: the file changes while it is read ({exc})") from None
