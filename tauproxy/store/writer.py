"""Writing a cassette: calls appended durably, with only the content the cassette lacks.

Durability and locking policy:

- `record` appends one call (its new message, blob and chain node lines, then the call line) with
  an `os.write` on a descriptor opened O_APPEND, and returns only after an `os.fsync` that covers
  it: a call is on disk before its response reaches the caller, so a crash never loses a call that
  was paid for and used, and it can at worst cut the line being written, which readers report and
  skip.
- Group commit (group_commit.py): calls recorded while an fsync runs queue up, and the next commit
  appends them all in one `os.write` under one hold of the locks, then fsyncs once; every caller of
  that batch returns after that fsync. So N concurrent writers cost about one fsync per batch rather
  than N, and a lone writer is a batch of one, as fast as before. The fsync runs after the locks are
  released (the descriptor stays open): other threads look calls up meanwhile (serve answers hits on
  its event loop), and another process may append, whose own fsync flushes the file again. The next
  batch waits for this fsync, so one is in progress at a time.
- Writers hold the cassette's file lock (processes; locking.py) and the IndexedFile's RLock (threads)
  while they append and index.
- Dedup of messages, blobs and nodes is against what is on disk: under the lock, a commit first
  brings the index up to the file's current size (indexing what other writers appended), or
  rebuilds it if the file was replaced (compact, merge, prune, a git checkout: a different inode, or
  a shorter file), then writes only what the index does not hold; a call line is never written whose
  messages and chain nodes are not in the file. A call also dedups against the calls before it in
  its batch (`BatchQuery`), so content two of them bring is written once. When the file is as this
  process's last append left it (IndexedFile.unchanged), that catch-up is skipped: nothing else was
  appended since.
- After the append the lines are held beside the index, not indexed (index_pending.py): lookups and
  the next batch's dedup see them, and the index takes them every so many calls in one transaction,
  from what the writer holds, without reading or parsing them again or deriving their keys.
- Cost per call: the request is canonicalised and each message encoded once (stored_parts; its key
  is checked from those texts); the index is asked about a batch's references in one query per
  kind.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from tauproxy.data_model.completion import LATENCY_DECIMALS, CallRecording
from tauproxy.errors import CassetteError
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.format import (
    CALLS_FILE,
    REF_LEN,
    BlobLine,
    MsgLine,
    NodeLine,
    encode_blob_text,
    encode_call,
    encode_msg_text,
    encode_node,
    node_hash,
    ref_matches,
    short_ref,
)
from tauproxy.store.group_commit import GroupCommit
from tauproxy.store.index import FileState
from tauproxy.store.index_db import BLOB, MSG, NODE, Located
from tauproxy.store.index_pending import AppendedLine, KeyedCall
from tauproxy.store.index_query import IndexQuery
from tauproxy.store.indexed_file import IndexedFile
from tauproxy.store.locking import locked
from tauproxy.store.wire_form import StoredParts, check_identity, flat_wire, now_iso, secret_free_texts, stored_parts

Node = tuple[str, str | None, str]  # (hash, parent, message hash)


class CassetteWriter:
    """The write side of one cassette (see the module docstring)."""

    def __init__(self, file: IndexedFile) -> None:
        self._file = file
        self._group: GroupCommit[tuple[CassetteEntry, StoredParts], CassetteEntry] = GroupCommit(self._commit)

    @property
    def commits(self) -> int:
        """How many commits (fsyncs) this writer made: fewer than its calls when they came at once."""
        return self._group.batches

    def record(self, recording: CallRecording) -> CassetteEntry:
        """Append one call durably (fsynced before return) and index it. See the module docstring."""
        self._file.refuse_if_snapshot("record")
        return self._group.submit(self._prepared(recording))

    def record_all(self, recordings: Sequence[CallRecording]) -> list[CassetteEntry]:
        """Append several calls durably in one commit (one write, one fsync), in order; as `record`."""
        self._file.refuse_if_snapshot("record")
        if not recordings:
            return []
        return self._group.submit_all([self._prepared(recording) for recording in recordings])

    def _prepared(self, recording: CallRecording) -> tuple[CassetteEntry, StoredParts]:
        """The call's entry and stored parts: checked and built by its caller, outside every lock."""
        wire = flat_wire(recording.wire)
        canonical, texts = secret_free_texts(wire)
        identity = recording.identity
        parts = stored_parts(canonical, recording.response_body, recording.raw_body, recording.content_type, texts)
        check_identity(parts.key, identity)
        entry = CassetteEntry(
            key=identity.key,
            sample_key=identity.sample_key,
            task_id=identity.scope.task_id,
            trial=identity.scope.trial,
            occurrence=identity.occurrence,
            seed=identity.seed,
            role=recording.role,
            call_index=recording.call_index,
            request=parts.request,
            response=parts.response,
            usage=recording.usage,
            cost_usd=recording.cost_usd,
            price_source=recording.price_source,
            latency_s=round(recording.latency_s, LATENCY_DECIMALS),  # as CallRecording.of rounds it
            recorded_at=now_iso(),
        )
        return entry, parts

    def _commit(self, batch: Sequence[tuple[CassetteEntry, StoredParts]]) -> list[CassetteEntry]:
        """Append every call of `batch` in one write, index them, then fsync once (module docstring)."""
        file = self._file.file
        with self._file.lock, locked(self._file.directory):
            # Opened under the lock: a file replaced before it (a rewrite's rename) is the one written.
            try:
                fd = os.open(file, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as exc:
                raise CassetteError(f"cannot open {file} for writing: {exc.strerror or exc}") from None
            try:
                written = self._append_locked(fd, batch)
            except OSError as exc:
                os.close(fd)
                raise CassetteError(f"cannot append to {file}: {exc.strerror or exc}") from None
            except BaseException:
                os.close(fd)
                raise
        try:
            os.fsync(fd)  # outside the locks: lookups and other processes go on meanwhile
        except OSError as exc:
            raise CassetteError(f"cannot append to {file}: {exc.strerror or exc}") from None
        finally:
            os.close(fd)
        return written

    def _append_locked(self, fd: int, batch: Sequence[tuple[CassetteEntry, StoredParts]]) -> list[CassetteEntry]:
        stat = os.fstat(fd)
        if not self._file.unchanged(stat):
            # Everything before st_size is complete (we hold the lock): index it, or rebuild the index
            # if the file was replaced (compact, merge, prune, a git checkout), so that what we skip as
            # already stored really is on disk. Unchanged since our last append: all of it is known.
            self._file.load_locked(FileState(stat.st_dev, stat.st_ino, stat.st_size))
        # Each call of the batch dedups against the file and against the calls before it in the batch.
        pending = BatchQuery(self._file.index().query)
        pending.prefetch([parts for _, parts in batch])
        written: list[CassetteEntry] = []
        lines: list[tuple[bytes, AppendedLine]] = []  # each line with its newline, as the index reads it
        hold = True
        for entry, parts in batch:
            refs = Refs(pending)
            written.append(refs.resolve(entry, parts))
            lines += refs.content_lines(parts)
            line = encode_call(written[-1]).encode("utf-8")
            lines.append((line, KeyedCall(written[-1])))
            pending.add(refs)
            hold = hold and not refs.clashed
        payload = b"".join(raw for raw, _ in lines)
        start = stat.st_size
        if stat.st_size and os.pread(fd, 1, stat.st_size - 1) != b"\n":
            payload = b"\n" + payload  # a crash cut the last line: never glue onto it
            start, hold = start + 1, False
        _write_all(fd, payload)
        # Indexed from the file as any append is, later (index_pending.py), and without parsing again
        # the lines just made.
        self._file.appended(start, lines, os.fstat(fd), hold)
        return written


class BatchQuery:
    """The index's `find` and `depth`, plus the content lines that calls earlier in the same batch
    will write (not in the file yet): so a message two calls of one batch bring is written once.

    What the file holds under a reference comes first, exactly as the index says; a reference only
    this batch uses answers with the content queued under it. A queued node counts as resolving
    (its chain is written before it in the same write).
    """

    def __init__(self, query: IndexQuery) -> None:
        self._query = query
        self._queued: dict[tuple[int, str], Located] = {}
        # What the index answered, by (kind, reference): the file is locked and the index caught up
        # for the whole batch, so an answer (a miss too) holds until the append.
        self._stored: dict[tuple[int, str], Located | str | None] = {}

    def prefetch(self, batch: Sequence[StoredParts]) -> None:
        """Ask the index about every short reference `batch` will look up, one query per kind,
        instead of one query per message, blob and node (a reference named otherwise, as after a
        clash, is still asked on its own)."""
        wanted: dict[int, set[str]] = {MSG: set(), BLOB: set(), NODE: set()}
        for parts in batch:
            messages = [short_ref(digest) for digest in [*parts.message_order, parts.response.message]]
            wanted[MSG].update(messages)
            wanted[BLOB].update(short_ref(digest) for digest in parts.blobs)
            parent: str | None = None
            for message in messages[:-1]:
                parent = short_ref(node_hash(parent, message))
                wanted[NODE].add(parent)
        for kind, refs in wanted.items():
            for ref, found in self._query.find_many(kind, refs).items():
                self._stored[(kind, ref)] = found

    def find(self, kind: int, ref: str) -> Located | str | None:
        if (kind, ref) in self._stored:
            found = self._stored[(kind, ref)]
        else:
            found = self._stored[(kind, ref)] = self._query.find(kind, ref)
        if found is not None:
            return found
        queued = self._queued.get((kind, ref))
        if queued is None and len(ref) > REF_LEN:  # a full reference names content queued under its short one
            queued = self._queued.get((kind, ref[:REF_LEN]))
            if queued is not None and not ref_matches(queued.full, ref):
                queued = None
        return queued

    def depth(self, ref: str) -> int | None:
        found = self.find(NODE, ref)
        return found.depth if isinstance(found, Located) else None

    def add(self, refs: Refs) -> None:
        """Queue what one call of the batch writes."""
        for kind, ref, full in refs.new_content:
            self._queued[(kind, ref)] = Located(full, -1, 0, 0)
        for ref, parent, message, full in refs.new_nodes:
            # depth 1 stands for "resolves": only whether it is known is ever read in a batch
            self._queued[(NODE, ref)] = Located(full, -1, 0, 0, parent, message, 1)


class Refs:
    """The references a new call is written with, and the content lines it still needs.

    Each message, blob and node is referred to by its short reference unless the cassette already
    holds a different content under that reference (a clash, see format.py): then by its full hash.
    """

    def __init__(self, query: IndexQuery | BatchQuery) -> None:
        self._query = query
        self.nodes: list[Node] = []  # to write
        self.new_content: list[tuple[int, str, str]] = []  # (kind, reference, full hash) of what is written
        self.new_nodes: list[tuple[str, str | None, str, str]] = []  # (reference, parent, message, full hash)

    def _ref(self, kind: int, digest: str) -> tuple[str, bool]:
        """(reference to use, whether the content is already stored under it)."""
        found = self._query.find(kind, short_ref(digest))
        if found is None:
            return short_ref(digest), False
        if isinstance(found, Located) and found.full == digest:
            return short_ref(digest), True
        full = self._query.find(kind, digest)
        return digest, isinstance(full, Located)

    def resolve(self, entry: CassetteEntry, parts: StoredParts) -> CassetteEntry:
        message_refs = []
        queued: set[str] = set()
        for digest in [*parts.message_order, parts.response.message]:
            ref, stored = self._ref(MSG, digest)
            if not stored and ref not in queued:
                queued.add(ref)
                self.new_content.append((MSG, ref, digest))
            message_refs.append(ref)
        reply_ref = message_refs.pop()
        blob_refs: dict[str, str] = {}
        for digest in parts.blobs:
            ref, stored = self._ref(BLOB, digest)
            if not stored:
                self.new_content.append((BLOB, ref, digest))
            blob_refs[digest] = ref
        nodes: list[Node] = []
        fulls: list[str] = []
        parent: str | None = None
        for message in message_refs:
            full = node_hash(parent, message)
            found = self._query.find(NODE, short_ref(full))
            clash = found is not None and not (isinstance(found, Located) and found.full == full)
            nodes.append((full if clash else short_ref(full), parent, message))
            fulls.append(full)
            parent = nodes[-1][0]
        start = len(nodes)
        while start and self._query.depth(nodes[start - 1][0]) is None:
            start -= 1  # write the nodes after the last one whose chain resolves (again, if stored broken)
        self.nodes = nodes[start:]
        self.new_nodes = [
            (ref, parent, message, full) for (ref, parent, message), full in zip(self.nodes, fulls[start:], strict=True)
        ]
        request = parts.request.model_copy(
            update={
                "chain": nodes[-1][0] if nodes else None,
                "tools": blob_refs.get(parts.request.tools) if parts.request.tools is not None else None,
            }
        )
        response = parts.response.model_copy(
            update={
                "message": reply_ref,
                "raw": blob_refs.get(parts.response.raw) if parts.response.raw is not None else None,
                "body": blob_refs.get(parts.response.body) if parts.response.body is not None else None,
            }
        )
        return entry.model_copy(update={"request": request, "response": response})

    @property
    def clashed(self) -> bool:
        """Whether any line is written under a full reference (a clash, see format.py)."""
        return any(len(ref) > REF_LEN for _, ref, _ in self.new_content) or any(
            len(ref) > REF_LEN for ref, _, _, _ in self.new_nodes
        )

    def content_lines(self, parts: StoredParts) -> list[tuple[bytes, AppendedLine]]:
        """The message, blob and node lines to write before the call line, in order, each with its
        newline and as parse_line reads it: the full hash of each text, and the text; each node's
        full hash (resolve made it from the same references the line holds), its parent and message."""
        found: list[tuple[bytes, AppendedLine]] = []
        for kind, ref, full in self.new_content:
            if kind == MSG:
                text = parts.messages[full]
                found.append((encode_msg_text(ref, text).encode("utf-8"), MsgLine(full, text)))
            else:
                text = parts.blobs[full]
                found.append((encode_blob_text(ref, text).encode("utf-8"), BlobLine(full, text)))
        for _, parent, message, full in self.new_nodes:
            found.append((encode_node(parent, message).encode("utf-8"), NodeLine(full, parent, message)))
        return found


def _write_all(fd: int, data: bytes) -> None:
    # One os.write does it on a regular file; the loop only matters on a short write (disk nearly
    # full), and the file lock keeps other writers from interleaving meanwhile.
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def check_writable(directory: Path) -> None:
    """Raise a one-line CassetteError now if calls could not be appended to the cassette at
    `directory` (created if absent), without reading it.

    Checked before a run that may go live, so an unwritable cassette (read-only mount, no
    permission) is one line before the first trial, not a paid answer that cannot be kept.
    """
    directory = Path(directory).absolute()
    try:
        if not (directory / CALLS_FILE).exists():
            IndexedFile.create(directory)
        with locked(directory):
            os.close(os.open(directory / CALLS_FILE, os.O_WRONLY | os.O_APPEND))
    except (CassetteError, OSError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CassetteError(f"cassette {directory} is not writable: {reason}") from None
