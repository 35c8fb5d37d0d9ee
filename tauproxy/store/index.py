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
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from filelock import FileLock

from tauproxy.data_model.key import KeyHasher, sample_key
from tauproxy.errors import CassetteError
from tauproxy.store.entry import CassetteEntry, StoredRequest, StoredResponse
from tauproxy.store.format import (
    REF_LEN,
    BlobLine,
    CallLine,
    CassetteProblem,
    MsgLine,
    NodeLine,
    parse_line,
    ref_matches,
)

INDEX_DIR = ".tauproxy-index"
SCHEMA = "tauproxy-index-3"
TAIL = 4096
CHUNK = 8 << 20
RECENT = 20_000  # resolved references remembered (bounded, so memory stays flat)
BATCH = 2_000  # lines indexed between two bulk inserts (far fewer than RECENT: see _flush)
HASHERS = 4_096  # key hashers of recent chain nodes (a conversation's next call extends its last one)
TEXTS_CHARS = 4 << 20  # characters of recent message and blob text kept for deriving keys

MSG, BLOB, NODE = 0, 1, 2
KIND_NAME = {MSG: "message", BLOB: "blob", NODE: "message chain node"}

# Content rows are kept in file order and found through `content_r`: with the rows themselves keyed by
# hash, every insert of a big build landed on a random page of the whole table (2x slower at 1M calls).
# Hashes are stored compactly: `r` is the first 64 bits of a content hash as an integer (what a v3
# reference names), `full` and `sk` the 32 bytes of the hash; `key` only the first 64 bits of a
# request key (by_key checks every entry it reads against the whole key). A v4 call line carries no
# key: `kf` is the key derived from its request when it was indexed, and `lh` the first 64 bits of
# the sha256 of the line's bytes, checked on every read, so the key is only ever used with the line
# it was derived from. `sk`, `key` and `kf` stay null while a v4 call does not resolve.
_SCHEMA_SQL = """
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
    sk BLOB, key INTEGER, kf BLOB, lh INTEGER, ok INTEGER NOT NULL
);
CREATE INDEX calls_pending ON calls (ok) WHERE ok = 0;
CREATE TABLE bad (line INTEGER PRIMARY KEY, reason TEXT NOT NULL);
"""
# Made after a build's bulk inserts, not before: sorting once beats a random insert per call.
_CALL_INDEXES = (
    "CREATE INDEX IF NOT EXISTS calls_sk ON calls (sk, ok, seq)",
    "CREATE INDEX IF NOT EXISTS calls_key ON calls (key, ok)",
)


def _r(ref: str) -> int:
    """The first 64 bits of a hex hash or reference, as SQLite's signed 64-bit integer."""
    value = int(ref[:REF_LEN], 16)
    return value - (1 << 64) if value >= 1 << 63 else value


def _row_order(row: tuple[Any, ...]) -> tuple[int, int, int]:
    """Content rows by primary key, and the same content by line (so INSERT OR IGNORE keeps the first)."""
    return row[0], row[1], row[5]


def _lh(raw: bytes) -> int:
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
    beside = calls_file.parent / INDEX_DIR
    try:
        beside.mkdir(exist_ok=True)
        ignore = beside / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# tauproxy's derived index of calls.jsonl: a cache, never committed\n*\n")
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


def _tail_sha(fd: int, end: int) -> str:
    start = max(0, end - TAIL)
    return hashlib.sha256(os.pread(fd, end - start, start)).hexdigest()


