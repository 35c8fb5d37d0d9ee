"""Looking into a cassette rather than replaying it: every call line (superseded ones too), samples
recorded more than once, and what is stored. For `tauproxy cassette stats/verify` and for tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tauproxy.store.entry import CassetteEntry
from tauproxy.store.index_db import MSG, NODE, stream_rows
from tauproxy.store.indexed_file import IndexedFile


class CassetteInspector:
    """The inspection side of one cassette. Streams outside the lock: do not record while iterating."""

    def __init__(self, file: IndexedFile) -> None:
        self._file = file

    def history(self) -> list[tuple[int | None, CassetteEntry]]:
        """Every usable call line, superseded ones too, with its line number."""
        return list(self.iter_history())

    def iter_history(self) -> Iterator[tuple[int | None, CassetteEntry]]:
        idx = self._file.current()
        if idx is None:
            return
        query = idx.query
        rows = query.db.execute("SELECT line, off, len, sk, kf, lh FROM calls WHERE ok = 1 ORDER BY seq")
        for line, off, length, sk, kf, lh in stream_rows(rows):
            yield line, query.entry_at(off, length, sk.hex(), kf, lh)

    def recorded_more_than_once(self) -> Iterator[tuple[str, list[tuple[int, CassetteEntry]]]]:
        """(sample key, its usable call lines with their numbers) for every sample recorded twice or more."""
        idx = self._file.current()
        if idx is None:
            return
        query = idx.query
        keys = query.db.execute("SELECT sk FROM calls WHERE ok = 1 GROUP BY sk HAVING COUNT(*) > 1 ORDER BY MIN(seq)")
        for (sk,) in keys.fetchall():
            rows = query.db.execute(
                "SELECT line, off, len, kf, lh FROM calls WHERE sk = ? AND ok = 1 ORDER BY seq", (sk,)
            )
            found = [(line, query.entry_at(off, length, sk.hex(), kf, lh)) for line, off, length, kf, lh in rows]
            yield sk.hex(), found

    def messages_stored(self) -> int:
        return self._file.read(lambda idx: idx.query.content_count(MSG))

    def nodes_stored(self) -> int:
        return self._file.read(lambda idx: idx.query.content_count(NODE))

    def index_bytes(self) -> int:
        """Size of the index file in use (0 when held in memory)."""
        idx = self._file.current()
        return idx.size_bytes() if idx is not None else 0

    def index_path(self) -> Path | None:
        """The index file in use (a derived cache; see index.py)."""
        idx = self._file.current()
        return idx.db_path if idx is not None else None
