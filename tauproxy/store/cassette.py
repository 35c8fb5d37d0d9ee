"""A cassette: one directory, one append-only `calls.jsonl`, read once into memory.

Durability and locking policy:

- `record` appends one call (its new message, blob and chain node lines, then the call line) with a
  single `os.write` on a descriptor opened O_APPEND, then `os.fsync`s before returning. A call is
  therefore on disk before its response reaches the caller: a crash never loses a call that was paid
  for and used, and it can at worst cut the line being written, which readers report and skip.
- Writers hold an exclusive `filelock.FileLock` on `calls.jsonl.lock` (processes) and a
  `threading.RLock` (threads sharing one Cassette). Readers take the file lock too, so they never
  mistake a write in progress for a cut-off line; where the lock file cannot be created (a read-only
  checkout) they read without it.
- Dedup of messages, blobs and nodes is against what this object knows is on disk: what it loaded
  plus what it wrote. Other processes may have written the same line since; writing it again is
  harmless (readers tolerate identical duplicates) and cheaper than re-reading the file under the
  lock. If the file was replaced (compact, merge, prune, a git checkout: a different inode, or a
  shorter file), what we loaded no longer describes the disk, so `record` re-reads it under the lock
  before writing; a call line is never written whose messages and chain nodes are not on disk.

Reading policy: chains are checked once at load (every node's parent and message resolve, no cycles)
and walked only when a request is rebuilt (`request_of`, `message_hashes`), never by `lookup`.
Messages and blobs are kept as their canonical JSON text, so `message`, `blob`, `request_of` and
`response_of` return fresh objects parsed from it: a caller may mutate them without touching the
store, and no `copy.deepcopy` is needed on the replay path. Entries returned by `lookup`, `entries`
and friends are the indexed objects themselves: read them, do not mutate them.
"""

from __future__ import annotations

import copy
import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from tauproxy.data_model.call import Usage
from tauproxy.data_model.completion import CallRecording
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
    BlobLine,
    CassetteProblem,
    MsgLine,
    NodeLine,
    ScanResult,
    chain_nodes,
    encode_blob_text,
    encode_call,
    encode_msg_text,
    encode_node,
    scan_bytes,
    scan_file,
)

