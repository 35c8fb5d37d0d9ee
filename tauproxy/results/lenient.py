"""Validate foreign data against our models, dropping only the fields our models do not have.

A τ²-bench file carries fields we do not model (a task's `ticket`, newer reward details). Our task
models forbid extra fields so that typos in a domain pack fail loudly; when reading someone else's
file we want the opposite: keep everything that validates and say what was dropped.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)
_MAX_ROUNDS = 20


def validate_dropping_extras(model: type[M], data: Any) -> tuple[M | None, dict[str, Any]]:
    """(the model, {dotted path: dropped value}), or (None, ...) when something other than extras is wrong.

    The values are returned so that a caller can tell a dropped field that held something from one
    that was null (τ² writes every field of its models, most of them null).

    `data` is never changed: fields are dropped from a copy, made only when there are some to drop
    (a τ² run reads every trial's reward through here, and most have none). So the model may share
    nested values with `data`, as pydantic's own validation does."""
    dropped: dict[str, Any] = {}
    copied = False
    for _ in range(_MAX_ROUNDS):
        try:
            return model.model_validate(data), dropped
        except ValidationError as exc:
            extras = [error["loc"] for error in exc.errors() if error["type"] == "extra_forbidden"]
            if extras and not copied:
                data, copied = copy.deepcopy(data), True
            removed = {
                ".".join(str(part) for part in loc): value
                for loc in extras
                for found, value in [_delete(data, loc)]
                if found
            }
            if not removed:
                return None, dropped
            dropped.update(removed)
    return None, dropped


def _delete(data: Any, loc: tuple[Any, ...]) -> tuple[bool, Any]:
    node = data
    for part in loc[:-1]:
        in_dict = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if in_dict or in_list:
            node = node[part]
        # Anything else is a union member's tag in the error location, not a step into the data.
    if isinstance(node, dict) and loc and loc[-1] in node:
        return True, node.pop(loc[-1])
    return False, None
