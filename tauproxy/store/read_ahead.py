"""Read-ahead: the call lines that follow a looked-up one, read with it and kept for the next lookups.

A replay asks for a trial's calls in the order they were recorded, which is the order of their lines
in the file. So a lookup reads, in the same pread, the winning call lines after the one it was asked
for (at most FOLLOWING of them, within SPAN bytes), and the reader keeps their bytes here, by sample
key, with what the index says of each (the derived key and the line's check). The next lookups then
cost no index query and no read: their line is parsed and checked exactly as a line just read.

Only bytes are kept, not entries: a line nobody asks for is never parsed, and a line is checked
against its index row when it is used, as any other. The reader drops the map whenever the index
moves (a rebuild, an append seen, another process's lines indexed), as it does its other caches, so
a line kept here is always the winner its index said it was.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from tauproxy.store.entry import CassetteEntry
from tauproxy.store.index_db import StaleIndex, sk_bytes
from tauproxy.store.index_query import WINNER, IndexQuery

FOLLOWING = 8  # call lines read after the one asked for: about one conversation's next turns
SPAN = 64 << 10  # bytes one read-ahead spans at most (messages and nodes lie between call lines)
KEPT = 64  # lines kept; a replay uses each one once, soon after it was read


@dataclass(frozen=True, slots=True)
class AheadLine:
    """A winning call line read ahead: its bytes (no newline), where they are, and its index row's
    derived key `kf` and line check `lh` (None for lines before v4, which carry their key)."""

    off: int
    raw: bytes
    kf: bytes | None
    lh: int | None


class ReadAhead:
    """The call lines read ahead, by sample key: bounded, and each one taken at most once."""

    def __init__(self, limit: int = KEPT) -> None:
        self._limit = limit
        self._lines: OrderedDict[str, AheadLine] = OrderedDict()

    def __len__(self) -> int:
        return len(self._lines)

    def keep(self, lines: list[tuple[str, AheadLine]]) -> None:
        """Keep lines just read ahead (sample key, line), dropping the oldest past the bound."""
        for sample_key, line in lines:
            self._lines[sample_key] = line
            self._lines.move_to_end(sample_key)
        while len(self._lines) > self._limit:
            self._lines.popitem(last=False)

    def take(self, sample_key: str) -> AheadLine | None:
        """The line read ahead for `sample_key`, removed from the map (the entry cache keeps what it
        becomes), or None."""
        return self._lines.pop(sample_key, None)

    def clear(self) -> None:
        self._lines.clear()


def lookup_ahead(
    query: IndexQuery, sample_key: str, following: int = FOLLOWING, span: int = SPAN
) -> tuple[CassetteEntry | None, list[tuple[str, AheadLine]]]:
    """IndexQuery.lookup, and the winning call lines that follow the one found in the file (at most
    `following`, ending within `span` bytes of its start), by sample key: one index query and one
    pread for them all. Lines whose sample key this process appended since (held unindexed) are
    winners no more, and are left out."""
    pending = query.unindexed.calls.get(sk_bytes(sample_key)) if query.unindexed else None
    if pending is not None:  # appended after every indexed line: nothing indexed follows it
        return query.lookup(sample_key), []
    rows = query.db.execute(
        "SELECT off, len, sk, kf, lh FROM calls c WHERE ok = 1 AND seq >= "
        "(SELECT MAX(seq) FROM calls WHERE sk = ? AND ok = 1) AND " + WINNER + " ORDER BY seq LIMIT ?",
        (sk_bytes(sample_key), 1 + following),
    ).fetchall()
    if not rows:
        return None, []
    start, first_length, _, first_kf, first_lh = rows[0]
    end = start + first_length
    taken = 1
    for off, length, *_ in rows[1:]:
        if off < end or off + length - start > span:
            break
        end = off + length
        taken += 1
    data = query.read_line(start, end - start)
    entry = query.entry_at(start, first_length, sample_key, first_kf, first_lh, raw=data[:first_length])
    pending_calls = query.unindexed.calls
    lines = [
        (sk.hex(), AheadLine(off, data[off - start : off - start + length], kf, lh))
        for off, length, sk, kf, lh in rows[1:taken]
        if sk not in pending_calls
    ]
    return entry, lines


def entry_ahead(query: IndexQuery, sample_key: str, line: AheadLine) -> CassetteEntry | None:
    """The entry of a call line read ahead for `sample_key`, checked as a line just read is; one
    that is not what the index says is looked up again (which rebuilds the index if it lied)."""
    try:
        return query.entry_at(line.off, len(line.raw), sample_key, line.kf, line.lh, raw=line.raw)
    except StaleIndex:
        return query.lookup(sample_key)