Node = tuple[str, str | None, str]  # (hash, parent, message hash)

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
            f"cassette {directory} is locked by another process for over {LOCK_TIMEOUT_S:.0f} s "
            f"({lock.lock_file})"
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
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Cassette:
    """The calls of one cassette directory, indexed in memory. Use `Cassette.open`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.file = directory / CALLS_FILE
        self.problems: list[CassetteProblem] = []
        self._lock = threading.RLock()
        self._messages: dict[str, str] = {}  # hash -> canonical JSON text
        self._blobs: dict[str, str] = {}  # hash -> canonical JSON text
        self._nodes: dict[str, tuple[str | None, str]] = {}  # hash -> (parent, message hash)
        self._depth: dict[str, int] = {}  # node hash -> messages in its chain, for nodes that resolve
        self._by_sample: dict[str, CassetteEntry] = {}
        self._by_key: dict[str, list[CassetteEntry]] = {}
        self._history: list[tuple[int | None, CassetteEntry]] = []
        self._identity: tuple[int, int] | None = None
        self._size = 0
        self._snapshot = False  # built from bytes (a Ray worker's copy): never reloads, never writes

    @classmethod
    def open(cls, path: Path, create: bool = True) -> Cassette:
        """Read a cassette directory (or its calls.jsonl) once; `create` makes an empty one if absent."""
        path = Path(path).absolute()  # a later chdir must not move the cassette under us
        directory = path.parent if path.name == CALLS_FILE else path
        if not (directory / CALLS_FILE).exists():
            if not create:
                raise CassetteError(f"no cassette at {directory} (no {CALLS_FILE})")
            cls._create(directory)
        cassette = cls(directory)
        cassette.reload()
        return cassette

    @classmethod
    def snapshot(cls, directory: Path, data: bytes) -> Cassette:
        """A read-only cassette from the bytes of a `calls.jsonl` (see `read_bytes`), indexed in memory.

        Ray workers replay from this copy, shipped by the driver through the object store, so no node
        needs the cassette on a shared mount. `directory` only names the origin in messages; `record`
        and `reload` refuse, so a worker cannot write the cassette even by mistake.
        """
        cassette = cls(Path(directory).absolute())
        cassette._snapshot = True
        cassette._index(scan_bytes(cassette.file, data))
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
        """Forget what is in memory and read the file again."""
        self._refuse_if_snapshot("reload")
        with self._lock, locked(self.directory, read_only_ok=True):
            self._load_locked()

    def _load_locked(self) -> None:
        # Identity first: if the file is replaced before the read, the next record re-reads (harmless).
        try:
            stat = os.stat(self.file)
            self._identity = (stat.st_dev, stat.st_ino)
        except FileNotFoundError:
            self._identity = None
        self._index(scan_file(self.file))

    def _index(self, scan: ScanResult) -> None:
        messages: dict[str, str] = {}
        blobs: dict[str, str] = {}
        nodes: dict[str, tuple[str | None, str]] = {}
        node_lines: dict[str, int] = {}
        calls: list[tuple[int, CassetteEntry]] = []
        for number, line in scan.lines:
            if isinstance(line, MsgLine):
                messages[line.hash] = line.text
            elif isinstance(line, NodeLine):
                nodes[line.hash] = (line.parent, line.message)
                node_lines.setdefault(line.hash, number)
            elif isinstance(line, BlobLine):
                blobs[line.hash] = line.text
            else:
                calls.append((number, line))
        problems = list(scan.problems)
        self._messages, self._blobs, self._nodes, self._size = messages, blobs, nodes, scan.size
        self._depth, broken, causes = _resolve_chains(nodes, messages)
        # Each break is reported once, where it is; the nodes after it are not, the calls using it are.
        problems += [CassetteProblem(self.file, node_lines[node], reason) for node, reason in causes.items()]
        self._by_sample, self._by_key, self._history = {}, {}, []
        for number, entry in calls:
            missing = self._missing_refs(entry, broken, causes)
            if missing:
                problems.append(CassetteProblem(self.file, number, missing))
            else:
                self._add(number, entry)
        self.problems = sorted(problems, key=lambda problem: problem.line)

    def _missing_refs(
        self, entry: CassetteEntry, broken: dict[str, str], causes: dict[str, str]
    ) -> str | None:
        call = f"call {entry.sample_key[:12]}"
        chain = entry.request.chain
        if chain is not None and chain not in self._depth:
            if chain not in self._nodes:
                return f"{call} refers to message chain node {chain[:12]}, which is not stored"
            return f"{call} refers to message chain node {chain[:12]}, which does not resolve ({causes[broken[chain]]})"
        for digest in [*(entry.request.messages or []), entry.response.message]:
            if digest not in self._messages:
                return f"{call} refers to message {digest[:12]}, which is not stored"
        tools = entry.request.tools
        if tools is not None and tools not in self._blobs:
            return f"{call} refers to tools blob {tools[:12]}, which is not stored"
        raw = entry.response.raw
        if raw is not None and raw not in self._blobs:
            return f"{call} refers to response blob {raw[:12]}, which is not stored"
        return None

    def _add(self, number: int | None, entry: CassetteEntry) -> None:
        # Last line wins: re-inserting moves the sample to the end, so entries() stays in file order.
        previous = self._by_sample.pop(entry.sample_key, None)
        if previous is not None:
            self._by_key[previous.key].remove(previous)
        self._by_sample[entry.sample_key] = entry
        self._by_key.setdefault(entry.key, []).append(entry)
        self._history.append((number, entry))

    # -- reading -------------------------------------------------------------------------------

    def lookup(self, sample_key: str) -> CassetteEntry | None:
        return self._by_sample.get(sample_key)

    def by_key(self, key: str) -> list[CassetteEntry]:
        """The samples of one request key, in file order."""
        return list(self._by_key.get(key, []))

    def entries(self) -> list[CassetteEntry]:
        """The winning entry of every sample key, in file order (of the winning line)."""
        return list(self._by_sample.values())

    def history(self) -> list[tuple[int | None, CassetteEntry]]:
        """Every usable call line, superseded ones too, with its line number (None: written since load)."""
        return list(self._history)

    def messages_stored(self) -> int:
        return len(self._messages)

    def nodes_stored(self) -> int:
        return len(self._nodes)

    def has_message(self, digest: str) -> bool:
        return digest in self._messages

    def has_blob(self, digest: str) -> bool:
        return digest in self._blobs

    def has_node(self, digest: str) -> bool:
        """Whether the node is stored and its whole chain resolves."""
        return digest in self._depth

    def __len__(self) -> int:
        return len(self._by_sample)

    def __bool__(self) -> bool:
        # With __len__ alone an empty cassette would be falsy, and `if cassette:` would skip it.
        return True

    def is_empty(self) -> bool:
        return not self._by_sample

    def node(self, digest: str) -> tuple[str | None, str]:
        """(parent node, message hash) of a chain node whose chain resolves."""
        if digest not in self._depth:
            raise CassetteError(f"{self.file}: message chain node {digest[:12]} is not stored or does not resolve")
        return self._nodes[digest]

    def chain(self, digest: str | None) -> list[Node]:
        """The nodes (hash, parent, message) of a chain ending in `digest`, first message first."""
        nodes: list[Node] = []
        while digest is not None:
            parent, message = self.node(digest)  # resolvable nodes have acyclic, resolvable parents
            nodes.append((digest, parent, message))
            digest = parent
        nodes.reverse()
        return nodes

    def message_hashes(self, entry: CassetteEntry) -> list[str]:
        """The hashes of an entry's request messages, in order, whichever form the entry uses."""
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
        return self._depth[chain] if chain in self._depth else len(self.chain(chain))  # the latter raises

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
            message="", finish_reason=choice.get("finish_reason"), response_id=body.get("id"),
            response_model=body.get("model"), created=body.get("created"),
        )
        raw = _raw_reply(choice, reply)
        return _answer_body(raw if raw is not None else reply, response, recording.usage,
                            recording.identity.sample_key, recording.wire.get("model"))

    def message(self, digest: str) -> dict[str, Any]:
        """A fresh copy of a stored message."""
        message: dict[str, Any] = json.loads(self.message_text(digest))
        return message

    def message_text(self, digest: str) -> str:
        """A stored message as its canonical JSON text."""
        try:
            return self._messages[digest]
        except KeyError:
            raise CassetteError(f"{self.file}: message {digest[:12]} is not stored") from None

    def blob(self, digest: str) -> Any:
        """A fresh copy of a stored blob."""
        return json.loads(self.blob_text(digest))

    def blob_text(self, digest: str) -> str:
        try:
            return self._blobs[digest]
        except KeyError:
            raise CassetteError(f"{self.file}: blob {digest[:12]} is not stored") from None

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
            latency_s=recording.latency_s,
            recorded_at=_now_iso(),
        )
        with self._lock, locked(self.directory):
            self._append_locked(entry, parts)
        return entry

    def _refuse_if_snapshot(self, action: str) -> None:
        if self._snapshot:
            raise CassetteError(f"cannot {action} {self.file}: this is a read-only in-memory snapshot of it")

    def _append_locked(self, entry: CassetteEntry, parts: _Parts) -> None:
        try:
            fd = os.open(self.file, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise CassetteError(f"cannot open {self.file} for writing: {exc.strerror or exc}") from None
        try:
            stat = os.fstat(fd)
            if (stat.st_dev, stat.st_ino) != self._identity or stat.st_size < self._size:
                self._load_locked()  # the file was replaced: what we knew is on disk may not be
            new_nodes = self._unknown_suffix(parts.nodes)
            wanted = [message for _, _, message in new_nodes] + [entry.response.message]
            new_messages = {h: parts.messages[h] for h in wanted if h not in self._messages}
            new_blobs = {h: v for h, v in parts.blobs.items() if h not in self._blobs}
            lines = [encode_msg_text(h, text) for h, text in new_messages.items()]
            lines += [encode_blob_text(h, text) for h, text in new_blobs.items()]
            lines += [encode_node(*node) for node in new_nodes]
            payload = "".join([*lines, encode_call(entry)]).encode("utf-8")
            if stat.st_size and os.pread(fd, 1, stat.st_size - 1) != b"\n":
                payload = b"\n" + payload  # a crash cut the last line: never glue onto it
            _write_all(fd, payload)
            os.fsync(fd)
        except OSError as exc:
            raise CassetteError(f"cannot append to {self.file}: {exc.strerror or exc}") from None
        finally:
            os.close(fd)
        self._size = stat.st_size + len(payload)
        self._messages.update(new_messages)
        self._blobs.update(new_blobs)
        for digest, parent, message in new_nodes:
            self._nodes[digest] = (parent, message)
            self._depth[digest] = (self._depth[parent] if parent is not None else 0) + 1
        self._add(None, entry)

    def _unknown_suffix(self, nodes: list[Node]) -> list[Node]:
        """The nodes of a chain after its last one known to resolve here (whose ancestors all do)."""
        start = len(nodes)
        while start and nodes[start - 1][0] not in self._depth:
            start -= 1
        return nodes[start:]


def _resolve_chains(
    nodes: dict[str, tuple[str | None, str]], messages: dict[str, str]
) -> tuple[dict[str, int], dict[str, str], dict[str, str]]:
    """Which nodes resolve, and why the others do not.

    A node resolves when its message is stored and its parent is null or resolves. Returns the depth
    (messages in its chain) of every node that resolves; for every other node, the node where its
    chain breaks; and for each such break, the reason. Each node is visited once, iteratively (chains
    can be thousands of nodes long); a cycle, impossible with honest hashes, is caught, not looped on.
    """
    depth: dict[str, int] = {}
    broken: dict[str, str] = {}  # node -> the node where its chain breaks
    causes: dict[str, str] = {}  # breaking node -> why
    for start in nodes:
        path: list[str] = []  # nodes visited from `start` toward the root, not yet settled
        on_path: set[str] = set()
        digest: str | None = start
        base, cause = 0, None
        while digest is not None:
            if digest in depth:
                base = depth[digest]
                break
            if digest in broken:
                cause = broken[digest]
                break
            parent, message = nodes[digest]
            if digest in on_path:
                cause = digest
                causes[digest] = f"node {digest[:12]} is part of a cycle"
                break
            path.append(digest)
            on_path.add(digest)
            if message not in messages:
                cause = digest
                causes[digest] = f"node {digest[:12]} refers to message {message[:12]}, which is not stored"
                break
            if parent is not None and parent not in nodes:
                cause = digest
                causes[digest] = f"node {digest[:12]} refers to parent node {parent[:12]}, which is not stored"
                break
            digest = parent
        if cause is None:
            for node in reversed(path):
                base += 1
                depth[node] = base
        else:
            broken.update(dict.fromkeys(path, cause))
    return depth, broken, causes


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
    nodes: list[Node]  # the request's whole chain, first message first


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
    nodes = chain_nodes(hashes)
    request = StoredRequest(
        model=canonical["model"],
        chain=nodes[-1][0] if nodes else None,
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
    return _Parts(request, response, messages, blobs, nodes)


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
