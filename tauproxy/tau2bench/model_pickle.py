"""Pickling validated pydantic data for the cross-process cache, leaner than pydantic's own pickling.

pydantic pickles a model as its class and a state dict of four entries ({__dict__, fields set, extra,
private}), which unpickling hands to `BaseModel.__setstate__`: per model a dict and a set to build and a
method call. τ²'s airline database is about 25,000 models, and that was most of loading it from the
cache. Here a model without extra fields or private attributes is pickled as a call of `_rebuild`
with its class, its field values and its fields set (one shared frozenset per distinct set): what
`_copy_model` (tau2bench/cow.py) sets, without the state dict. Any other model, and anything that is
not a model, is pickled as pickle pickles it. The result is the same objects, equal field by field.

A dict of records that a domain's tools only look up by key (airline's users and reservations) can be
pickled lazily (`with_lazy_records`): each record as a `LazyRecord`, its own pickled bytes, unpickled on
first `load()`. The golden actions of airline's 50 tasks read 76 of its 2,500 users and
reservations, and unpickling them all was two thirds of loading the database. Code that needs every
record (a whole dump) calls `materialize` first.
"""

from __future__ import annotations

import io
import pickle
import threading
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

__all__ = ["LazyRecord", "dumps", "load_at", "loads", "materialize", "with_lazy_records"]

_new_object = object.__new__
_set_attribute = object.__setattr__


def _rebuild(cls: type[BaseModel], values: dict[str, Any], fields_set: frozenset[str]) -> BaseModel:
    model = _new_object(cls)
    _set_attribute(model, "__dict__", values)
    _set_attribute(model, "__pydantic_fields_set__", set(fields_set))  # a model's own: pydantic adds to it
    _set_attribute(model, "__pydantic_extra__", None)
    _set_attribute(model, "__pydantic_private__", None)
    return model


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._fields_sets: dict[frozenset[str], frozenset[str]] = {}

    def reducer_override(self, obj: Any) -> Any:
        if (
            isinstance(obj, BaseModel)
            and obj.__pydantic_extra__ is None
            and obj.__pydantic_private__ is None
            and type(obj).__getstate__ is BaseModel.__getstate__  # a class that pickles its own way keeps it
            and type(obj).__setstate__ is BaseModel.__setstate__
        ):
            fields_set = frozenset(obj.__pydantic_fields_set__)
            return _rebuild, (type(obj), obj.__dict__, self._fields_sets.setdefault(fields_set, fields_set))
        return NotImplemented


def dumps(value: Any) -> bytes:
    """`value` pickled, its pydantic models the lean way (see the module docstring)."""
    buffer = io.BytesIO()
    _Pickler(buffer).dump(value)
    return buffer.getvalue()


def loads(payload: bytes) -> Any:
    """What `dumps` pickled."""
    return pickle.loads(payload)


_load_lock = threading.Lock()


class LazyRecord:
    """A record held as its class and its pickled bytes until `load()`, which unpickles it once: every
    caller gets the same object. It compares as the record it holds."""

    __slots__ = ("_record", "payload", "record_type")

    def __init__(self, record_type: type[BaseModel], payload: bytes) -> None:
        self.record_type = record_type
        self.payload = payload
        self._record: BaseModel | None = None

    @classmethod
    def of(cls, record: BaseModel) -> LazyRecord:
        return cls(type(record), dumps(record))

    def load(self) -> BaseModel:
        record = self._record
        if record is None:
            with _load_lock:  # two threads must not hand out two different objects for one record
                record = self._record
                if record is None:
                    record = self._record = loads(self.payload)
        return record

    def __eq__(self, other: object) -> bool:
        return self.load() == (other.load() if isinstance(other, LazyRecord) else other)

    __hash__ = None  # type: ignore[assignment]  # unhashable, as the models it stands for

    def __reduce__(self) -> tuple[Any, ...]:
        return (LazyRecord, (self.record_type, self.payload))


def load_at(records: dict[str, Any], key: str) -> Any:
    """`records[key]`, loaded if it is a `LazyRecord` (then kept in `records` in its place)."""
    value = records[key]
    if type(value) is LazyRecord:
        value = value.load()
        dict.__setitem__(records, key, value)  # the same content: a value replaced, the size kept
    return value


def materialize(model: BaseModel) -> BaseModel:
    """`model` with every `LazyRecord` in its top-level dict fields loaded in place; returns `model`.

    Only what pydantic's serialiser reads at C level (a whole `model_dump`, `==` of the dicts) needs it:
    every other read of a lazy record goes through code that loads it."""
    for value in model.__dict__.values():
        if isinstance(value, dict):
            for key, record in list(dict.items(value)):
                if type(record) is LazyRecord:
                    dict.__setitem__(value, key, record.load())
    return model


def with_lazy_records(model: BaseModel, fields: Iterable[str]) -> BaseModel:
    """A shallow copy of `model` to pickle, whose dict `fields` hold each record as a `LazyRecord`.

    A field that is not a plain dict of models without extra fields or private attributes (what the
    lean pickling rebuilds exactly) stays as it is, and so does a model with extra fields."""
    if model.__pydantic_extra__ is not None or model.__pydantic_private__ is not None:
        return model
    values = dict(model.__dict__)
    for name in fields:
        records = values.get(name)
        if type(records) is dict and all(_lean(record) for record in records.values()):
            values[name] = {key: LazyRecord.of(record) for key, record in records.items()}
    return _rebuild(type(model), values, frozenset(model.__pydantic_fields_set__))


def _lean(value: Any) -> bool:
    return isinstance(value, BaseModel) and value.__pydantic_extra__ is None and value.__pydantic_private__ is None
