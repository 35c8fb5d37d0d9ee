"""What this process appended to calls.jsonl that its index does not hold yet.

The index is a cache of the file (index.py): a call is durable once its line is fsynced, whether or
not the index has caught up. So a writer does not bring the index up to each append (one SQLite
transaction per call): it keeps what it appended here, and the index catches up with all of it in
one transaction every so many calls, before any read that scans the index, before another writer's
lines are indexed, and on close (indexed_file.py says when). A kill before then loses nothing: the
next open indexes the file from the bytes the index covers, these lines too.

Until then these lines are seen as the index's own: `IndexQuery.find` answers their content (so the
next append dedups against it, and a lookup reads it) and `IndexQuery.lookup` their calls by sample
key (so a call recorded moments before is found). The run is contiguous: it starts where the
index's covered bytes end and holds every line up to `end`, none of another writer's (the writer
checks, under the file lock, that the file is as it left it, and catches the index up first if not).
Catching up inserts their rows from what is held here, without reading the file
(IndexBuilder.insert_held); when the index no longer covers exactly the bytes before them (another
process indexed some), they are read back from the file instead, matched by their bytes to what was
written, so neither parsed nor hashed again, nor their keys derived.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from tauproxy.store.entry import CassetteEntry
from tauproxy.store.format import REF_LEN, MsgLine, NodeLine, WrittenLine
from tauproxy.store.index_db import BLOB, MSG, NODE, Located, line_check, sk_bytes

# The index catches up once this many calls, or bytes, are held here: memory stays bounded, and a
# process that reads the index (or opens the cassette anew) has little to index itself.
MAX_CALLS = 128
MAX_BYTES = 8 << 20


class KeyedCall(NamedTuple):
    """A v4 call line this process appended, with the request key it was recorded under (checked
    against its request before it was written: wire_form.check_identity)."""

    entry: CassetteEntry


AppendedLine = WrittenLine | KeyedCall


class PendingCall(NamedTuple):
    """Where a call line not yet indexed is, and what its index row would check it by."""

    off: int
    length: int
    key: bytes  # the full request key (the index's `kf`)
    check: int  # index_db.line_check of its bytes (the index's `lh`)
    line: int
    entry: CassetteEntry


class Unindexed:
    """The lines appended since the index last caught up (module docstring). Not thread-safe: the
    cassette serialises calls."""

    def __init__(self) -> None:
        self.appended: list[tuple[bytes, AppendedLine]] = []  # every line, with its newline, in file order
        self.content: dict[tuple[int, str], Located] = {}  # by (kind, short reference)
        self.calls: dict[bytes, PendingCall] = {}  # by sample key: the last line of each wins, as in the index
        self.call_lines: list[PendingCall] = []  # every call line, in file order
        self.start = 0  # where the first of them begins: the bytes the index covered then
        self.lines_before = 0  # the file's lines before them
        self.end = 0  # the file's size after the last of them
        self.line_count = 0  # the file's lines up to `end`
        self.resolved = True  # every node held resolves (its depth is known): IndexBuilder.insert_held
        self.call_count = 0
        self.size = 0  # bytes held

    def __bool__(self) -> bool:
        return bool(self.appended)

    def lines(self) -> dict[bytes, AppendedLine]:
        """The lines by their bytes (no newline), as IndexBuilder.sync matches what it reads: made only
        when they are read back from the file (IndexBuilder.insert_held could not take them)."""
        return {raw[:-1]: line for raw, line in self.appended}

    def full(self) -> bool:
        """Whether the index should catch up now rather than hold more."""
        return self.call_count >= MAX_CALLS or self.size >= MAX_BYTES

    def clear(self) -> None:
        self.appended.clear()
        self.content.clear()
        self.calls.clear()
        self.call_lines.clear()
        self.start = self.lines_before = self.end = self.line_count = self.call_count = self.size = 0
        self.resolved = True

    def add(
        self,
        start: int,
        lines_before: Callable[[], int],
        appended: Sequence[tuple[bytes, AppendedLine]],
        depth_of: Callable[[str], int | None],
    ) -> None:
        """Hold the lines of one append, written at byte `start` in file order (each with its newline).

        `lines_before`: how many lines the file had before them (asked only when this run begins);
        `depth_of`: a chain node's depth, by reference (the index's, or one held here)."""
        if not self.appended:
            self.start, self.lines_before = start, lines_before()
            self.line_count = self.lines_before
        off = start
        for raw, line in appended:
            self.line_count += 1
            self.appended.append((raw, line))
            length = len(raw) - 1
            if isinstance(line, KeyedCall):
                entry = line.entry
                call = PendingCall(off, length, bytes.fromhex(entry.key), line_check(raw[:-1]), self.line_count, entry)
                self.calls[sk_bytes(entry.sample_key)] = call
                self.call_lines.append(call)
                self.call_count += 1
            elif isinstance(line, NodeLine):
                parent = depth_of(line.parent) if line.parent is not None else 0
                depth = parent + 1 if parent is not None else None
                self.resolved = self.resolved and depth is not None
                located = Located(line.hash, off, length, self.line_count, line.parent, line.message, depth)
                self.content[(NODE, line.hash[:REF_LEN])] = located
            else:  # a message or a blob
                kind = MSG if isinstance(line, MsgLine) else BLOB
                located = Located(line.hash, off, length, self.line_count, None, None, 0)  # as the index has it
                self.content[(kind, line.hash[:REF_LEN])] = located
            off += len(raw)
            self.size += len(raw)
        self.end = off
