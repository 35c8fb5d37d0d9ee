"""A cassette: one directory, one append-only `calls.jsonl`, looked up through an on-disk index.

`calls.jsonl` is the only source of truth; index.py keeps a derived SQLite index of where each line
is (beside it in `.tauproxy-index/`, ignored by git, with the lock and any rewrite in progress),
caught up on every open and before every append (a writer's own appends reach it lazily:
index_pending.py) and rebuilt when it does not describe the file.

`Cassette` is the small front most callers need. Its parts, each with one job:

    indexed_file.py  the file and its index kept in step: open, reload, snapshot, close
    reader.py        lookup, request_of, response_of, the content an entry refers to
    writer.py        record: one call appended durably (its durability and locking policy)
    inspection.py    every call line, samples recorded twice, what is stored
    locking.py       the file lock shared by readers, writers and maintenance

`cassette.reader`, `cassette.writer` and `cassette.inspector` give the parts themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tauproxy.data_model.completion import CallRecording
from tauproxy.errors import CassetteError
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.format import CALLS_FILE, CassetteProblem
from tauproxy.store.indexed_file import IndexedFile
from tauproxy.store.inspection import CassetteInspector
from tauproxy.store.locking import remove_leftovers
from tauproxy.store.reader import CassetteReader
from tauproxy.store.temp_dirs import owned_temp_dir, release
from tauproxy.store.writer import CassetteWriter, check_writable

__all__ = ["Cassette", "check_writable"]


class Cassette:
    """The calls of one cassette directory, looked up through its on-disk index. Use `Cassette.open`."""

    def __init__(self, file: IndexedFile, temp_dir: Path | None = None) -> None:
        self._file = file
        self._temp_dir = temp_dir  # a private index or snapshot's directory, removed on close
        self.reader = CassetteReader(file)
        self.writer = CassetteWriter(file)
        self.inspector = CassetteInspector(file)

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
            IndexedFile.create(directory)
        remove_leftovers(directory)  # a killed rewrite's temp file, an older version's lock file
        # Not "tauproxy-index-": that is the per-user index directory of read-only cassettes (index_db.py).
        private = owned_temp_dir("tauproxy-fresh-index-") if fresh_index else None
        file = IndexedFile(directory, index_dir=private)
        file.reload()
        return cls(file, private)

    @classmethod
    def snapshot(cls, directory: Path, data: bytes) -> Cassette:
        """A read-only cassette from the bytes of a `calls.jsonl` (see `read_bytes`).

        Ray workers replay from this copy, shipped by the driver through the object store, so no node
        needs the cassette on a shared mount. The bytes go to a private temp file with its own index.
        `directory` only names the origin in messages; `record` and `reload` refuse, so a worker
        cannot write the cassette even by mistake.
        """
        private = owned_temp_dir("tauproxy-snapshot-")
        copy_file = private / CALLS_FILE
        copy_file.write_bytes(data)
        file = IndexedFile(Path(directory).absolute(), source=copy_file, index_dir=private)
        with file.lock:
            file.load_locked()
        file.snapshot = True
        return cls(file, private)

    @property
    def directory(self) -> Path:
        return self._file.directory

    @property
    def file(self) -> Path:
        return self._file.file

    @property
    def problems(self) -> list[CassetteProblem]:
        """The lines that could not be used, as of the last look at the file."""
        return self._file.problems

    def read_bytes(self) -> bytes:
        """The file's bytes as they are now, read under the lock (never a write in progress)."""
        return self._file.read_bytes()

    def reload(self) -> None:
        """Look at the file again: index what was appended, or rebuild the index if it was replaced."""
        self._file.reload()

    def close(self) -> None:
        """Release the index connection and the file descriptor (also done when garbage-collected), and
        remove a private index's or snapshot's directory (temp_dirs.py)."""
        self._file.close()
        if self._temp_dir is not None:
            release(self._temp_dir)

    def record(self, recording: CallRecording) -> CassetteEntry:
        """Append one call durably (fsynced before return) and index it (writer.py)."""
        return self.writer.record(recording)

    def lookup(self, sample_key: str) -> CassetteEntry | None:
        return self.reader.lookup(sample_key)

    def by_key(self, key: str) -> list[CassetteEntry]:
        """The samples of one request key, in file order."""
        return self.reader.by_key(key)

    def entries(self) -> list[CassetteEntry]:
        """The winning entry of every sample key, in file order (of the winning line)."""
        return self.reader.entries()

    def iter_entries(self, only: set[str] | None = None) -> Iterator[CassetteEntry]:
        """entries() (or those whose sample key is in `only`), one at a time (reader.py)."""
        return self.reader.iter_entries(only)

    def request_of(self, entry: CassetteEntry) -> dict[str, Any]:
        """The canonical wire request of an entry: {model, messages, tools, tool_choice, **params}."""
        return self.reader.request_of(entry)

    def response_of(self, entry: CassetteEntry) -> dict[str, Any]:
        """The chat-completions body that was recorded (tool-call arguments in canonical JSON)."""
        return self.reader.response_of(entry)

    def raw_body_of(self, entry: CassetteEntry) -> str | None:
        """The answer body as the upstream sent it, when its wire API keeps one (reader.py)."""
        return self.reader.raw_body_of(entry)

    def message_count(self, entry: CassetteEntry) -> int:
        """How many messages an entry's request has, without walking its chain."""
        return self.reader.message_count(entry)

    def history(self) -> list[tuple[int | None, CassetteEntry]]:
        """Every usable call line, superseded ones too, with its line number."""
        return self.inspector.history()

    def index_path(self) -> Path | None:
        """The index file in use (a derived cache; see index.py)."""
        return self.inspector.index_path()

    def is_empty(self) -> bool:
        return self._file.samples == 0

    def __len__(self) -> int:
        return self._file.samples

    def __bool__(self) -> bool:
        # With __len__ alone an empty cassette would be falsy, and `if cassette:` would skip it.
        return True
