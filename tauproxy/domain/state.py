"""Domain state: named tables of JSON records, copied on write so a fresh trial costs almost nothing.

A `BaseState` is built once per domain. Each trial gets a `State` over it: the first time a trial
touches a record it gets its own copy, so the shared base is never changed and a reset is O(1)
instead of a deep copy of thousands of records.

`State.sha256()` equals sha256 of `json.dumps(state, sort_keys=True)` over the whole state (the DB
check compares these), but reuses the base's per-record JSON so hashing stays cheap.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from tauproxy.errors import DomainError

_DELETED = object()


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


class BaseState:
    """The immutable starting point shared by every trial of a domain."""

    def __init__(self, tables: dict[str, dict[str, Any]]) -> None:
        for name, table in tables.items():
            if not isinstance(table, dict):
                raise DomainError(f"table {name!r} must map record ids to records, not {type(table).__name__}")
        # Each record is kept as canonical JSON: copies are json.loads, and hashing reuses the text.
        self._json: dict[str, dict[str, str]] = {
            name: {str(rid): _dumps(rec) for rid, rec in table.items()} for name, table in tables.items()
        }
        self._table_text: dict[str, str] = {}

    def table_json(self, table: str) -> str:
        """The canonical JSON of an untouched table, built once and shared by every trial."""
        text = self._table_text.get(table)
        if text is None:
            rows = self._json.get(table, {})
            text = "{" + ", ".join(f"{_dumps(rid)}: {rows[rid]}" for rid in sorted(rows)) + "}"
            self._table_text[table] = text
        return text

    @property
    def table_names(self) -> list[str]:
        return list(self._json)

    def fresh(self) -> State:
        return State(self)

    def record_json(self, table: str, rid: str) -> str | None:
        return self._json.get(table, {}).get(rid)

    def ids(self, table: str) -> list[str]:
        return list(self._json.get(table, {}))


class Table:
    """One table of a `State`: read with get/values, write with put/delete or by editing a record."""

    def __init__(self, state: State, name: str) -> None:
        self._state = state
        self.name = name

    def get(self, rid: str) -> Any | None:
        return self._state._get(self.name, str(rid))

    def __getitem__(self, rid: str) -> Any:
        record = self.get(rid)
        if record is None:
            raise KeyError(rid)
        return record

    def __contains__(self, rid: object) -> bool:
        return self.get(str(rid)) is not None

    def ids(self) -> list[str]:
        return self._state._ids(self.name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids())

    def __len__(self) -> int:
        return len(self.ids())

    def values(self) -> Iterator[Any]:
        for rid in self.ids():
            yield self._state._get(self.name, rid)

    def items(self) -> Iterator[tuple[str, Any]]:
        for rid in self.ids():
            yield rid, self._state._get(self.name, rid)

    def put(self, rid: str, record: Any) -> None:
        self._state._put(self.name, str(rid), record)

    def delete(self, rid: str) -> None:
        self._state._put(self.name, str(rid), _DELETED)


class State:
    """A trial's private view of a `BaseState`. Records read through it are the trial's own copies."""

    def __init__(self, base: BaseState) -> None:
        self._base = base
        self._overlay: dict[str, dict[str, Any]] = {}
        self._new_ids: dict[str, list[str]] = {}

    def table(self, name: str) -> Table:
        return Table(self, name)

    def __getattr__(self, name: str) -> Table:
        if name.startswith("_"):
            raise AttributeError(name)
        return Table(self, name)

    def _get(self, table: str, rid: str) -> Any | None:
        overlay = self._overlay.setdefault(table, {})
        if rid in overlay:
            value = overlay[rid]
            return None if value is _DELETED else value
        text = self._base.record_json(table, rid)
        if text is None:
            return None
        value = json.loads(text)
        overlay[rid] = value
        return value

    def _put(self, table: str, rid: str, record: Any) -> None:
        overlay = self._overlay.setdefault(table, {})
        known = rid in overlay or self._base.record_json(table, rid) is not None
        if not known and record is not _DELETED:
            self._new_ids.setdefault(table, []).append(rid)
        overlay[rid] = record

    def _ids(self, table: str) -> list[str]:
        overlay = self._overlay.get(table, {})
        ids = [rid for rid in self._base.ids(table) if overlay.get(rid, None) is not _DELETED]
        ids.extend(rid for rid in self._new_ids.get(table, []) if overlay.get(rid) is not _DELETED)
        return ids

    def update(self, tables: dict[str, dict[str, Any]]) -> None:
        """Merge records into tables (initialization data): a record replaces the one with its id."""
        for name, records in tables.items():
            if not isinstance(records, dict):
                raise DomainError(f"initialization data for table {name!r} must map ids to records")
            for rid, record in records.items():
                # A private copy: tools edit records in place, and the task's data must stay as written.
                self._put(name, str(rid), json.loads(_dumps(record)))

    def table_names(self) -> list[str]:
        names = list(self._base.table_names)
        # A table only read (never written) must not appear: reading is not a change of state.
        names.extend(name for name in self._overlay if name not in names and self._ids(name))
        return names

    def _record_text(self, table: str, rid: str) -> str | None:
        """One record's canonical JSON as this state has it (None: absent), without parsing or caching."""
        overlay = self._overlay.get(table, {})
        if rid in overlay:
            value = overlay[rid]
            return None if value is _DELETED else _dumps(value)
        return self._base.record_json(table, rid)

    def same_as(self, other: State) -> bool:
        """True exactly when both states' `canonical_json()` (and so `sha256()`) are equal.

        Two trials of a domain share one base, so only records that either side touched can differ:
        the comparison costs O(touched records) instead of serialising thousands of records twice.
        """
        if self._base is not other._base:
            return self.canonical_json() == other.canonical_json()
        for table in set(self._overlay) | set(other._overlay):
            touched = set(self._overlay.get(table, {})) | set(other._overlay.get(table, {}))
            if any(self._record_text(table, rid) != other._record_text(table, rid) for rid in touched):
                return False
        return True

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {name: dict(self.table(name).items()) for name in self.table_names()}

    def canonical_json(self) -> str:
        """Exactly `json.dumps(self.to_dict(), sort_keys=True)`, built from cached record text."""
        parts = []
        for name in sorted(self.table_names()):
            overlay = self._overlay.get(name, {})
            if not any(
                value is _DELETED or self._base.record_json(name, rid) != _dumps(value)
                for rid, value in overlay.items()
            ) and not self._new_ids.get(name):
                parts.append(f"{_dumps(name)}: {self._base.table_json(name)}")
                continue
            rows = []
            for rid in sorted(self._ids(name)):
                if rid in overlay:
                    rows.append(f"{_dumps(rid)}: {_dumps(overlay[rid])}")
                else:
                    rows.append(f"{_dumps(rid)}: {self._base.record_json(name, rid)}")
            parts.append(f"{_dumps(name)}: {{{', '.join(rows)}}}")
        return "{" + ", ".join(parts) + "}"

    def sha256(self) -> str:
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()
