"""Reading a cassette's index: content by reference, calls by sample key, key and scope.

Every read is checked against the file (see index.py): a line that is not what the index says raises
StaleIndex, and the cassette rebuilds the index. Not thread-safe: the cassette serialises calls.
"""

from __future__ import annotations

import os
import sqlite3
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path

from tauproxy.errors import CassetteError
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.format import (
    REF_LEN,
    BlobLine,
    CallLine,
    MsgLine,
    parse_keyed_call,
    parse_line,
    ref_matches,
    text_as_written,
)
from tauproxy.store.index_db import (
    AMBIGUOUS,
    BLOB,
    KIND_NAME,
    NODE,
    Located,
    StaleIndex,
    line_check,
    ref_int,
    sk_bytes,
    stream_rows,
)
from tauproxy.store.index_pending import Unindexed

RECENT = 20_000  # resolved references remembered (bounded, so memory stays flat)
# A replay miss ranks at most this many recorded calls to find the nearest one: those sharing the
# most of its message chain, then its task and trial, then its model, the latest first.
NEAR_LIMIT = 256
_MANY = 500  # references asked in one query by find_many (under SQLite's 999 parameters)
# The winning line of each sample key (the last usable one).
WINNER = "seq = (SELECT MAX(seq) FROM calls d WHERE d.sk = c.sk AND d.ok = 1)"


