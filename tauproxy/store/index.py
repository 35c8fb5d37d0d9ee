"""The on-disk index of a cassette: where each line of `calls.jsonl` is, in SQLite. A cache, never a
source of truth.

`calls.jsonl` stays the one reviewable, mergeable file. The index only says, for each stored
message, blob, chain node and call, at which byte offset of which version of that file its line
starts, plus what lookups need (a call's sample key and key, a node's parent and depth). So a lookup
reads one line with `os.pread`, and replay time and memory depend on the calls a run uses, not on
the size of the cassette.

Where: `DIR/.tauproxy-index/` beside calls.jsonl, holding its own `.gitignore` ("*"), so git never
sees it (a read-only cassette directory gets its index under the temp directory instead). One file
per version of calls.jsonl: `DEV-INODE-GEN.sqlite`. Rewrites (compact, merge, prune, a git checkout or
merge) give calls.jsonl a new inode, hence a new index file, built beside, never replacing one that a
reader has open; a rebuild for the same inode takes the next GEN. Older files are removed.

When it is trusted, for one inode: the index records the bytes it covers (up to the last complete
line) and the sha256 of the 4 KiB before that point. The file may only have grown past it (appends,
by any writer: the new lines are indexed on the next sync) or it is rebuilt: shrunk, or the covered
tail differs (an in-place rewrite or truncation). Every read is checked again: a call line must carry
the sample key it was looked up by, a content line must hash to what the index says. A mismatch means
the index is stale and raises `StaleIndex`, and the cassette rebuilds it; a corrupt or unreadable
index file is rebuilt too.

Concurrency: appends are indexed inside SQLite write transactions that re-read the covered offset,
so writers in several processes never index a range twice; rebuilds hold `index.lock` and publish
by rename. The index is a cache, so it is written with `synchronous=OFF`: a kill -9 cannot corrupt
it (the journal is in the OS), and power loss, which might, is caught by the checks above.

Its parts: index_db.py (the SQLite file: schema, location, row codecs), index_query.py (reading),
index_build.py (indexing new lines and resolving them), index_keys.py (deriving a v4 call's key),
index_pending.py (a writer's appends held until the index takes them) and index_problems.py (why a
line cannot be used).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Mapping
from pathlib import Path

from filelock import FileLock

from tauproxy.store.format import CassetteProblem
from tauproxy.store.index_build import IndexBuilder
from tauproxy.store.index_db import (
    INDEX_DIR,
    SCHEMA,
    SCHEMA_SQL,
    FileState,
    StaleIndex,
    connect,
    index_dir_for,
    newest_index,
    tail_sha,
)
from tauproxy.store.index_pending import AppendedLine
from tauproxy.store.index_problems import index_problems
from tauproxy.store.index_query import IndexQuery

__all__ = ["INDEX_DIR", "CassetteIndex", "FileState", "StaleIndex", "index_dir_for"]


class CassetteIndex:
    """The index of one version (inode) of a calls.jsonl: `query` reads it, `sync` extends it.

    Not thread-safe: the Cassette that owns it serialises calls.
    """

    def __init__(self, calls_file: Path, fd: int, state: FileState, db_path: Path) -> None:
        self.calls_file = calls_file
        self.state = state
        self.db_path = db_path
        self.query = IndexQuery(calls_file, fd, connect(db_path))
        self._builder = IndexBuilder(self.query)

    @classmethod
    def open(cls, calls_file: Path, fd: int, state: FileState, directory: Path) -> CassetteIndex:
        """The index of the file open as `fd`, brought up to `state.size` (rebuilt if it must be)."""
        prefix = f"{state.dev}-{state.ino}-"
        current = newest_index(directory, prefix)
        if current is not None:
            try:
                index = cls(calls_file, fd, state, current)
                index.sync(state.size)
                return index
            except (StaleIndex, sqlite3.DatabaseError):
                pass  # stale or corrupt: rebuilt below
        return cls.rebuild(calls_file, fd, state, directory)

    @classmethod
    def rebuild(cls, calls_file: Path, fd: int, state: FileState, directory: Path) -> CassetteIndex:
        """Index the file from scratch into a temp file, then publish it under the next generation."""
        prefix = f"{state.dev}-{state.ino}-"
        with FileLock(str(directory / "index.lock"), timeout=600):
            for dead in directory.glob(".build-*"):
                dead.unlink(missing_ok=True)  # left by a builder killed mid-build (we hold the lock)
            newest = newest_index(directory, prefix)
            generation = int(newest.stem.rsplit("-", 1)[1]) + 1 if newest is not None else 0
            handle, temp = tempfile.mkstemp(dir=directory, prefix=".build-", suffix=".sqlite")
            os.close(handle)
            target = directory / f"{prefix}{generation}.sqlite"
            db: sqlite3.Connection | None = None
            building: CassetteIndex | None = None
            try:
                db = connect(Path(temp))
                _create_schema(db, fd)  # the call indexes come once the bulk is in (sync)
                db.close()
                # Built whole under its temp name, then published: no reader ever sees half an index.
                building = cls(calls_file, fd, state, Path(temp))
                building.sync(state.size)
                building.close()
                os.replace(temp, target)
            except BaseException:
                # Closed before the unlink: an open connection would keep the deleted file's space
                # (on a full disk, the space the run needs) until the garbage collector came by.
                for connection in (db, building.query.db if building is not None else None):
                    if connection is not None:
                        connection.close()
                Path(temp).unlink(missing_ok=True)
                Path(f"{temp}-journal").unlink(missing_ok=True)
                raise
            for stale in directory.glob("*.sqlite"):
                if stale != target:
                    stale.unlink(missing_ok=True)  # readers that have it open keep reading it
                    Path(f"{stale}-journal").unlink(missing_ok=True)
            index = cls(calls_file, fd, state, target)
            index.sync(state.size)
        return index

    @classmethod
    def in_memory(cls, calls_file: Path, fd: int, state: FileState) -> CassetteIndex:
        """An index held in memory, for when none can be written to disk (a full disk): a cache must
        never be why a cassette cannot be read or written. Its memory grows with the cassette."""
        index = cls.__new__(cls)
        index.calls_file, index.state, index.db_path = calls_file, state, Path(":memory:")
        db = connect(index.db_path)
        _create_schema(db, fd)
        index.query = IndexQuery(calls_file, fd, db)
        index._builder = IndexBuilder(index.query)
        index.sync(state.size)
        return index

    def close(self) -> None:
        self.query.db.close()

    def sync(self, size: int, written: Mapping[bytes, AppendedLine] | None = None) -> None:
        """Index the complete lines between what is covered and `size` (bytes known complete);
        `written`: lines just appended, already parsed (IndexBuilder.sync). What this process
        appended and held unindexed (index_pending.py) is indexed too, and let go."""
        pending = self.query.unindexed
        if pending:
            if self._builder.insert_held(pending):
                end = pending.end
                pending.clear()
                if size <= end:
                    self.state = FileState(self.state.dev, self.state.ino, max(end, self.state.size))
                    return
                # the rest of the file (another writer's lines after these) as any lines
            else:
                written = {**pending.lines(), **written} if written else pending.lines()
                size = max(size, pending.end)
        self._builder.sync(size, written)
        pending.clear()
        self.state = FileState(self.state.dev, self.state.ino, max(size, self.state.size))

    def problems(self) -> list[CassetteProblem]:
        """Every line that cannot be used, with why: bad lines, breaks in chains, unresolvable calls."""
        return index_problems(self.query)

    def size_bytes(self) -> int:
        return 0 if str(self.db_path) == ":memory:" else self.db_path.stat().st_size


def _create_schema(db: sqlite3.Connection, fd: int) -> None:
    db.executescript(SCHEMA_SQL)
    db.executemany(
        "INSERT INTO meta VALUES (?, ?)",
        [("schema", SCHEMA), ("covered", 0), ("lines", 0), ("samples", 0), ("tail", tail_sha(fd, 0))],
    )
