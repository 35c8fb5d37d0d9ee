"""Rewriting a cassette's file with chosen entries, in the current format: what compact, prune and
merge share.

The new file is written beside the old one, fsynced, and renamed over it, so a reader sees the old
file or the new one, never a half-written one, and a writer that loaded the old file notices the
new inode and re-reads before appending. The caller holds the cassette's file lock.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tauproxy.errors import CassetteError
from tauproxy.store.cassette import Cassette
from tauproxy.store.entry import ENTRY_VERSION, CassetteEntry
from tauproxy.store.format import (
    REWRITE_PREFIX,
    REWRITE_SUFFIX,
    encode_blob_text,
    encode_call,
    encode_msg_text,
    encode_node,
    node_hash,
    short_ref,
)
from tauproxy.store.locking import fsync_dir, private_dir


@dataclass
class RewriteResult:
    """What a rewrite did: entries kept, lines before and after, damaged lines dropped."""

    entries: int
    lines_before: int
    lines_after: int
    dropped_bad: int = 0
    added: int = 0
    replaced: int = 0
    removed: int = 0


class _SpillMap:
    """A str -> str map that keeps at most `limit` items in memory and the rest in a temp SQLite file,
    so rewriting a cassette of millions of calls needs bounded memory. Keys are set once."""

    def __init__(self, directory: Path, limit: int = 200_000) -> None:
        self._memory: dict[str, str] = {}
        self._directory, self._limit = directory, limit
        self._db: sqlite3.Connection | None = None

    def get(self, key: str) -> str | None:
        value = self._memory.get(key)
        if value is not None or self._db is None:
            return value
        row = self._db.execute("SELECT v FROM m WHERE k = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __setitem__(self, key: str, value: str) -> None:
        self._memory[key] = value
        if len(self._memory) > self._limit:
            if self._db is None:
                self._db = sqlite3.connect(str(self._directory / "rewrite.sqlite"), isolation_level=None)
                self._db.executescript(
                    "PRAGMA synchronous = OFF; PRAGMA journal_mode = OFF; "
                    "CREATE TABLE m (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID;"
                )
            self._db.executemany("INSERT OR REPLACE INTO m VALUES (?, ?)", self._memory.items())
            self._memory.clear()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


class _Rewriter:
    """Lines of a current-format cassette holding the given entries: each entry's new messages, blobs
    and chain nodes right before its call line, each written once, under its short reference (its
    full hash when another content of the output has that short reference: see format.py).

    Only what the entries reach is written, so superseded calls and what only they used are dropped.
    Older entries are rewritten in the current format. The lines are produced one at a time (a
    cassette can be far larger than memory); what was written is remembered by reference.

    A clash is only seen when its second content comes, after the first was referred to by the short
    reference both share, which the output would then hold as ambiguous. So `clashed` collects the
    short references that clashed, and the caller writes the output again with every content under
    them (`full`) referred to by its full hash. Clashes are rare: a second pass almost never runs.
    """

    def __init__(self, scratch: Path, full: frozenset[str] = frozenset()) -> None:
        # "KIND SHORT" -> full hash written under SHORT; "SOURCE REF" -> node reference written for the
        # node REF of source SOURCE. Both bounded in memory (see _SpillMap).
        self.written = _SpillMap(scratch)
        self.count = 0
        self.full = full
        self.clashed: set[str] = set()

    def _ref(self, kind: str, full: str) -> tuple[str, bool]:
        """(reference to write, whether it is new)."""
        short = short_ref(full)
        if f"{kind} {short}" in self.full:
            fresh = f"{kind} {full}" not in self.written
            self.written[f"{kind} {full}"] = full
            return full, fresh
        known = self.written.get(f"{kind} {short}")
        if known is None:
            self.written[f"{kind} {short}"] = full
            return short, True
        if known == full:
            return short, False
        self.clashed.add(f"{kind} {short}")
        fresh = f"{kind} {full}" not in self.written
        self.written[f"{kind} {full}"] = full  # a clash of short references in the output: full hash
        return full, fresh

    def _content(self, kind: str, text: str) -> tuple[str, str | None]:
        full = hashlib.sha256(text.encode()).hexdigest()
        ref, new = self._ref(kind, full)
        if not new:
            return ref, None
        return ref, (encode_msg_text(ref, text) if kind == "msg" else encode_blob_text(ref, text))

    def _node(self, parent: str | None, message: str) -> tuple[str, str | None]:
        ref, new = self._ref("node", node_hash(parent, message))
        return ref, (encode_node(parent, message) if new else None)

    def lines(self, sources: Iterable[tuple[Cassette, CassetteEntry]]) -> Iterator[str]:
        source_ids: dict[int, int] = {}
        for cassette, entry in sources:
            source = source_ids.setdefault(id(cassette), len(source_ids))
            out: list[str] = []
            if entry.request.messages is not None:  # v1: a listed message per message
                steps: list[tuple[str | None, str]] = [(None, digest) for digest in entry.request.messages]
                parent: str | None = None
            else:
                steps, parent = self._unwritten_chain(cassette, source, entry.request.chain)
            for node_in, message in steps:
                ref, line = self._content("msg", cassette.reader.message_text(message))
                out += [line] if line else []
                parent, node_line = self._node(parent, ref)
                out += [node_line] if node_line else []
                if node_in is not None and parent is not None:
                    self.written[f"{source} {node_in}"] = parent
            reply, line = self._content("msg", cassette.reader.message_text(entry.response.message))
            out += [line] if line else []
            blobs: dict[str, str | None] = {}
            for blob in (entry.request.tools, entry.response.raw, entry.response.body):
                if blob is not None:
                    blobs[blob], line = self._content("blob", cassette.reader.blob_text(blob))
                    out += [line] if line else []
            request = entry.request.model_copy(
                update={
                    "messages": None,
                    "chain": parent,
                    "tools": blobs.get(entry.request.tools) if entry.request.tools else None,
                }
            )
            response = entry.response.model_copy(
                update={
                    "message": reply,
                    "raw": blobs.get(entry.response.raw) if entry.response.raw else None,
                    "body": blobs.get(entry.response.body) if entry.response.body else None,
                }
            )
            out.append(
                encode_call(entry.model_copy(update={"v": ENTRY_VERSION, "request": request, "response": response}))
            )
            self.count += len(out)
            yield "".join(out)

    def _unwritten_chain(
        self, cassette: Cassette, source: int, digest: str | None
    ) -> tuple[list[tuple[str | None, str]], str | None]:
        """The (node, message) steps of a chain after its last node already written, and that node's
        written reference (None: nothing written yet)."""
        steps: list[tuple[str | None, str]] = []
        written: str | None = None
        while digest is not None:
            written = self.written.get(f"{source} {digest}")
            if written is not None:
                break
            parent, message = cassette.reader.node(digest)
            steps.append((digest, message))
            digest = parent
        steps.reverse()
        return steps, written


def _write_beside(target: Path, lines: Iterable[str]) -> Path:
    """Write `lines` to a temp file in the cassette's private directory (git ignores it; a killed
    rewrite's file is removed on the next open: locking.remove_leftovers) and fsync it; the caller
    renames it over `target`, on the same file system."""
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
    try:
        fd, temp = tempfile.mkstemp(dir=private_dir(target.parent), prefix=REWRITE_PREFIX, suffix=REWRITE_SUFFIX)
    except OSError as exc:
        raise CassetteError(f"cannot rewrite {target}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as handle:
            for line in lines:
                handle.write(line.encode("utf-8"))
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
    except OSError as exc:
        Path(temp).unlink(missing_ok=True)
        raise CassetteError(f"cannot rewrite {target}: {exc.strerror or exc}") from None
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return Path(temp)


def _publish(temp: Path, target: Path) -> None:
    """Rename the finished temp file over `target` and make that durable."""
    try:
        os.replace(temp, target)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise CassetteError(f"cannot rewrite {target}: {exc.strerror or exc}") from None
    fsync_dir(target.parent)


def _line_count(path: Path) -> int:
    if not path.exists():
        return 0
    count = 0
    with path.open("rb") as handle:
        for raw in handle:
            count += bool(raw.strip())
    return count


def rewrite(cassette: Cassette, sources: Callable[[], Iterable[tuple[Cassette, CassetteEntry]]]) -> RewriteResult:
    """Rewrite the cassette's file with the entries `sources()` yields (called again for a second pass)."""
    before = _line_count(cassette.file)
    entries = 0

    def counted() -> Iterator[tuple[Cassette, CassetteEntry]]:
        nonlocal entries
        entries = 0
        for source in sources():
            entries += 1
            yield source

    full: frozenset[str] = frozenset()
    while True:
        with tempfile.TemporaryDirectory(prefix="tauproxy-rewrite-") as scratch:
            rewriter = _Rewriter(Path(scratch), full)
            try:
                temp = _write_beside(cassette.file, rewriter.lines(counted()))
            finally:
                rewriter.written.close()
        if not rewriter.clashed:
            break
        temp.unlink()
        # Again with those under their full hash (nodes over them then hash anew, and may clash anew).
        full |= rewriter.clashed
    _publish(temp, cassette.file)
    return RewriteResult(
        entries=entries,
        lines_before=before,
        lines_after=rewriter.count,
        dropped_bad=len(cassette.problems),
    )