class IndexQuery:
    """Queries over one index file of one version (inode) of a calls.jsonl."""

    def __init__(self, calls_file: Path, fd: int, db: sqlite3.Connection) -> None:
        self.calls_file = calls_file
        self.fd = fd  # the inode this index describes: pread sees it even after a rename over its path
        self.db = db
        self.recent: OrderedDict[tuple[int, str], Located] = OrderedDict()
        self.clashed: set[tuple[int, int]] = set(db.execute("SELECT DISTINCT kind, r FROM clash").fetchall())
        # Content indexed but not yet inserted, by (kind, short reference): the builder fills it.
        self.unflushed: dict[tuple[int, str], Located] = {}
        # Lines this process appended that are not indexed yet (index_pending.py), seen by `find` and
        # `lookup`; a read that scans the index calls `catch_up` first, which indexes them.
        self.unindexed = Unindexed()
        self.catch_up: Callable[[], None] = _nothing_to_catch_up

    def _complete(self) -> None:
        """Before a read that scans the index: index what this process appended (index_pending.py)."""
        if self.unindexed:
            self.catch_up()

    def remember(self, key: tuple[int, str], found: Located) -> None:
        self.recent[key] = found
        if len(self.recent) > RECENT:
            self.recent.popitem(last=False)

    def find(self, kind: int, ref: str) -> Located | str | None:
        """The content `ref` names: Located, AMBIGUOUS (two contents share it), or None (not stored)."""
        if len(ref) < REF_LEN:
            return None
        memo = self.recent.get((kind, ref))
        if memo is not None:
            return memo
        if not self.clashed or (kind, ref_int(ref)) not in self.clashed:
            fresh = self.unflushed.get((kind, ref[:REF_LEN])) or self.unindexed.content.get((kind, ref[:REF_LEN]))
            if fresh is not None and (len(ref) == REF_LEN or ref_matches(fresh.full, ref)):
                return fresh  # otherwise it may be stored (a clash that _flush has yet to see)
        r = ref_int(ref)
        sql = "SELECT full, off, len, line, parent, message, depth FROM {} WHERE kind = ? AND r = ?"
        rows = self.db.execute(sql.format("content"), (kind, r)).fetchall()
        if (kind, r) in self.clashed:
            rows += self.db.execute(sql.format("clash"), (kind, r)).fetchall()
        matches = [Located(row[0].hex(), *row[1:]) for row in rows if ref_matches(row[0].hex(), ref)]
        if not matches:
            return None
        if len(matches) > 1:
            return AMBIGUOUS
        found = matches[0]
        if found.depth is not None:
            self.remember((kind, ref), found)
        return found

    def find_many(self, kind: int, refs: Collection[str]) -> dict[str, Located | str | None]:
        """`find` of each short reference in `refs` (REF_LEN digits), with one query for all of those
        that are neither remembered nor clashed (those take `find`'s own path)."""
        found: dict[str, Located | str | None] = {}
        asked: dict[int, str] = {}
        for ref in refs:
            if len(ref) != REF_LEN or (self.clashed and (kind, ref_int(ref)) in self.clashed):
                found[ref] = self.find(kind, ref)
            elif (known := self._known(kind, ref)) is not None:
                found[ref] = known
            else:
                asked[ref_int(ref)] = ref
                found[ref] = None  # unless a row says otherwise, below
        for start in range(0, len(asked), _MANY):
            part = list(asked)[start : start + _MANY]
            rows = self.db.execute(
                "SELECT full, off, len, line, parent, message, depth, r FROM content "
                f"WHERE kind = ? AND r IN ({','.join('?' * len(part))})",
                (kind, *part),
            ).fetchall()
            for row in rows:
                ref = asked[row[7]]
                full = row[0].hex()
                if ref_matches(full, ref):  # (content holds one row per reference: no clash here)
                    located = Located(full, *row[1:7])
                    found[ref] = located
                    if located.depth is not None:
                        self.remember((kind, ref), located)
        return found

    def _known(self, kind: int, ref: str) -> Located | None:
        """Content found without a query: remembered, indexed but not inserted, or appended unindexed."""
        key = (kind, ref)
        return self.recent.get(key) or self.unflushed.get(key) or self.unindexed.content.get(key)

    def read_line(self, off: int, length: int) -> bytes:
        return os.pread(self.fd, length, off)

    def entry_at(
        self, off: int, length: int, sample_key: str, kf: bytes | None, lh: int | None, raw: bytes | None = None
    ) -> CassetteEntry:
        """The call line at `off` (`raw`: its bytes, when read already), checked to be the one
        indexed for `sample_key`.

        A v1-v3 line carries its key, and the sample key derived from it must be `sample_key`; a v4
        line must be byte for byte the line its key `kf` and its sample key were derived from (`lh`),
        and is then parsed and validated in one step with both (format.parse_keyed_call), unless
        it takes parse_line's path (a line that one does not read).
        """
        if raw is None:
            raw = self.read_line(off, length)
        if kf is not None and lh == line_check(raw):
            keyed = parse_keyed_call(raw, kf.hex(), sample_key)  # the index's, derived from these bytes
            if keyed is not None:
                return keyed
        try:
            line = parse_line(raw)
        except ValueError:
            raise StaleIndex(f"no call line at byte {off}") from None
        if isinstance(line, CallLine):
            if kf is None or lh != line_check(raw):
                raise StaleIndex(f"the call line at byte {off} is not the one indexed")
            line = line.keyed(kf.hex())
        if not isinstance(line, CassetteEntry) or line.sample_key != sample_key:
            raise StaleIndex(f"no call line for {sample_key} at byte {off}")
        return line

    def unresolved_at(self, off: int, length: int) -> tuple[CassetteEntry, str]:
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
        pending = self.unindexed.calls.get(sk_bytes(sample_key)) if self.unindexed else None
        if pending is not None:  # appended after every indexed line: the winner
            return self.entry_at(pending.off, pending.length, sample_key, pending.key, pending.check)
        row = self.db.execute(
            "SELECT off, len, kf, lh FROM calls WHERE sk = ? AND ok = 1 ORDER BY seq DESC LIMIT 1",
            (sk_bytes(sample_key),),
        ).fetchone()
        return None if row is None else self.entry_at(row[0], row[1], sample_key, row[2], row[3])

    def _winners(
        self, where: str = "", args: tuple[int, ...] = (), only: set[bytes] | None = None
    ) -> Iterator[tuple[int, CassetteEntry]]:
        self._complete()
        rows = self.db.execute(
            "SELECT line, off, len, sk, kf, lh FROM calls c WHERE ok = 1 " + where + " AND " + WINNER + " ORDER BY seq",
            args,
        )
        for line, off, length, sk, kf, lh in rows.fetchall() if args else stream_rows(rows):
            if only is not None and sk not in only:
                continue  # filtered before the line is read and parsed
            yield line, self.entry_at(off, length, sk.hex(), kf, lh)

    def entries(self, only: set[str] | None = None) -> Iterator[CassetteEntry]:
        """The winning entry of every sample key (or of those in `only`), in file order, one at a time."""
        for _, entry in self._winners(only=None if only is None else {sk_bytes(key) for key in only}):
            yield entry

    def sample_keys(self) -> Iterator[str]:
        """The sample key of every winning entry, in file order, without reading the file."""
        self._complete()
        rows = self.db.execute("SELECT sk FROM calls c WHERE ok = 1 AND " + WINNER + " ORDER BY seq")
        for (sk,) in stream_rows(rows):
            yield sk.hex()

    def by_key(self, key: str) -> list[CassetteEntry]:
        return [entry for _, entry in self._winners("AND key = ?", (ref_int(key),)) if entry.key == key]

    def meta(self, name: str) -> int:
        return int(self.db.execute("SELECT v FROM meta WHERE k = ?", (name,)).fetchone()[0])

    def samples(self) -> int:
        """How many sample keys can be replayed."""
        return self.meta("samples")

    def lines(self) -> int:
        """How many complete lines are covered."""
        return self.meta("lines")

    def content_count(self, kind: int) -> int:
        self._complete()
        return int(self.db.execute("SELECT COUNT(*) FROM content WHERE kind = ?", (kind,)).fetchone()[0])

    def _find_each(self, wanted: Sequence[tuple[int, str]]) -> list[Located | str | None]:
        """`find` of each (kind, reference), with one query for all of those that are neither
        remembered nor clashed nor shorter than REF_LEN (those take `find`'s own path): a replayed
        hit's reply and raw body in one query rather than two."""
        found: list[Located | str | None] = []
        asked: dict[tuple[int, int], list[int]] = {}  # (kind, r) -> where in `found`
        for kind, ref in wanted:
            if len(ref) != REF_LEN or (self.clashed and (kind, ref_int(ref)) in self.clashed):
                found.append(self.find(kind, ref))
                continue
            known = self._known(kind, ref)
            if known is None:
                asked.setdefault((kind, ref_int(ref)), []).append(len(found))
            found.append(known)  # None unless a row says otherwise, below
        if asked:
            rows = self.db.execute(
                "SELECT full, off, len, line, parent, message, depth, kind, r FROM content WHERE "
                + " OR ".join(["(kind = ? AND r = ?)"] * len(asked)),
                [part for pair in asked for part in pair],
            ).fetchall()
            for row in rows:
                full = row[0].hex()
                for at in asked[(row[7], row[8])]:
                    kind, ref = wanted[at]
                    if ref_matches(full, ref):  # (content holds one row per reference: no clash here)
                        located = Located(full, *row[1:7])
                        found[at] = located
                        if located.depth is not None:
                            self.remember((kind, ref), located)
        return found

    def texts_of(self, wanted: Sequence[tuple[int, str]]) -> list[str]:
        """The canonical JSON text of each message or blob (kind, reference), checked against its
        hash; those no memo knows are found with one query (`_find_each`)."""
        found = self._find_each(wanted)
        return [self._text_at(kind, ref, where) for (kind, ref), where in zip(wanted, found, strict=True)]

    def _text_at(self, kind: int, ref: str, found: Located | str | None) -> str:
        """The text of the content `ref` names, where `find` found it (or did not)."""
        if not isinstance(found, Located):
            state = "names two different contents" if found == AMBIGUOUS else "is not stored"
            raise CassetteError(f"{self.calls_file}: {KIND_NAME[kind]} {ref[:12]} {state}")
        raw = self.read_line(found.off, found.length)
        text = text_as_written(raw, kind == BLOB, found.full)
        if text is not None:
            return text
        try:
            line = parse_line(raw)
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

    def covered(self) -> int:
        """How many bytes of the file are indexed (up to the end of the last complete line)."""
        return self.meta("covered")

    def near(
        self, role: str | None, task_id: str, trial: int, model: str | None, chain: list[str]
    ) -> list[CassetteEntry]:
        """The winning calls a missed request most likely meant (of `role`, or of any role if None):
        at most NEAR_LIMIT, those whose chain is one of `chain` (the request's own chain nodes) first,
        then those of the same task and trial, then of the same model, the latest first; returned in
        file order. Only the rows chosen are read from the file."""
        self._complete()
        on_chain = ",".join("?" * len(chain)) or "NULL"
        rows = self.db.execute(
            "SELECT * FROM (SELECT seq, off, len, sk, kf, lh FROM calls c WHERE ok = 1 AND "
            + ("role = ? AND " if role is not None else "")
            + WINNER
            + f" ORDER BY chain IN ({on_chain}) DESC, (task = ? AND trial = ?) DESC, model IS ? DESC, seq DESC"
            " LIMIT ?) ORDER BY seq",
            (
                *([role] if role is not None else []),
                *(ref_int(ref) for ref in chain),
                task_id,
                trial,
                model,
                NEAR_LIMIT,
            ),
        ).fetchall()
        return [self.entry_at(off, length, sk.hex(), kf, lh) for _, off, length, sk, kf, lh in rows]

    def has_calls_in(self, task_id: str, trial: int) -> bool:
        """Whether any usable call was recorded in this task and trial."""
        self._complete()
        sql = "SELECT 1 FROM calls WHERE ok = 1 AND task = ? AND trial = ? LIMIT 1"
        return self.db.execute(sql, (task_id, trial)).fetchone() is not None


def _nothing_to_catch_up() -> None:
    """The catch-up of an index no cassette has taken: nothing is ever appended through it."""