class CassetteIndex:
    """The index of one version (inode) of a calls.jsonl, open for queries; see the module docstring.

    Not thread-safe: the Cassette that owns it serialises calls.
    """

    def __init__(self, calls_file: Path, fd: int, state: FileState, db_path: Path) -> None:
        self.calls_file = calls_file
        self.fd = fd  # the inode this index describes: pread sees it even after a rename over its path
        self.state = state
        self.db_path = db_path
        self.db = _connect(db_path)
        self._init_state()
        self._clashed.update(self.db.execute("SELECT DISTINCT kind, r FROM clash").fetchall())

    def _init_state(self) -> None:
        self._recent: OrderedDict[tuple[int, str], Located] = OrderedDict()
        self._new_samples = 0
        self._bulk = False
        self._clashed: set[tuple[int, int]] = set()
        self._clash_found = False  # a new clash in this sync: everything is resolved again
        # Rows indexed but not yet inserted (see _flush), with the content among them by (kind, r).
        self._content_rows: list[tuple[Any, ...]] = []
        self._call_rows: list[tuple[Any, ...]] = []
        self._unflushed: dict[tuple[int, str], Located] = {}  # by (kind, short reference)
        self._unflushed_sks: set[bytes] = set()
        # What deriving v4 keys needs again soon: message and blob texts just indexed, and the key
        # hasher of each recent chain node (a conversation's next call extends its previous one).
        self._texts: OrderedDict[tuple[int, str], str] = OrderedDict()
        self._text_chars = 0
        self._hashers: OrderedDict[str, KeyHasher] = OrderedDict()

    # -- opening, syncing, rebuilding ------------------------------------------------------------

    @classmethod
    def open(cls, calls_file: Path, fd: int, state: FileState, directory: Path) -> CassetteIndex:
        """The index of the file open as `fd`, brought up to `state.size` (rebuilt if it must be)."""
        prefix = f"{state.dev}-{state.ino}-"
        current = _newest(directory, prefix)
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
            newest = _newest(directory, prefix)
            generation = int(newest.stem.rsplit("-", 1)[1]) + 1 if newest is not None else 0
            handle, temp = tempfile.mkstemp(dir=directory, prefix=".build-", suffix=".sqlite")
            os.close(handle)
            target = directory / f"{prefix}{generation}.sqlite"
            try:
                db = _connect(Path(temp))
                db.executescript(_SCHEMA_SQL)  # the call indexes come once the bulk is in (sync)
                db.executemany(
                    "INSERT INTO meta VALUES (?, ?)",
                    [("schema", SCHEMA), ("covered", 0), ("lines", 0), ("samples", 0), ("tail", _tail_sha(fd, 0))],
                )
                db.close()
                # Built whole under its temp name, then published: no reader ever sees half an index.
                building = cls(calls_file, fd, state, Path(temp))
                building.sync(state.size)
                building.close()
                os.replace(temp, target)
            except BaseException:
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
        index.calls_file, index.fd, index.state, index.db_path = calls_file, fd, state, Path(":memory:")
        index.db = _connect(index.db_path)
        index.db.executescript(_SCHEMA_SQL)
        index.db.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("schema", SCHEMA), ("covered", 0), ("lines", 0), ("samples", 0), ("tail", _tail_sha(fd, 0))],
        )
        index._init_state()
        index.sync(state.size)
        return index

    def close(self) -> None:
        self.db.close()

    def covered(self) -> int:
        return self._meta("covered")

    def sync(self, size: int) -> None:
        """Index the complete lines between what is covered and `size` (bytes known complete)."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            meta = dict(db.execute("SELECT k, v FROM meta").fetchall())
            if meta.get("schema") != SCHEMA:
                raise StaleIndex("another index schema")
            covered, lines = int(meta["covered"]), int(meta["lines"])
            # Against the file's size now, not `size`: another process may have indexed further.
            if os.fstat(self.fd).st_size < covered or _tail_sha(self.fd, covered) != meta["tail"]:
                raise StaleIndex("calls.jsonl shrank or its covered tail changed")
            if size > covered:
                self._new_samples = 0
                self._bulk = covered == 0
                self._clash_found = False
                end, lines = self._index_range(covered, size, lines)
                if self._clash_found:
                    self._unresolve_all()
                if end != covered:
                    samples = int(meta["samples"]) + self._settle()
                    if self._bulk or self._clash_found:  # counted once, not call by call
                        samples = int(db.execute("SELECT COUNT(DISTINCT sk) FROM calls WHERE ok = 1").fetchone()[0])
                    db.executemany(
                        "UPDATE meta SET v = ? WHERE k = ?",
                        [(end, "covered"), (lines, "lines"), (samples, "samples"), (_tail_sha(self.fd, end), "tail")],
                    )
            if covered == 0:
                for statement in _CALL_INDEXES:
                    db.execute(statement)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            self._forget()  # what was derived from the rolled-back lines
            raise
        finally:
            self._recent.clear()
            self._content_rows.clear()
            self._call_rows.clear()
            self._unflushed.clear()
            self._unflushed_sks.clear()
            self._bulk = False
        self.state = FileState(self.state.dev, self.state.ino, max(size, self.state.size))

    def _index_range(self, start: int, size: int, lines: int) -> tuple[int, int]:
        """Index every complete line in [start, size); returns the end of the last one and the line count."""
        offset, pending = start, b""
        while offset < size:
            chunk = os.pread(self.fd, min(CHUNK, size - offset), offset)
            if not chunk:
                break
            offset += len(chunk)
            data = pending + chunk
            base = offset - len(data)
            cut = data.rfind(b"\n")
            if cut < 0:
                pending = data
                continue
            position = 0
            while position <= cut:
                newline = data.index(b"\n", position)
                lines += 1
                self._add_line(lines, base + position, data[position:newline])
                position = newline + 1
                if len(self._content_rows) + len(self._call_rows) >= BATCH:
                    self._flush()
            pending = data[cut + 1 :]
        self._flush()
        return offset - len(pending), lines

    def _flush(self) -> None:
        """Insert the rows indexed since the last flush, many at a time.

        Until then, `find` sees the unflushed content in `_unflushed`. A row that SQLite ignores is
        the same content again (a union merge) or, rarely, another content under the same reference
        (a clash: see _unresolve_all).
        """
        db, rows = self.db, self._content_rows
        if rows:
            before = db.total_changes
            rows.sort(key=_row_order)  # in key order: each insert lands near the previous one in the B-tree
            db.executemany("INSERT OR IGNORE INTO content VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            if db.total_changes - before != len(rows):
                self._record_clashes(rows)
        if self._call_rows:
            db.executemany(
                "INSERT INTO calls (line, off, len, sk, key, kf, lh, ok) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                self._call_rows,
            )
        rows.clear()
        self._call_rows.clear()
        self._unflushed.clear()
        self._unflushed_sks.clear()

    def _record_clashes(self, rows: list[tuple[Any, ...]]) -> None:
        """Record the clashes among rows SQLite ignored (the others are the same content again)."""
        for row in rows:
            stored = self.db.execute("SELECT full FROM content WHERE kind = ? AND r = ?", row[:2]).fetchone()
            if stored[0] != row[2]:
                self._add_clash(row)

    def _add_clash(self, row: tuple[Any, ...]) -> None:
        self.db.execute("INSERT OR IGNORE INTO clash VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
        self._clashed.add((row[0], row[1]))
        self._clash_found = True
        self._forget()

    def _unresolve_all(self) -> None:
        """A new clash: its reference is ambiguous for every line, earlier ones too (a union merge
        may put either content first), so every node and call is resolved again by _settle, and a
        call whose request goes through the reference is unusable, wherever it is. Clashes are rare
        (see format.py); this is the slow, simple path for them."""
        for table in ("content", "clash"):
            self.db.execute(f"UPDATE {table} SET depth = NULL WHERE kind = 2")
        self.db.execute(
            "UPDATE calls SET ok = 0, sk = CASE WHEN lh IS NULL THEN sk END, "
            "key = CASE WHEN lh IS NULL THEN key END, kf = NULL"
        )
        self._forget()

    def _forget(self) -> None:
        """A reference became ambiguous: what was resolved through it must be resolved again."""
        self._recent.clear()
        self._texts.clear()
        self._text_chars = 0
        self._hashers.clear()

    def _add_line(self, number: int, off: int, raw: bytes) -> None:
        if not raw.strip():
            return
        try:
            line = parse_line(raw)
        except CassetteError as exc:
            raise CassetteError(f"{self.calls_file}:{number}: {exc}") from None
        except ValueError as exc:
            self.db.execute("INSERT OR REPLACE INTO bad VALUES (?, ?)", (number, str(exc)))
            return
        length = len(raw)
        if isinstance(line, (CallLine, CassetteEntry)):  # a tuple: faster than a union, per line
            self._add_call(number, off, raw, line)
            return
        if isinstance(line, NodeLine):
            kind, parent, message = NODE, line.parent, line.message
            depth = self._depth_of(parent, message)
        else:
            kind, parent, message, depth = (MSG if isinstance(line, MsgLine) else BLOB), None, None, 0
        r, short = _r(line.hash), line.hash[:REF_LEN]
        row = (kind, r, bytes.fromhex(line.hash), off, length, number, parent, message, depth)
        known = self._unflushed.get((kind, short))
        if known is None:
            self._content_rows.append(row)
            self._unflushed[(kind, short)] = Located(line.hash, *row[3:])  # what find sees until _flush
            if kind != NODE and not (self._clashed and (kind, r) in self._clashed):  # (an ambiguous name: no)
                assert isinstance(line, (MsgLine, BlobLine))
                self._keep_text((kind, short), line.text)
        elif known.full != line.hash:  # a clash within the batch: insert both now, resolve through SQL
            self._flush()
            self._add_clash(row)

    def _add_call(self, number: int, off: int, raw: bytes, line: CassetteEntry | CallLine) -> None:
        # Written after their content (same append), calls usually resolve at once; the rest wait
        # for _settle (a union merge may put a call before the lines it refers to).
        entry = line.unkeyed if isinstance(line, CallLine) else line
        ok = self.missing_refs(entry.request, entry.response, "call") is None
        if isinstance(line, CallLine):
            key = self.key_of(entry.request) if ok else None
            ok = key is not None
            keys: tuple[Any, ...] = (None,) * 3
            if key is not None:
                sk = sample_key(key, entry.seed, entry.task_id, entry.trial, entry.occurrence)
                keys = (_sk(sk), _r(key), bytes.fromhex(key))
            row = (number, off, len(raw), *keys, _lh(raw), int(ok))
        else:
            row = (number, off, len(raw), _sk(entry.sample_key), _r(entry.key), None, None, int(ok))
        if ok and not self._bulk:
            self._count_sample(row[3])
        if ok:
            self._unflushed_sks.add(row[3])
        self._call_rows.append(row)

    def _count_sample(self, sk: bytes) -> None:
        known = (
            sk in self._unflushed_sks
            or self.db.execute("SELECT 1 FROM calls WHERE sk = ? AND ok = 1 LIMIT 1", (sk,)).fetchone() is not None
        )
        self._new_samples += not known

    def _remember(self, key: tuple[int, str], found: Located) -> None:
        self._recent[key] = found
        if len(self._recent) > RECENT:
            self._recent.popitem(last=False)

    # -- deriving the key of a v4 call ---------------------------------------------------------------

    def _keep_text(self, key: tuple[int, str], text: str) -> None:
        if key not in self._texts:
            self._texts[key] = text
            self._text_chars += len(text)
            while self._text_chars > TEXTS_CHARS and len(self._texts) > 1:
                self._text_chars -= len(self._texts.popitem(last=False)[1])

    def _text_for_key(self, kind: int, ref: str) -> str | None:
        """A message's or blob's canonical text, checked (recent ones from memory), or None if absent."""
        text = self._texts.get((kind, ref))
        if text is not None:
            return text
        found = self.find(kind, ref)
        if not isinstance(found, Located):
            return None
        line = parse_line(self.read_line(found.off, found.length))
        if not isinstance(line, MsgLine | BlobLine) or line.hash != found.full:
            raise StaleIndex(f"{KIND_NAME[kind]} {ref[:12]} is not at byte {found.off}")
        self._keep_text((kind, ref), line.text)
        return line.text

    def _hasher_of(self, ref: str) -> KeyHasher | None:
        """The key hasher of the messages of the chain ending at node `ref` (None: it does not resolve)."""
        walked: list[Located] = []
        hasher: KeyHasher | None = None
        current: str | None = ref
        while current is not None:
            node = self.find(NODE, current)
            if not isinstance(node, Located) or node.depth is None or node.message is None:
                return None
            hasher = self._hashers.get(node.full)
            if hasher is not None:
                break
            walked.append(node)
            current = node.parent
        hasher = hasher or KeyHasher()
        for node in reversed(walked):
            assert node.message is not None  # checked in the walk
            text = self._text_for_key(MSG, node.message)
            if text is None:
                return None
            hasher = hasher.then(text)
            self._hashers[node.full] = hasher
            if len(self._hashers) > HASHERS:
                self._hashers.popitem(last=False)
        return hasher

    def key_of(self, request: StoredRequest) -> str | None:
        """The request key of a stored v4 request (key.KeyHasher: request_key's one definition), or None
        when its chain or tools do not resolve."""
        hasher = KeyHasher() if request.chain is None else self._hasher_of(request.chain)
        tools = None if request.tools is None else self._text_for_key(BLOB, request.tools)
        if hasher is None or (request.tools is not None and tools is None):
            return None
        return hasher.key(request.model, request.params, request.tool_choice, tools)

    # -- resolving chains and calls ----------------------------------------------------------------

    def _settle(self) -> int:
        """Resolve the nodes and calls not yet resolved (usually just the new ones), until nothing moves.

        Returns how many sample keys became replayable.
        """
        db = self.db
        while True:
            moved = 0
            pending = db.execute(
                # INDEXED BY: left to itself, SQLite scans every node instead of the few pending ones.
                "SELECT full, parent, message FROM content INDEXED BY content_pending "
                "WHERE kind = 2 AND depth IS NULL UNION ALL "
                "SELECT full, parent, message FROM clash WHERE kind = 2 AND depth IS NULL"
            ).fetchall()
            for full, parent, message in pending:
                depth = self._depth_of(parent, message)
                if depth is not None:
                    for table in ("content", "clash"):
                        db.execute(
                            f"UPDATE {table} SET depth = ? WHERE kind = 2 AND r = ? AND full = ?",
                            (depth, _r(full.hex()), full),
                        )
                    moved += 1
            if not moved:
                break
        self._recent.clear()  # depths were filled in: a remembered unresolved node is out of date
        rows = db.execute("SELECT seq, off, len FROM calls WHERE ok = 0").fetchall()
        for seq, off, length in rows:
            entry, call = self._unresolved_at(off, length)
            if self.missing_refs(entry.request, entry.response, call) is not None:
                continue
            if entry.v >= 4:
                key = self.key_of(entry.request)
                if key is None:
                    continue
                entry = CallLine(entry).keyed(key)
                db.execute(
                    "UPDATE calls SET ok = 1, sk = ?, key = ?, kf = ? WHERE seq = ?",
                    (_sk(entry.sample_key), _r(key), bytes.fromhex(key), seq),
                )
            else:
                db.execute("UPDATE calls SET ok = 1 WHERE seq = ?", (seq,))
            if not self._bulk:
                self._count_sample(_sk(entry.sample_key))
        return self._new_samples

    def _depth_of(self, parent: str | None, message: str) -> int | None:
        found = self.find(MSG, message)
        if not isinstance(found, Located):
            return None
        if parent is None:
            return 1
        node = self.find(NODE, parent)
        if not isinstance(node, Located) or node.depth is None:
            return None
        return node.depth + 1

    def find(self, kind: int, ref: str) -> Located | str | None:
        """The content `ref` names: Located, AMBIGUOUS (two contents share it), or None (not stored)."""
        if len(ref) < REF_LEN:
            return None
        memo = self._recent.get((kind, ref))
        if memo is not None:
            return memo
        if not self._clashed or (kind, _r(ref)) not in self._clashed:
            fresh = self._unflushed.get((kind, ref[:REF_LEN]))
            if fresh is not None and (len(ref) == REF_LEN or ref_matches(fresh.full, ref)):
                return fresh  # otherwise it may be stored (a clash that _flush has yet to see)
        r = _r(ref)
        sql = "SELECT full, off, len, line, parent, message, depth FROM {} WHERE kind = ? AND r = ?"
        rows = self.db.execute(sql.format("content"), (kind, r)).fetchall()
        if (kind, r) in self._clashed:
            rows += self.db.execute(sql.format("clash"), (kind, r)).fetchall()
        matches = [Located(row[0].hex(), *row[1:]) for row in rows if ref_matches(row[0].hex(), ref)]
        if not matches:
            return None
        if len(matches) > 1:
            return AMBIGUOUS
        found = matches[0]
        if found.depth is not None:
            self._remember((kind, ref), found)
        return found

    def missing_refs(self, request: StoredRequest, response: StoredResponse, call: str) -> str | None:
        """Why a call cannot be replayed (a reference that is not stored, broken or ambiguous), or None."""
        chain = request.chain
        if chain is not None:
            node = self.find(NODE, chain)
            if node is None:
                return f"{call} refers to message chain node {chain[:12]}, which is not stored"
            if node == AMBIGUOUS:
                return f"{call} refers to message chain node {chain[:12]}, which names two different nodes"
            assert isinstance(node, Located)
            if node.depth is None:
                why = self.break_of(chain)
                return f"{call} refers to message chain node {chain[:12]}, which does not resolve ({why})"
        replied = [*(request.messages or []), response.message]
        checks: list[tuple[int, str | None, str]] = [(MSG, d, "message") for d in replied]
        checks += [(BLOB, request.tools, "tools blob"), (BLOB, response.raw, "response blob")]
        for kind, digest, what in checks:
            if digest is None:
                continue
            found = self.find(kind, digest)
            if found is None:
                return f"{call} refers to {what} {digest[:12]}, which is not stored"
            if found == AMBIGUOUS:
                return f"{call} refers to {what} {digest[:12]}, which names two different contents"
        return None

    def _unusable(self, kind: int, ref: str) -> str | None:
        """What is wrong with a reference a node makes ("message X, which is not stored"), or None."""
        found = self.find(kind, ref)
        what = "message" if kind == MSG else "parent node"
        if found is None:
            return f"{what} {ref[:12]}, which is not stored"
        if found == AMBIGUOUS:
            return f"{what} {ref[:12]}, which names two different {'contents' if kind == MSG else 'nodes'}"
        return None

    def break_of(self, ref: str) -> str:
        """Why the chain ending at node `ref` does not resolve: the first break walking to its start."""
        seen: set[str] = set()
        current: str | None = ref
        while current is not None:
            node = self.find(NODE, current)
            if not isinstance(node, Located):
                return f"node {current[:12]} is {'ambiguous' if node == AMBIGUOUS else 'not stored'}"
            if node.full in seen:
                return f"node {current[:12]} is part of a cycle"
            seen.add(node.full)
            assert node.message is not None
            why = self._unusable(MSG, node.message) or (node.parent and self._unusable(NODE, node.parent))
            if why:
                return f"node {current[:12]} refers to {why}"
            current = node.parent
        return "unresolved"

    # -- reading ---------------------------------------------------------------------------------

    def read_line(self, off: int, length: int) -> bytes:
        return os.pread(self.fd, length, off)

    def _entry_at(self, off: int, length: int, sample_key: str, kf: bytes | None, lh: int | None) -> CassetteEntry:
        """The call line at `off`, checked to be the one indexed for `sample_key`.

        A v1-v3 line carries its key, and the sample key derived from it must be `sample_key`; a v4
        line must be byte for byte the line its key `kf` was derived from (`lh`), and then too.
        """
        raw = self.read_line(off, length)
        try:
            line = parse_line(raw)
        except ValueError:
            raise StaleIndex(f"no call line at byte {off}") from None
        if isinstance(line, CallLine):
            if kf is None or lh != _lh(raw):
                raise StaleIndex(f"the call line at byte {off} is not the one indexed")
            line = line.keyed(kf.hex())
        if not isinstance(line, CassetteEntry) or line.sample_key != sample_key:
            raise StaleIndex(f"no call line for {sample_key} at byte {off}")
        return line

    def _unresolved_at(self, off: int, length: int) -> tuple[CassetteEntry, str]:
        """A call line that does not resolve (its key may not be derivable), with how to name it."""
        try:
            line = parse_line(self.read_line(off, length))
        except ValueError:
            raise StaleIndex(f"no call line at byte {off}") from None
        if isinstance(line, CallLine):
            return line.unkeyed, "call"
        if not isinstance(line, CassetteEntry):
            raise StaleIndex(f"no call line at byte {off}")
        return line, f"call {line.sample_key[:12]}"

    def lookup(self, sample_key: str) -> CassetteEntry | None:
        row = self.db.execute(
            "SELECT off, len, kf, lh FROM calls WHERE sk = ? AND ok = 1 ORDER BY seq DESC LIMIT 1", (_sk(sample_key),)
        ).fetchone()
        return None if row is None else self._entry_at(row[0], row[1], sample_key, row[2], row[3])

    def _winners(
        self, where: str = "", args: tuple[int, ...] = (), only: set[bytes] | None = None
    ) -> Iterator[tuple[int, CassetteEntry]]:
        rows = self.db.execute(
            "SELECT line, off, len, sk, kf, lh FROM calls c WHERE ok = 1 " + where + " AND seq = "
            "(SELECT MAX(seq) FROM calls d WHERE d.sk = c.sk AND d.ok = 1) ORDER BY seq",
            args,
        )
        for line, off, length, sk, kf, lh in rows.fetchall() if args else _stream(rows):
            if only is not None and sk not in only:
                continue  # filtered before the line is read and parsed
            yield line, self._entry_at(off, length, sk.hex(), kf, lh)

    def entries(self, only: set[str] | None = None) -> Iterator[CassetteEntry]:
        """The winning entry of every sample key (or of those in `only`), in file order, one at a time."""
        for _, entry in self._winners(only=None if only is None else {_sk(key) for key in only}):
            yield entry

    def sample_keys(self) -> Iterator[str]:
        """The sample key of every winning entry, in file order, without reading the file."""
        rows = self.db.execute(
            "SELECT sk FROM calls c WHERE ok = 1 AND seq = "
            "(SELECT MAX(seq) FROM calls d WHERE d.sk = c.sk AND d.ok = 1) ORDER BY seq"
        )
        for (sk,) in _stream(rows):
            yield sk.hex()

    def by_key(self, key: str) -> list[CassetteEntry]:
        return [entry for _, entry in self._winners("AND key = ?", (_r(key),)) if entry.key == key]

    def history(self) -> Iterator[tuple[int, CassetteEntry]]:
        """Every usable call line, superseded ones too, with its line number, in file order."""
        for line, off, length, sk, kf, lh in _stream(
            self.db.execute("SELECT line, off, len, sk, kf, lh FROM calls WHERE ok = 1 ORDER BY seq")
        ):
            yield line, self._entry_at(off, length, sk.hex(), kf, lh)

    def recorded_more_than_once(self) -> Iterator[tuple[str, list[tuple[int, CassetteEntry]]]]:
        keys = self.db.execute("SELECT sk FROM calls WHERE ok = 1 GROUP BY sk HAVING COUNT(*) > 1 ORDER BY MIN(seq)")
        for (sk,) in keys.fetchall():
            rows = self.db.execute(
                "SELECT line, off, len, kf, lh FROM calls WHERE sk = ? AND ok = 1 ORDER BY seq", (sk,)
            )
            found = [(line, self._entry_at(off, length, sk.hex(), kf, lh)) for line, off, length, kf, lh in rows]
            yield sk.hex(), found

    def _meta(self, name: str) -> int:
        return int(self.db.execute("SELECT v FROM meta WHERE k = ?", (name,)).fetchone()[0])

    def samples(self) -> int:
        """How many sample keys can be replayed."""
        return self._meta("samples")

    def lines(self) -> int:
        """How many complete lines are covered."""
        return self._meta("lines")

    def content_count(self, kind: int) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM content WHERE kind = ?", (kind,)).fetchone()[0])

    def text_of(self, kind: int, ref: str) -> str:
        """The canonical JSON text of a message or blob, checked against its hash."""
        found = self.find(kind, ref)
        if not isinstance(found, Located):
            state = "names two different contents" if found == AMBIGUOUS else "is not stored"
            raise CassetteError(f"{self.calls_file}: {KIND_NAME[kind]} {ref[:12]} {state}")
        try:
            line = parse_line(self.read_line(found.off, found.length))
        except ValueError:
            raise StaleIndex(f"no content line at byte {found.off}") from None
        if not isinstance(line, MsgLine | BlobLine) or line.hash != found.full:
            raise StaleIndex(f"{KIND_NAME[kind]} {ref[:12]} is not at byte {found.off}")
        return line.text

    def node(self, ref: str) -> tuple[str, str | None, str] | None:
        """(full hash, parent reference, message reference) of a node whose chain resolves."""
        found = self.find(NODE, ref)
        if not isinstance(found, Located) or found.depth is None or found.message is None:
            return None
        return found.full, found.parent, found.message

    def depth(self, ref: str) -> int | None:
        found = self.find(NODE, ref)
        return found.depth if isinstance(found, Located) else None

    def problems(self) -> list[CassetteProblem]:
        """Every line that cannot be used, with why: bad lines, breaks in chains, unresolvable calls."""
        problems = [
            CassetteProblem(self.calls_file, line, reason)
            for line, reason in self.db.execute("SELECT line, reason FROM bad").fetchall()
        ]
        pending = self.db.execute(
            "SELECT line, full, parent, message FROM content INDEXED BY content_pending "
            "WHERE kind = 2 AND depth IS NULL"
        ).fetchall()
        for line, full_bytes, parent, message in pending:
            _full = full_bytes.hex()
            # Each break once, where it is; nodes after a break are not reported, the calls using them are.
            why = self._unusable(MSG, message) or (parent and self._unusable(NODE, parent))
            if why:
                reason = f"refers to {why}"
            elif parent is not None and self._in_cycle(parent, _full):
                reason = "is part of a cycle"
            else:
                continue
            problems.append(CassetteProblem(self.calls_file, line, f"node {_full[:12]} {reason}"))
        for line, off, length in self.db.execute("SELECT line, off, len FROM calls WHERE ok = 0").fetchall():
            entry, call = self._unresolved_at(off, length)
            why = self.missing_refs(entry.request, entry.response, call)
            problems.append(CassetteProblem(self.calls_file, line, why or f"{call}: its request key cannot be derived"))
        return sorted(problems, key=lambda problem: problem.line)

    def _in_cycle(self, parent: str, start: str) -> bool:
        seen: set[str] = set()
        current: str | None = parent
        while current is not None:
            node = self.find(NODE, current)
            if not isinstance(node, Located) or node.depth is not None:
                return False
            if node.full == start or node.full in seen:
                return node.full == start
            seen.add(node.full)
            current = node.parent
        return False

    def size_bytes(self) -> int:
        return 0 if str(self.db_path) == ":memory:" else self.db_path.stat().st_size


def _sk(sample_key: str) -> bytes:
    return bytes.fromhex(sample_key)


def _stream(cursor: sqlite3.Cursor) -> Iterator[Any]:
    """The rows of a query a thousand at a time (a million winners never sit in memory at once)."""
    while True:
        rows = cursor.fetchmany(1000)
        if not rows:
            return
        yield from rows


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), timeout=120, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA synchronous = OFF")  # a cache: see the module docstring
    db.execute("PRAGMA journal_mode = DELETE")
    return db


def _newest(directory: Path, prefix: str) -> Path | None:
    found: list[tuple[int, Path]] = []
    for path in directory.glob(f"{prefix}*.sqlite"):
        generation = path.stem[len(prefix) :]
        if generation.isdigit():
            found.append((int(generation), path))
    return max(found)[1] if found else None
