"""A cassette: one directory, one append-only `calls.jsonl`, read once into memory.

Durability and locking policy:

- `record` appends one call (its new message and blob lines plus the call line) with a single
  `os.write` on a descriptor opened O_APPEND, then `os.fsync`s before returning. A call is therefore
  on disk before its response reaches the caller: a crash never loses a call that was paid for and
  used, and it can at worst cut the line being written, which readers report and skip.
- Writers hold an exclusive `filelock.FileLock` on `calls.jsonl.lock` (processes) and a
  `threading.RLock` (threads sharing one Cassette). Readers take the file lock too, so they never
  mistake a write in progress for a cut-off line; where the lock file cannot be created (a read-only
  checkout) they read without it.
- Dedup of messages is against what this object knows is on disk: what it loaded plus what it wrote.
  Other processes may have written the same message since; writing it again is harmless (readers
  tolerate identical duplicates) and cheaper than re-reading the file under the lock. If the file was
  replaced (compact, merge, prune, a git checkout: a different inode, or a shorter file), what we
  loaded no longer describes the disk, so `record` re-reads it under the lock before writing; a call
  line is never written whose messages are not on disk.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from tauproxy.data_model.call import CallRole, Usage
from tauproxy.errors import CassetteError
from tauproxy.proxy.key import (
    EXCLUDED_PARAMS,
    STRUCTURAL_FIELDS,
    blob_hash,
    canonical_message,
    canonical_request,
    message_hash,
    request_key,
)
from tauproxy.proxy.key import sample_key as make_sample_key
from tauproxy.proxy.wire import usage_to_wire
from tauproxy.store.entry import CassetteEntry, StoredRequest, StoredResponse
from tauproxy.store.format import (
    CALLS_FILE,
    LOCK_FILE,
    CassetteProblem,
    MsgLine,
    ScanResult,
    encode_blob,
    encode_call,
    encode_msg,
    scan_file,
)

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
        self._messages: dict[str, dict[str, Any]] = {}
        self._blobs: dict[str, Any] = {}
        self._by_sample: dict[str, CassetteEntry] = {}
        self._by_key: dict[str, list[CassetteEntry]] = {}
        self._history: list[tuple[int | None, CassetteEntry]] = []
        self._identity: tuple[int, int] | None = None
        self._size = 0

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
        messages: dict[str, dict[str, Any]] = {}
        blobs: dict[str, Any] = {}
        calls: list[tuple[int, CassetteEntry]] = []
        for number, line in scan.lines:
            if isinstance(line, MsgLine):
                messages[line.hash] = line.message
            elif isinstance(line, CassetteEntry):
                calls.append((number, line))
            else:
                blobs[line.hash] = line.value
        problems = list(scan.problems)
        self._messages, self._blobs, self._size = messages, blobs, scan.size
        self._by_sample, self._by_key, self._history = {}, {}, []
        for number, entry in calls:
            missing = self._missing_refs(entry)
            if missing:
                problems.append(CassetteProblem(self.file, number, missing))
            else:
                self._add(number, entry)
        self.problems = sorted(problems, key=lambda problem: problem.line)

    def _missing_refs(self, entry: CassetteEntry) -> str | None:
        for digest in entry.message_refs():
            if digest not in self._messages:
                return f"call {entry.sample_key[:12]} refers to message {digest[:12]}, which is not stored"
        tools = entry.request.tools
        if tools is not None and tools not in self._blobs:
            return f"call {entry.sample_key[:12]} refers to tools blob {tools[:12]}, which is not stored"
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

    def has_message(self, digest: str) -> bool:
        return digest in self._messages

    def has_blob(self, digest: str) -> bool:
        return digest in self._blobs

    def __len__(self) -> int:
        return len(self._by_sample)

    def __bool__(self) -> bool:
        # With __len__ alone an empty cassette would be falsy, and `if cassette:` would skip it.
        return True

    def is_empty(self) -> bool:
        return not self._by_sample

    def request_of(self, entry: CassetteEntry) -> dict[str, Any]:
        """The canonical wire request of an entry: {model, messages, tools, tool_choice, **params}."""
        body: dict[str, Any] = {
            "model": entry.request.model,
            "messages": [self.message(digest) for digest in entry.request.messages],
        }
        if entry.request.tools is not None:
            body["tools"] = self.blob(entry.request.tools)
        if entry.request.tool_choice is not None:
            body["tool_choice"] = copy.deepcopy(entry.request.tool_choice)
        body.update(copy.deepcopy(entry.request.params))
        return body

    def response_of(self, entry: CassetteEntry) -> dict[str, Any]:
        """The chat-completions body that was recorded (tool-call arguments in canonical JSON)."""
        message = self.message(entry.response.message)
        message.setdefault("content", None)  # canonical form drops nulls; a response body has the key
        return {
            "id": entry.response.response_id or f"chatcmpl-{entry.sample_key[:24]}",
            "object": "chat.completion",
            "created": entry.response.created or 0,
            "model": entry.response.response_model or entry.request.model,
            "choices": [{"index": 0, "message": message, "finish_reason": entry.response.finish_reason}],
            "usage": usage_to_wire(entry.usage),
        }

    def message(self, digest: str) -> dict[str, Any]:
        try:
            return copy.deepcopy(self._messages[digest])
        except KeyError:
            raise CassetteError(f"{self.file}: message {digest[:12]} is not stored") from None

    def blob(self, digest: str) -> Any:
        try:
            return copy.deepcopy(self._blobs[digest])
        except KeyError:
            raise CassetteError(f"{self.file}: blob {digest[:12]} is not stored") from None

    # -- writing -------------------------------------------------------------------------------

    def record(
        self,
        *,
        wire_request: dict[str, Any],
        response_body: dict[str, Any],
        key: str,
        sample_key: str,
        task_id: str,
        trial: int,
        occurrence: int,
        seed: int | None,
        role: CallRole,
        call_index: int,
        usage: Usage,
        cost_usd: float | None,
        price_source: str | None,
        latency_s: float,
    ) -> CassetteEntry:
        """Append one call durably (fsynced before return) and index it. See the module docstring."""
        wire = flat_wire(wire_request)
        canonical = _secret_free(wire)
        _check_keys(wire, key, sample_key, seed, task_id, trial, occurrence)
        request, response, messages, blobs = _stored_parts(canonical, response_body)
        entry = CassetteEntry(
            key=key,
            sample_key=sample_key,
            task_id=task_id,
            trial=trial,
            occurrence=occurrence,
            seed=seed,
            role=role,
            call_index=call_index,
            request=request,
            response=response,
            usage=usage,
            cost_usd=cost_usd,
            price_source=price_source,
            latency_s=latency_s,
            recorded_at=_now_iso(),
        )
        with self._lock, locked(self.directory):
            self._append_locked(entry, messages, blobs)
        return entry

    def _append_locked(
        self, entry: CassetteEntry, messages: dict[str, dict[str, Any]], blobs: dict[str, Any]
    ) -> None:
        try:
            fd = os.open(self.file, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise CassetteError(f"cannot open {self.file} for writing: {exc.strerror or exc}") from None
        try:
            stat = os.fstat(fd)
            if (stat.st_dev, stat.st_ino) != self._identity or stat.st_size < self._size:
                self._load_locked()  # the file was replaced: what we knew is on disk may not be
            new_messages = {h: m for h, m in messages.items() if h not in self._messages}
            new_blobs = {h: v for h, v in blobs.items() if h not in self._blobs}
            lines = [encode_msg(h, m) for h, m in new_messages.items()]
            lines += [encode_blob(h, v) for h, v in new_blobs.items()]
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
        self._add(None, entry)


def _check_keys(
    wire: dict[str, Any],
    key: str,
    sample_key: str,
    seed: int | None,
    task_id: str,
    trial: int,
    occurrence: int,
) -> None:
    # An entry filed under a key its request does not hash to could never be replayed.
    if request_key(wire) != key:
        raise CassetteError(f"refusing to record: key {key[:12]} is not the key of this request")
    if make_sample_key(key, seed, task_id, trial, occurrence) != sample_key:
        raise CassetteError(
            f"refusing to record: sample key {sample_key[:12]} does not match key, seed, "
            f"task {task_id!r}, trial {trial} and occurrence {occurrence}"
        )


def _stored_parts(
    canonical: dict[str, Any], response_body: dict[str, Any]
) -> tuple[StoredRequest, StoredResponse, dict[str, dict[str, Any]], dict[str, Any]]:
    """The hashed request and reply, plus every message and blob they refer to, by hash."""
    choice, reply = _reply_of(response_body)
    messages = {message_hash(m): m for m in canonical["messages"]}
    messages.setdefault(message_hash(reply), reply)
    tools = canonical["tools"]
    blobs = {blob_hash(tools): tools} if tools is not None else {}
    request = StoredRequest(
        model=canonical["model"],
        messages=[message_hash(m) for m in canonical["messages"]],
        tools=next(iter(blobs), None),
        tool_choice=canonical["tool_choice"],
        params=canonical["params"],
    )
    response = StoredResponse(
        message=message_hash(reply),
        finish_reason=choice.get("finish_reason"),
        response_id=response_body.get("id"),
        response_model=response_body.get("model"),
        created=response_body.get("created"),
    )
    return request, response, messages, blobs


def _write_all(fd: int, data: bytes) -> None:
    # One os.write does it on a regular file; the loop only matters on a short write (disk nearly
    # full), and the file lock keeps other writers from interleaving meanwhile.
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_dir(directory: Path) -> None:
    """Make a created or renamed file's directory entry durable too."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
