"""A cassette: one directory, one append-only `calls.jsonl`, looked up through an on-disk index.

Reading: `calls.jsonl` is the only source of truth; `index.py` keeps a derived SQLite index of where
each line is (beside it in `.tauproxy-index/`, ignored by git), caught up on every open and append
and rebuilt when it does not describe the file. A lookup reads just the lines it needs, so replay
time and memory depend on the calls a run uses, not on the cassette's size; what is read is kept in
small bounded caches.

Durability and locking policy:

- `record` appends one call (its new message, blob and chain node lines, then the call line) with a
  single `os.write` on a descriptor opened O_APPEND, then `os.fsync`s before returning. A call is
  therefore on disk before its response reaches the caller: a crash never loses a call that was paid
  for and used, and it can at worst cut the line being written, which readers report and skip.
- Writers hold an exclusive `filelock.FileLock` on `calls.jsonl.lock` (processes) and a
  `threading.RLock` (threads sharing one Cassette). Readers take the file lock too, so they never
  mistake a write in progress for a cut-off line; where the lock file cannot be created (a read-only
  checkout) they read without it.
- Dedup of messages, blobs and nodes is against what is on disk: under the lock, `record` first
  brings the index up to the file's current size (indexing what other writers appended), or
  rebuilds it if the file was replaced (compact, merge, prune, a git checkout: a different inode, or
  a shorter file), then writes only what the index does not hold; a call line is never written whose
  messages and chain nodes are not on disk. After the append the index catches up again.

Reading policy: chains are checked when indexed (every node's parent and message resolve, no cycles)
and walked only when a request is rebuilt (`request_of`, `message_hashes`), never by `lookup`.
Messages and blobs are read as their canonical JSON text, so `message`, `blob`, `request_of` and
`response_of` return fresh objects parsed from it: a caller may mutate them without touching the
store, and no `copy.deepcopy` is needed on the replay path. Entries returned by `lookup`, `entries`
and friends may be shared with the cache: read them, do not mutate them.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import json
import os
import shutil
import sqlite3
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock, Timeout

from tauproxy.data_model.call import Usage
from tauproxy.data_model.completion import LATENCY_DECIMALS, CallRecording
from tauproxy.data_model.key import (
    EXCLUDED_PARAMS,
    STRUCTURAL_FIELDS,
    SampleIdentity,
    blob_hash,
    canonical_json,
    canonical_message,
    canonical_request,
    message_hash,
    request_key,
)
from tauproxy.data_model.key import sample_key as make_sample_key
from tauproxy.data_model.wire import completion_body
from tauproxy.errors import CassetteError
from tauproxy.store.entry import CassetteEntry, StoredRequest, StoredResponse
from tauproxy.store.format import (
    CALLS_FILE,
    LOCK_FILE,
    CassetteProblem,
    encode_blob_text,
    encode_call,
    encode_msg_text,
    encode_node,
    node_hash,
    short_ref,
)
from tauproxy.store.index import BLOB, MSG, NODE, CassetteIndex, FileState, Located, StaleIndex, index_dir_for

_T = TypeVar("_T")

Node = tuple[str, str | None, str]  # (hash, parent, message hash)

# A replay looks each sample up about once, so few entries are kept; message and blob texts (system
# prompts, tools lists) come back call after call. Both bounded, so a long replay's memory stays flat.
ENTRY_CACHE = 256  # entries
TEXT_CACHE_CHARS = 4 << 20  # characters of message and blob text

LOCK_TIMEOUT_S = 120.0
LOCK_POLL_S = 0.002


def cassette_lock(directory: Path) -> FileLock:
    """The process-wide lock object of a cassette: one per path, re-entrant within a thread."""
    # Holds last well under a millisecond (one append and fsync), so waiters poll often.
    return FileLock(
        str(directory.resolve() / LOCK_FILE),
        timeout=LOCK_TIMEOUT_S,
        poll_interval=LOCK_POLL_S,
        is_singleton=True,
    )


@contextmanager
def locked(directory: Path, *, read_only_ok: bool = False) -> Iterator[None]:
    """Hold the cassette's file lock; `read_only_ok` proceeds unlocked where no lock file can exist."""
    lock = cassette_lock(directory)
    acquired = _acquire(lock, directory, read_only_ok)
    try:
        yield
    finally:
        if acquired:
            lock.release()


