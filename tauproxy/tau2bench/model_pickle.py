"""Pickling validated pydantic data for the cross-process cache, leaner than pydantic's own pickling.

pydantic pickles a model as its class and a state dict of four entries ({__dict__, fields set, extra,
private}), which unpickling hands to `BaseModel.__setstate__`: per model a dict and a set to build and a
method call. τ²'s airline database is about 25,000 models, and that was most of loading it from the
cache. Here a model without extra fields or private attributes is pickled as a call of `_rebuild`
with its class, its field values and its fields set (one shared frozenset per distinct set): what
`_copy_model` (tau2bench/cow.py) sets, without the state dict. Any other model, and anything that is
not a model, is pickled as pickle pickles it. The result is the same objects, equal field by field.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

from pydantic import BaseModel

__all__ = ["dumps", "loads"]

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
