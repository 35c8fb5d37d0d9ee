"""The SQLite file behind a cassette's index: its schema, where it lives, and the small codecs of its rows.

See index.py for what the index is and when it is trusted.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from tauproxy.errors import CassetteError
from tauproxy.store.format import PRIVATE_DIR, REF_LEN
from tauproxy.store.locking import private_dir

INDEX_DIR = PRIVATE_DIR  # the cassette's private directory, which holds its lock too
SCHEMA = "tauproxy-index-4"
TAIL = 4096
CHUNK = 8 << 20

MSG, BLOB, NODE = 0, 1, 2
KIND_NAME = {MSG: "message", BLOB: "blob", NODE: "message chain node"}

# Content rows are kept in file order and found through `content_r`: with the rows themselves keyed by
# hash, every insert of a big build landed on a random page of the whole table (2x slower at 1M calls).
# Hashes are stored compactly: `r` is the first 64 bits of a content hash as an integer (what a v3
# reference names), `full` and `sk` the 32 bytes of the hash; `key` only the first 64 bits of a
# request key (by_key checks every entry it reads against the whole key). A v4 call line carries no
# key: `kf` is the key derived from its request when it was indexed, and `lh` the first 64 bits of
# the sha256 of the line's bytes, checked on every read, so the key is only ever used with the line
# it was derived from. `sk`, `key` and `kf` stay null while a v4 call does not resolve. `role`, `task`,
# `trial`, `model` and `chain` (the first 64 bits of its chain reference) are what a replay miss's
# search for the nearest recorded call filters and orders by, without reading a line.
SCHEMA_SQL = """
CREATE TABLE meta (k TEXT PRIMARY KEY, v) WITHOUT ROWID;
CREATE TABLE content (
    kind INTEGER NOT NULL, r INTEGER NOT NULL, full BLOB NOT NULL, off INTEGER NOT NULL, len INTEGER NOT NULL,
    line INTEGER NOT NULL, parent TEXT, message TEXT, depth INTEGER
);
CREATE UNIQUE INDEX content_r ON content (kind, r);
CREATE INDEX content_pending ON content (kind, depth) WHERE depth IS NULL AND kind = 2;
CREATE TABLE clash (
    kind INTEGER NOT NULL, r INTEGER NOT NULL, full BLOB NOT NULL, off INTEGER NOT NULL, len INTEGER NOT NULL,
    line INTEGER NOT NULL, parent TEXT, message TEXT, depth INTEGER, PRIMARY KEY (kind, r, full)
) WITHOUT ROWID;
CREATE TABLE calls (
    seq INTEGER PRIMARY KEY, line INTEGER NOT NULL, off INTEGER NOT NULL, len INTEGER NOT NULL,
    sk BLOB, key INTEGER, kf BLOB, lh INTEGER, ok INTEGER NOT NULL,
    role TEXT, task TEXT, trial INTEGER, model TEXT, chain INTEGER
);
CREATE INDEX calls_pending ON calls (ok) WHERE ok = 0;
CREATE TABLE bad (line INTEGER PRIMARY KEY, reason TEXT NOT NULL);
"""
# Made after a build's bulk inserts, not before: sorting once beats a random insert per call.
CALL_INDEXES = (
    "CREATE INDEX IF NOT EXISTS calls_sk ON calls (sk, ok, seq)",
    "CREATE INDEX IF NOT EXISTS calls_key ON calls (key, ok)",
    "CREATE INDEX IF NOT EXISTS calls_scope ON calls (role, task, trial)",
)


def ref_int(ref: str) -> int:
    """The first 64 bits of a hex hash or reference, as SQLite's signed 64-bit integer."""
    value = int(ref[:REF_LEN], 16)
    return value - (1 << 64) if value >= 1 << 63 else value


def row_order(row: tuple[Any, ...]) -> tuple[int, int, int]:
    """Content rows by primary key, and the same content by line (so INSERT OR IGNORE keeps the first)."""
    return row[0], row[1], row[5]


def line_check(raw: bytes) -> int:
    """The check value of a v4 call line's bytes (see the schema comment)."""
    return int.from_bytes(hashlib.sha256(raw).digest()[:8], "big", signed=True)


class StaleIndex(Exception):
    """The index does not describe the file any more: rebuild it."""


class Located(NamedTuple):
    """A content line found by reference: its full hash and where it is (a tuple: made per line)."""

    full: str
    off: int
    length: int
    line: int
    parent: str | None = None
    message: str | None = None
    depth: int | None = None


AMBIGUOUS = "ambiguous"  # a reference that two different contents share (see format.py)


@dataclass(frozen=True)
class FileState:
    """What a sync is for: one version (inode) of calls.jsonl and how many of its bytes are complete."""

    dev: int
    ino: int
    size: int


def index_dir_for(calls_file: Path) -> Path:
    """Beside calls.jsonl when writable, else a per-user directory under the temp directory."""
    try:
        beside = private_dir(calls_file.parent)
        probe = beside / f".probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
        return beside
    except OSError:
        digest = hashlib.sha256(str(calls_file.resolve()).encode()).hexdigest()[:16]
        fallback = Path(tempfile.gettempdir()) / f"tauproxy-index-{os.getuid()}" / digest
        try:
            fallback.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CassetteError(f"cannot create an index for {calls_file}: {exc.strerror or exc}") from None
        return fallback


def tail_sha(fd: int, end: int) -> str:
    start = max(0, end - TAIL)
    return hashlib.sha256(os.pread(fd, end - start, start)).hexdigest()


def sk_bytes(sample_key: str) -> bytes:
    return bytes.fromhex(sample_key)


def stream_rows(cursor: sqlite3.Cursor) -> Iterator[Any]:
    """The rows of a query a thousand at a time (a million winners never sit in memory at once)."""
    while True:
        rows = cursor.fetchmany(1000)
        if not rows:
            return
        yield from rows


def connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), timeout=120, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA synchronous = OFF")  # a cache: see the module docstring
    db.execute("PRAGMA journal_mode = DELETE")
    return db


def newest_index(directory: Path, prefix: str) -> Path | None:
    found: list[tuple[int, Path]] = []
    for path in directory.glob(f"{prefix}*.sqlite"):
        generation = path.stem[len(prefix) :]
        if generation.isdigit():
            found.append((int(generation), path))
    return max(found)[1] if found else None