def _acquire(lock: FileLock, directory: Path, read_only_ok: bool) -> bool:
    try:
        lock.acquire()
    except Timeout:
        raise CassetteError(
            f"cassette {directory} is locked by another process for over {LOCK_TIMEOUT_S:.0f} s ({lock.lock_file})"
        ) from None
    except OSError as exc:
        if read_only_ok:
            return False
        raise CassetteError(f"cannot lock cassette {directory}: {exc.strerror or exc}") from None
    return True


def flat_wire(wire: dict[str, Any]) -> dict[str, Any]:
    """Accept canonical_request's output as well as a flat OpenAI body, and return a flat body."""
    params = wire.get("params")
    if isinstance(params, dict) and set(wire) <= {*STRUCTURAL_FIELDS, "params"}:
        return {**params, **{name: wire[name] for name in STRUCTURAL_FIELDS if name in wire}}
    return wire


def _secret_free(wire: dict[str, Any]) -> dict[str, Any]:
    # canonical_request would silently drop these; a caller that passes them has a leak elsewhere.
    leaked = sorted(name for name in wire if name in EXCLUDED_PARAMS)
    if leaked:
        raise CassetteError(
            f"refusing to record a request carrying {', '.join(leaked)}: connection settings and "
            "bookkeeping never go into a cassette (pass the request through key.canonical_request)"
        )
    return canonical_request(wire)


