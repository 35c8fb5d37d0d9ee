"""Building a cassette's index: reading new lines of calls.jsonl into it, and resolving them.

Lines are parsed, their rows collected and inserted in batches; content is addressed by its 64-bit
reference, and two contents sharing one (a clash, see format.py) are kept apart in `clash`. Chains
and calls are resolved once every line is in (a union merge may put a call before its content), and
the key of each v4 call line is derived as it resolves (index_keys.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from tauproxy.data_model.key import sample_key
from tauproxy.errors import CassetteError
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.format import REF_LEN, BlobLine, CallLine, MsgLine, NodeLine, parse_line
from tauproxy.store.index_db import (
    BLOB,
    CALL_INDEXES,
    MSG,
    NODE,
    SCHEMA,
    Located,
    StaleIndex,
    line_check,
    ref_int,
    row_order,
    sk_bytes,
    tail_sha,
)
from tauproxy.store.index_keys import KeyDeriver
from tauproxy.store.index_pending import AppendedLine, KeyedCall, PendingCall, Unindexed
from tauproxy.store.index_problems import missing_refs
from tauproxy.store.index_query import IndexQuery

CHUNK = 8 << 20  # bytes read at a time
BATCH = 2_000  # lines indexed between two bulk inserts (far fewer than RECENT: see _flush)


class IndexBuilder:
    """Brings one index up to the end of its file's complete lines. Not thread-safe."""

    def __init__(self, query: IndexQuery) -> None:
        self._query = query
        self._keys = KeyDeriver(query)
        self._new_samples = 0
        self._bulk = False
        self._clash_found = False  # a new clash in this sync: everything is resolved again
        # Rows indexed but not yet inserted (see _flush); the content among them is also in
        # query.unflushed, where `find` sees it.
        self._content_rows: list[tuple[Any, ...]] = []
        self._call_rows: list[tuple[Any, ...]] = []
        self._unflushed_sks: set[bytes] = set()
        self._written: Mapping[bytes, AppendedLine] = {}

    def sync(self, size: int, written: Mapping[bytes, AppendedLine] | None = None) -> None:
        """Index the complete lines between what is covered and `size` (bytes known complete).

        `written`: lines a writer appended, by their bytes, as parse_line reads them (a call line
        with the key it was recorded under); a line found with exactly those bytes is not parsed
        again (its text was hashed into its reference, or its references into its node hash, by the
        writer that made both), and a call line's key is not derived again (the writer checked it
        against the request the line stores)."""
        self._written = written or {}
        db = self._query.db
        db.execute("BEGIN IMMEDIATE")
        try:
            meta = dict(db.execute("SELECT k, v FROM meta").fetchall())
            if meta.get("schema") != SCHEMA:
                raise StaleIndex("another index schema")
            covered, lines = int(meta["covered"]), int(meta["lines"])
            # Against the file's size now, not `size`: another process may have indexed further.
            if os.fstat(self._query.fd).st_size < covered or tail_sha(self._query.fd, covered) != meta["tail"]:
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
                        [
                            (end, "covered"),
                            (lines, "lines"),
                            (samples, "samples"),
                            (tail_sha(self._query.fd, end), "tail"),
                        ],
                    )
            if covered == 0:
                for statement in CALL_INDEXES:
                    db.execute(statement)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            self._forget()  # what was derived from the rolled-back lines
            raise
        finally:
            self._query.recent.clear()
            self._content_rows.clear()
            self._call_rows.clear()
            self._query.unflushed.clear()
            self._unflushed_sks.clear()
            self._bulk = False
            self._written = {}

    def insert_held(self, held: Unindexed) -> bool:
        """Index what this process appended and holds (index_pending.py) from what it holds, without
        reading the file: when the index covers exactly the bytes and lines before them, knows of no
        clash, and every node held resolves. Else (another process indexed some of them, or a line
        of another writer lies before them) False, and nothing is changed: `sync` reads them from
        the file instead, as any lines."""
        if held.start == 0 or not held.resolved or self._query.clashed:
            return False  # a new index's first lines make its call indexes (sync)
        db = self._query.db
        db.execute("BEGIN IMMEDIATE")
        try:
            meta = dict(db.execute("SELECT k, v FROM meta").fetchall())
            if (
                meta.get("schema") != SCHEMA
                or (int(meta["covered"]), int(meta["lines"])) != (held.start, held.lines_before)
                or tail_sha(self._query.fd, held.start) != meta["tail"]
            ):
                db.execute("ROLLBACK")
                return False
            rows = [
                (kind, ref_int(found.full), bytes.fromhex(found.full), *found[1:])
                for (kind, _), found in held.content.items()
            ]
            rows.sort(key=row_order)
            before = db.total_changes
            db.executemany("INSERT OR IGNORE INTO content VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            if db.total_changes - before != len(rows):  # stored already: a clash, or not ours alone
                db.execute("ROLLBACK")
                return False
            samples = int(meta["samples"]) + self._new_samples_of(set(held.calls))  # before they are in
            db.executemany(
                "INSERT INTO calls (line, off, len, sk, key, kf, lh, ok, role, task, trial, model, chain) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)",
                [_held_call_row(call) for call in held.call_lines],
            )
            db.executemany(
                "UPDATE meta SET v = ? WHERE k = ?",
                [
                    (held.end, "covered"),
                    (held.line_count, "lines"),
                    (samples, "samples"),
                    (tail_sha(self._query.fd, held.end), "tail"),
                ],
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return True

    def _new_samples_of(self, sks: set[bytes]) -> int:
        """How many of these sample keys no usable call indexed so far has."""
        known: set[bytes] = set()
        ordered = list(sks)
        for start in range(0, len(ordered), 500):  # under SQLite's 999 parameters
            part = ordered[start : start + 500]
            sql = f"SELECT DISTINCT sk FROM calls WHERE ok = 1 AND sk IN ({','.join('?' * len(part))})"
            known.update(sk for (sk,) in self._query.db.execute(sql, part).fetchall())
        return len(sks - known)

    def _index_range(self, start: int, size: int, lines: int) -> tuple[int, int]:
        """Index every complete line in [start, size); returns the end of the last one and the line count."""
        offset, pending = start, b""
        while offset < size:
            chunk = os.pread(self._query.fd, min(CHUNK, size - offset), offset)
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
        db, rows = self._query.db, self._content_rows
        if rows:
            before = db.total_changes
            rows.sort(key=row_order)  # in key order: each insert lands near the previous one in the B-tree
            db.executemany("INSERT OR IGNORE INTO content VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            if db.total_changes - before != len(rows):
                self._record_clashes(rows)
        if self._call_rows:
            db.executemany(
                "INSERT INTO calls (line, off, len, sk, key, kf, lh, ok, role, task, trial, model, chain) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                self._call_rows,
            )
        rows.clear()
        self._call_rows.clear()
        self._query.unflushed.clear()
        self._unflushed_sks.clear()

    def _record_clashes(self, rows: list[tuple[Any, ...]]) -> None:
        """Record the clashes among rows SQLite ignored (the others are the same content again)."""
        for row in rows:
            stored = self._query.db.execute("SELECT full FROM content WHERE kind = ? AND r = ?", row[:2]).fetchone()
            if stored[0] != row[2]:
                self._add_clash(row)

    def _add_clash(self, row: tuple[Any, ...]) -> None:
        self._query.db.execute("INSERT OR IGNORE INTO clash VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
        self._query.clashed.add((row[0], row[1]))
        self._clash_found = True
        self._forget()

    def _unresolve_all(self) -> None:
        """A new clash: its reference is ambiguous for every line, earlier ones too (a union merge
        may put either content first), so every node and call is resolved again by _settle, and a
        call whose request goes through the reference is unusable, wherever it is. Clashes are rare
        (see format.py); this is the slow, simple path for them."""
        for table in ("content", "clash"):
            self._query.db.execute(f"UPDATE {table} SET depth = NULL WHERE kind = 2")
        self._query.db.execute(
            "UPDATE calls SET ok = 0, sk = CASE WHEN lh IS NULL THEN sk END, "
            "key = CASE WHEN lh IS NULL THEN key END, kf = NULL"
        )
        self._forget()

    def _forget(self) -> None:
        """A reference became ambiguous: what was resolved through it must be resolved again."""
        self._query.recent.clear()
        self._keys.forget()

    def _add_line(self, number: int, off: int, raw: bytes) -> None:
        if not raw.strip():
            return
        try:
            line = self._written.get(raw) or parse_line(raw)
        except CassetteError as exc:
            raise CassetteError(f"{self._query.calls_file}:{number}: {exc}") from None
        except ValueError as exc:
            self._query.db.execute("INSERT OR REPLACE INTO bad VALUES (?, ?)", (number, str(exc)))
            return
        length = len(raw)
        if isinstance(line, (CallLine, CassetteEntry, KeyedCall)):  # a tuple: faster than a union, per line
            self._add_call(number, off, raw, line)
            return
        if isinstance(line, NodeLine):
            kind, parent, message = NODE, line.parent, line.message
            depth = self._depth_of(parent, message)
        else:
            kind, parent, message, depth = (MSG if isinstance(line, MsgLine) else BLOB), None, None, 0
        r, short = ref_int(line.hash), line.hash[:REF_LEN]
        row = (kind, r, bytes.fromhex(line.hash), off, length, number, parent, message, depth)
        known = self._query.unflushed.get((kind, short))
        if known is None:
            self._content_rows.append(row)
            self._query.unflushed[(kind, short)] = Located(line.hash, *row[3:])  # what find sees until _flush
            if kind != NODE and not (
                self._query.clashed and (kind, r) in self._query.clashed
            ):  # (an ambiguous name: no)
                assert isinstance(line, (MsgLine, BlobLine))
                self._keys.keep_text((kind, short), line.text)
        elif known.full != line.hash:  # a clash within the batch: insert both now, resolve through SQL
            self._flush()
            self._add_clash(row)

    def _add_call(self, number: int, off: int, raw: bytes, line: CassetteEntry | CallLine | KeyedCall) -> None:
        # Written after their content (same append), calls usually resolve at once; the rest wait
        # for _settle (a union merge may put a call before the lines it refers to).
        entry = line.unkeyed if isinstance(line, CallLine) else line.entry if isinstance(line, KeyedCall) else line
        ok = missing_refs(self._query, entry.request, entry.response, "call") is None
        if isinstance(line, (CallLine, KeyedCall)):
            if not ok:
                key = None
            elif isinstance(line, KeyedCall):
                key = line.entry.key  # as recorded (module docstring of index_pending.py)
            else:
                key = self._keys.key_of(entry.request)
            ok = key is not None
            keys: tuple[Any, ...] = (None,) * 3
            if key is not None:
                sk = sample_key(key, entry.seed, entry.task_id, entry.trial, entry.occurrence)
                keys = (sk_bytes(sk), ref_int(key), bytes.fromhex(key))
            row = (number, off, len(raw), *keys, line_check(raw), int(ok), *_scope_of(entry))
        else:
            row = (number, off, len(raw), sk_bytes(entry.sample_key), ref_int(entry.key), None, None, int(ok))
            row += _scope_of(entry)
        if ok and not self._bulk:
            self._count_sample(row[3])
        if ok:
            self._unflushed_sks.add(row[3])
        self._call_rows.append(row)

    def _count_sample(self, sk: bytes) -> None:
        known = (
            sk in self._unflushed_sks
            or self._query.db.execute("SELECT 1 FROM calls WHERE sk = ? AND ok = 1 LIMIT 1", (sk,)).fetchone()
            is not None
        )
        self._new_samples += not known

    def _settle(self) -> int:
        """Resolve the nodes and calls not yet resolved (usually just the new ones), until nothing moves.

        Returns how many sample keys became replayable.
        """
        db = self._query.db
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
                            (depth, ref_int(full.hex()), full),
                        )
                    moved += 1
            if not moved:
                break
        self._query.recent.clear()  # depths were filled in: a remembered unresolved node is out of date
        rows = db.execute("SELECT seq, off, len FROM calls WHERE ok = 0").fetchall()
        for seq, off, length in rows:
            entry, call = self._query.unresolved_at(off, length)
            if missing_refs(self._query, entry.request, entry.response, call) is not None:
                continue
            if entry.v >= 4:
                key = self._keys.key_of(entry.request)
                if key is None:
                    continue
                entry = CallLine(entry).keyed(key)
                db.execute(
                    "UPDATE calls SET ok = 1, sk = ?, key = ?, kf = ? WHERE seq = ?",
                    (sk_bytes(entry.sample_key), ref_int(key), bytes.fromhex(key), seq),
                )
            else:
                db.execute("UPDATE calls SET ok = 1 WHERE seq = ?", (seq,))
            if not self._bulk:
                self._count_sample(sk_bytes(entry.sample_key))
        return self._new_samples

    def _depth_of(self, parent: str | None, message: str) -> int | None:
        found = self._query.find(MSG, message)
        if not isinstance(found, Located):
            return None
        if parent is None:
            return 1
        node = self._query.find(NODE, parent)
        if not isinstance(node, Located) or node.depth is None:
            return None
        return node.depth + 1


def _held_call_row(call: PendingCall) -> tuple[Any, ...]:
    """The calls row of a held call line (its `ok` is 1: insert_held)."""
    entry, sk = call.entry, sk_bytes(call.entry.sample_key)
    return (call.line, call.off, call.length, sk, ref_int(entry.key), call.key, call.check, *_scope_of(entry))


def _scope_of(entry: CassetteEntry) -> tuple[Any, ...]:
    """The columns a miss's nearest-call search uses: role, task, trial, model, chain reference."""
    chain = entry.request.chain
    try:
        chain_r = ref_int(chain) if chain is not None else None
    except ValueError:
        chain_r = None  # not a reference at all: the call does not resolve, and is never a winner
    return entry.role, entry.task_id, entry.trial, entry.request.model, chain_r