def _reply_of(response_body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    choices = response_body.get("choices") or []
    if not choices or not isinstance(choices[0].get("message"), dict):
        raise CassetteError("refusing to record a response without choices[0].message")
    return choices[0], canonical_message(choices[0]["message"])


def _now_iso() -> str:
    # To the second: a recording's time is for people, and a timestamp that changes on every call
    # costs bytes in git (see format.py).
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class Cassette:
    """The calls of one cassette directory, looked up through its on-disk index. Use `Cassette.open`."""

    def __init__(self, directory: Path, source: Path | None = None, index_dir: Path | None = None) -> None:
        self.directory = directory
        self.file = directory / CALLS_FILE
        self.problems: list[CassetteProblem] = []
        self._lock = threading.RLock()
        self._source = source or self.file  # what is read: the file, or a snapshot's private copy
        self._index_dir = index_dir
        self._idx: CassetteIndex | None = None
        self._fd: int | None = None
        self._samples = 0
        # Bounded caches of what was read (memory stays flat): the replay path reads the same system
        # prompt, tools and recent entries again and again. Cleared whenever the index moves.
        self._entry_cache: OrderedDict[str, CassetteEntry | None] = OrderedDict()
        self._text_cache: OrderedDict[tuple[int, str], str] = OrderedDict()
        self._text_bytes = 0
        self._snapshot = False  # built from bytes (a Ray worker's copy): never reloads, never writes

    @classmethod
    def open(cls, path: Path, create: bool = True, fresh_index: bool = False) -> Cassette:
        """Open a cassette directory (or its calls.jsonl); `create` makes an empty one if absent.

        `fresh_index` builds a private index from the file instead of trusting the cached one
        (`cassette verify`: what is on disk, nothing remembered).
        """
        path = Path(path).absolute()  # a later chdir must not move the cassette under us
        directory = path.parent if path.name == CALLS_FILE else path
        if not (directory / CALLS_FILE).exists():
            if not create:
                raise CassetteError(f"no cassette at {directory} (no {CALLS_FILE})")
            cls._create(directory)
        private = Path(tempfile.mkdtemp(prefix="tauproxy-index-")) if fresh_index else None
        if private is not None:
            atexit.register(shutil.rmtree, private, True)
        cassette = cls(directory, index_dir=private)
        cassette.reload()
        return cassette

    @classmethod
    def snapshot(cls, directory: Path, data: bytes) -> Cassette:
        """A read-only cassette from the bytes of a `calls.jsonl` (see `read_bytes`).

        Ray workers replay from this copy, shipped by the driver through the object store, so no node
        needs the cassette on a shared mount. The bytes go to a private temp file with its own index.
        `directory` only names the origin in messages; `record` and `reload` refuse, so a worker
        cannot write the cassette even by mistake.
        """
        private = Path(tempfile.mkdtemp(prefix="tauproxy-snapshot-"))
        atexit.register(shutil.rmtree, private, True)
        copy_file = private / CALLS_FILE
        copy_file.write_bytes(data)
        cassette = cls(Path(directory).absolute(), source=copy_file, index_dir=private)
        with cassette._lock:
            cassette._load_locked()
        cassette._snapshot = True
        return cassette

    def read_bytes(self) -> bytes:
        """The file's bytes as they are now, read under the lock (never a write in progress)."""
        with self._lock, locked(self.directory, read_only_ok=True):
            try:
                return self.file.read_bytes()
            except FileNotFoundError:
                return b""
            except OSError as exc:
                raise CassetteError(f"cannot read {self.file}: {exc.strerror or exc}") from None

    @staticmethod
    def _create(directory: Path) -> None:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(directory / CALLS_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.close(fd)
            fsync_dir(directory)
        except OSError as exc:
            raise CassetteError(f"cannot create cassette {directory}: {exc.strerror or exc}") from None

    def reload(self) -> None:
        """Look at the file again: index what was appended, or rebuild the index if it was replaced."""
        self._refuse_if_snapshot("reload")
        with self._lock:
            with locked(self.directory, read_only_ok=True):
                state = self._stat()  # complete bytes: writers append whole lines under this lock
            self._load_locked(state)

    def _stat(self) -> FileState | None:
        try:
            stat = os.stat(self._source)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CassetteError(f"cannot read {self._source}: {exc.strerror or exc}") from None
        return FileState(stat.st_dev, stat.st_ino, stat.st_size)

    def _load_locked(self, state: FileState | None = None) -> None:
        state = state or self._stat()
        if state is None:
            self._close_index()
            self.problems, self._samples = [], 0
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
        self._refresh_view(state.size)

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
        except (sqlite3.Error, OSError) as exc:
            os.close(fd)
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise CassetteError(f"cannot index {self.file}: {reason}") from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def close(self) -> None:
        """Release the index connection and the file descriptor (also done when garbage-collected)."""
        with self._lock:
            self._close_index()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown there may be nothing to release
            self._close_index()

    def _close_index(self) -> None:
        if self._idx is not None:
            self._idx.close()
            self._idx = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _refresh_view(self, size: int) -> None:
        self._entry_cache.clear()
        self._text_cache.clear()
        self._text_bytes = 0
        idx = self._index()
        problems = idx.problems()
        covered = idx.covered()
        if size > covered:  # a last line with no newline: cut off, or being written by another process
            problems.append(
                CassetteProblem(
                    self.file,
                    _line_count_before(idx, covered) + 1,
                    "truncated last line (a write was cut off): no newline at the end of the file",
                )
            )
        self.problems = problems
        self._samples = idx.samples()

    def _index(self) -> CassetteIndex:
        if self._idx is None:
            raise CassetteError(f"{self.file}: the cassette has no file (it was removed)")
        return self._idx

    def _read(self, action: Callable[[CassetteIndex], _T]) -> _T:
        """Run a read on the index; a stale index (the file changed under it) is rebuilt once."""
        with self._lock:
            try:
                return action(self._index())
            except (StaleIndex, sqlite3.DatabaseError):
                state = self._stat()
                self._close_index()
                if state is not None:
                    self._open_index(state, rebuild=True)  # it lied once: build it again from the file
                    self._refresh_view(state.size)
                try:
                    return action(self._index())
                except StaleIndex as exc:
                    raise CassetteError(f"{self.file}: the file changes while it is read ({exc})") from None

    # -- reading -------------------------------------------------------------------------------

    def lookup(self, sample_key: str) -> CassetteEntry | None:
        with self._lock:
            if sample_key in self._entry_cache:
                self._entry_cache.move_to_end(sample_key)
                return self._entry_cache[sample_key]
            entry = self._read(lambda idx: idx.lookup(sample_key))
            self._entry_cache[sample_key] = entry
            if len(self._entry_cache) > ENTRY_CACHE:
                self._entry_cache.popitem(last=False)
            return entry

    def _text(self, kind: int, ref: str) -> str:
        with self._lock:
            cached = self._text_cache.get((kind, ref))
            if cached is not None:
                self._text_cache.move_to_end((kind, ref))
                return cached
            text = self._read(lambda idx: idx.text_of(kind, ref))
            self._text_cache[(kind, ref)] = text
            self._text_bytes += len(text)
            while self._text_bytes > TEXT_CACHE_CHARS and len(self._text_cache) > 1:
                self._text_bytes -= len(self._text_cache.popitem(last=False)[1])
            return text

    def by_key(self, key: str) -> list[CassetteEntry]:
        """The samples of one request key, in file order."""
        return self._read(lambda idx: idx.by_key(key))

    def entries(self) -> list[CassetteEntry]:
        """The winning entry of every sample key, in file order (of the winning line)."""
        return self._read(lambda idx: list(idx.entries()))

    def iter_entries(self, only: set[str] | None = None) -> Iterator[CassetteEntry]:
        """entries() (or those whose sample key is in `only`), read one at a time: for cassettes too
        large to hold in memory. Not under the object's lock: do not record while iterating."""
        with self._lock:
            idx = self._idx
        if idx is not None:
            yield from idx.entries(only)

    def sample_keys(self) -> Iterator[str]:
        """The sample key of every entry, in file order, read from the index alone."""
        with self._lock:
            idx = self._idx
        if idx is not None:
            yield from idx.sample_keys()

    def history(self) -> list[tuple[int | None, CassetteEntry]]:
        """Every usable call line, superseded ones too, with its line number."""
        return list(self.iter_history())

    def iter_history(self) -> Iterator[tuple[int | None, CassetteEntry]]:
        with self._lock:
            idx = self._idx
        if idx is not None:
            yield from idx.history()

    def recorded_more_than_once(self) -> Iterator[tuple[str, list[tuple[int, CassetteEntry]]]]:
        """(sample key, its usable call lines with their numbers) for every sample recorded twice or more."""
        with self._lock:
            idx = self._idx
        if idx is not None:
            yield from idx.recorded_more_than_once()

    def messages_stored(self) -> int:
        return self._read(lambda idx: idx.content_count(MSG))

    def nodes_stored(self) -> int:
        return self._read(lambda idx: idx.content_count(NODE))

    def has_message(self, digest: str) -> bool:
        return self._read(lambda idx: isinstance(idx.find(MSG, digest), Located))

    def has_blob(self, digest: str) -> bool:
        return self._read(lambda idx: isinstance(idx.find(BLOB, digest), Located))

    def has_node(self, digest: str) -> bool:
        """Whether the node is stored and its whole chain resolves."""
        return self._read(lambda idx: idx.depth(digest) is not None)

    def __len__(self) -> int:
        return self._samples

    def __bool__(self) -> bool:
        # With __len__ alone an empty cassette would be falsy, and `if cassette:` would skip it.
        return True

    def is_empty(self) -> bool:
        return self._samples == 0

    def index_bytes(self) -> int:
        """Size of the index file in use (0 when held in memory)."""
        with self._lock:
            return self._idx.size_bytes() if self._idx is not None else 0

    def index_path(self) -> Path | None:
        """The index file in use (a derived cache; see index.py)."""
        return self._idx.db_path if self._idx is not None else None

    def node(self, digest: str) -> tuple[str | None, str]:
        """(parent node, message reference) of a chain node whose chain resolves."""
        found = self._read(lambda idx: idx.node(digest))
        if found is None:
            raise CassetteError(f"{self.file}: message chain node {digest[:12]} is not stored or does not resolve")
        return found[1], found[2]

    def chain(self, digest: str | None) -> list[Node]:
        """The nodes (reference, parent, message) of a chain ending in `digest`, first message first."""
        nodes: list[Node] = []
        while digest is not None:
            parent, message = self.node(digest)  # resolvable nodes have acyclic, resolvable parents
            nodes.append((digest, parent, message))
            digest = parent
        nodes.reverse()
        return nodes

    def message_hashes(self, entry: CassetteEntry) -> list[str]:
        """The references of an entry's request messages, in order, whichever form the entry uses."""
        if entry.request.messages is not None:
            return list(entry.request.messages)
        return [message for _, _, message in self.chain(entry.request.chain)]

    def message_count(self, entry: CassetteEntry) -> int:
        """len(message_hashes(entry)) without walking the chain."""
        if entry.request.messages is not None:
            return len(entry.request.messages)
        chain = entry.request.chain
        if chain is None:
            return 0
        depth = self._read(lambda idx: idx.depth(chain))
        return depth if depth is not None else len(self.chain(chain))  # the latter raises

    def request_of(self, entry: CassetteEntry) -> dict[str, Any]:
        """The canonical wire request of an entry: {model, messages, tools, tool_choice, **params}."""
        body: dict[str, Any] = {
            "model": entry.request.model,
            "messages": [self.message(digest) for digest in self.message_hashes(entry)],
        }
        if entry.request.tools is not None:
            body["tools"] = self.blob(entry.request.tools)
        if entry.request.tool_choice is not None:
            body["tool_choice"] = copy.deepcopy(entry.request.tool_choice)
        body.update(copy.deepcopy(entry.request.params))
        return body

    def response_of(self, entry: CassetteEntry) -> dict[str, Any]:
        """The chat-completions body that was recorded (tool-call arguments in canonical JSON).

        The replay hot path: no chain walk, no deepcopy; every object in it is new.
        """
        raw = entry.response.raw
        message = self.blob(raw) if raw is not None else self.message(entry.response.message)
        return _answer_body(message, entry.response, entry.usage, entry.sample_key, entry.request.model)

    @staticmethod
    def replay_form(recording: CallRecording) -> dict[str, Any]:
        """The body `response_of` will give for `recording` once recorded, without writing it."""
        choice, reply = _reply_of(recording.response_body)
        body = recording.response_body
        response = StoredResponse(
            message="",
            finish_reason=choice.get("finish_reason"),
            response_id=body.get("id"),
            response_model=body.get("model"),
            created=body.get("created"),
        )
        raw = _raw_reply(choice, reply)
        return _answer_body(
            raw if raw is not None else reply,
            response,
            recording.usage,
            recording.identity.sample_key,
            recording.wire.get("model"),
        )

    def message(self, digest: str) -> dict[str, Any]:
        """A fresh copy of a stored message."""
        message: dict[str, Any] = json.loads(self.message_text(digest))
        return message

    def message_text(self, digest: str) -> str:
        """A stored message as its canonical JSON text."""
        return self._text(MSG, digest)

    def blob(self, digest: str) -> Any:
        """A fresh copy of a stored blob."""
        return json.loads(self.blob_text(digest))

    def blob_text(self, digest: str) -> str:
        return self._text(BLOB, digest)

    # -- writing -------------------------------------------------------------------------------

    def record(self, recording: CallRecording) -> CassetteEntry:
        """Append one call durably (fsynced before return) and index it. See the module docstring."""
        self._refuse_if_snapshot("record")
        wire = flat_wire(recording.wire)
        canonical = _secret_free(wire)
        identity = recording.identity
        _check_identity(wire, identity)
        parts = _stored_parts(canonical, recording.response_body)
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
            recorded_at=_now_iso(),
        )
        with self._lock, locked(self.directory):
            return self._append_locked(entry, parts)

    def _refuse_if_snapshot(self, action: str) -> None:
        if self._snapshot:
            raise CassetteError(f"cannot {action} {self.file}: this is a read-only in-memory snapshot of it")

    def _append_locked(self, entry: CassetteEntry, parts: _Parts) -> CassetteEntry:
        try:
            fd = os.open(self.file, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise CassetteError(f"cannot open {self.file} for writing: {exc.strerror or exc}") from None
        try:
            stat = os.fstat(fd)
            # Everything before st_size is complete (we hold the lock): index it, or rebuild the index if
            # the file was replaced (compact, merge, prune, a git checkout), so that what we skip as
            # already stored really is on disk.
            self._load_locked(FileState(stat.st_dev, stat.st_ino, stat.st_size))
            idx = self._index()
            refs = _Refs(idx)
            entry = refs.resolve(entry, parts)
            lines = refs.lines(parts)
            payload = "".join([*lines, encode_call(entry)]).encode("utf-8")
            if stat.st_size and os.pread(fd, 1, stat.st_size - 1) != b"\n":
                payload = b"\n" + payload  # a crash cut the last line: never glue onto it
            _write_all(fd, payload)
            os.fsync(fd)
        except OSError as exc:
            raise CassetteError(f"cannot append to {self.file}: {exc.strerror or exc}") from None
        finally:
            os.close(fd)
        size = stat.st_size + len(payload)
        try:
            idx.sync(size)
        except (StaleIndex, sqlite3.DatabaseError):
            self._close_index()
        if self._idx is None:
            self._open_index(FileState(stat.st_dev, stat.st_ino, size))
        self._refresh_view(size)
        return entry


class _Refs:
    """The references a new call is written with, and the content lines it still needs.

    Each message, blob and node is referred to by its short reference unless the cassette already
    holds a different content under that reference (a clash, see format.py): then by its full hash.
    """

    def __init__(self, idx: CassetteIndex) -> None:
        self._idx = idx
        self.messages: list[tuple[str, str]] = []  # (reference, text) to write
        self.blobs: list[tuple[str, str]] = []
        self.nodes: list[Node] = []

    def _ref(self, kind: int, digest: str) -> tuple[str, bool]:
        """(reference to use, whether the content is already stored under it)."""
        found = self._idx.find(kind, short_ref(digest))
        if found is None:
            return short_ref(digest), False
        if isinstance(found, Located) and found.full == digest:
            return short_ref(digest), True
        full = self._idx.find(kind, digest)
        return digest, isinstance(full, Located)

    def resolve(self, entry: CassetteEntry, parts: _Parts) -> CassetteEntry:
        message_refs = []
        queued: set[str] = set()
        for digest in [*parts.message_order, parts.response.message]:
            ref, stored = self._ref(MSG, digest)
            if not stored and ref not in queued:
                queued.add(ref)
                self.messages.append((ref, parts.messages[digest]))
            message_refs.append(ref)
        reply_ref = message_refs.pop()
        blob_refs: dict[str, str] = {}
        for digest, text in parts.blobs.items():
            ref, stored = self._ref(BLOB, digest)
            if not stored:
                self.blobs.append((ref, text))
            blob_refs[digest] = ref
        nodes: list[Node] = []
        parent: str | None = None
        for message in message_refs:
            full = node_hash(parent, message)
            found = self._idx.find(NODE, short_ref(full))
            clash = found is not None and not (isinstance(found, Located) and found.full == full)
            nodes.append((full if clash else short_ref(full), parent, message))
            parent = nodes[-1][0]
        start = len(nodes)
        while start and self._idx.depth(nodes[start - 1][0]) is None:
            start -= 1  # write the nodes after the last one whose chain resolves (again, if stored broken)
        self.nodes = nodes[start:]
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
            }
        )
        return entry.model_copy(update={"request": request, "response": response})

    def lines(self, parts: _Parts) -> list[str]:
        lines = [encode_msg_text(ref, text) for ref, text in self.messages]
        lines += [encode_blob_text(ref, text) for ref, text in self.blobs]
        lines += [encode_node(parent, message) for _, parent, message in self.nodes]
        return lines


def _line_count_before(idx: CassetteIndex, covered: int) -> int:
    return idx.lines()


def _check_identity(wire: dict[str, Any], identity: SampleIdentity) -> None:
    # An entry filed under a key its request does not hash to could never be replayed.
    if request_key(wire) != identity.key:
        raise CassetteError(f"refusing to record: key {identity.key[:12]} is not the key of this request")
    scope = identity.scope
    expected = make_sample_key(identity.key, identity.seed, scope.task_id, scope.trial, identity.occurrence)
    if expected != identity.sample_key:
        raise CassetteError(
            f"refusing to record: sample key {identity.sample_key[:12]} does not match key, seed, "
            f"task {scope.task_id!r}, trial {scope.trial} and occurrence {identity.occurrence}"
        )


def _answer_body(
    message: dict[str, Any], response: StoredResponse, usage: Usage, sample_key: str, request_model: str | None
) -> dict[str, Any]:
    message.setdefault("content", None)  # canonical form drops nulls; a response body has the key
    return completion_body(
        message,
        finish_reason=response.finish_reason,
        usage=usage,
        response_id=response.response_id or f"chatcmpl-{sample_key[:24]}",
        model=response.response_model or request_model,
        created=response.created or 0,
    )


@dataclass(frozen=True)
class _Parts:
    """A call ready to append: its entry's request and reply, and the content they refer to."""

    request: StoredRequest
    response: StoredResponse
    messages: dict[str, str]  # hash -> canonical JSON text, every message of the request and the reply
    blobs: dict[str, str]  # hash -> canonical JSON text
    message_order: list[str]  # the request's message hashes, first message first


def _stored_parts(canonical: dict[str, Any], response_body: dict[str, Any]) -> _Parts:
    """The hashed request and reply, plus every message, blob and chain node they refer to."""
    choice, reply = _reply_of(response_body)
    hashes = [message_hash(m) for m in canonical["messages"]]
    messages = {digest: canonical_json(m) for digest, m in zip(hashes, canonical["messages"], strict=True)}
    reply_hash = message_hash(reply)
    messages.setdefault(reply_hash, canonical_json(reply))
    tools = canonical["tools"]
    blobs = {blob_hash(tools): canonical_json(tools)} if tools is not None else {}
    raw = _raw_reply(choice, reply)
    raw_hash = blob_hash(raw) if raw is not None else None
    if raw is not None and raw_hash is not None:
        blobs[raw_hash] = canonical_json(raw)
    request = StoredRequest(
        model=canonical["model"],
        chain=None,  # set by _Refs.resolve: the references depend on what the cassette holds
        tools=blob_hash(tools) if tools is not None else None,
        tool_choice=canonical["tool_choice"],
        params=canonical["params"],
    )
    response = StoredResponse(
        message=reply_hash,
        raw=raw_hash,
        finish_reason=choice.get("finish_reason"),
        response_id=response_body.get("id"),
        response_model=response_body.get("model"),
        created=response_body.get("created"),
    )
    return _Parts(request, response, messages, blobs, hashes)


def _raw_reply(choice: dict[str, Any], canonical: dict[str, Any]) -> dict[str, Any] | None:
    """The reply as the upstream gave it, when that is not its canonical form (None otherwise)."""
    raw = choice["message"]
    if raw == {**canonical, "content": canonical.get("content")} or raw == canonical:
        return None
    return dict(raw)


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
            Cassette._create(directory)
        with locked(directory):
            os.close(os.open(directory / CALLS_FILE, os.O_WRONLY | os.O_APPEND))
    except (CassetteError, OSError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CassetteError(f"cassette {directory} is not writable: {reason}") from None


def fsync_dir(directory: Path) -> None:
    """Make a created or renamed file's directory entry durable too."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
