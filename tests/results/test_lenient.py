"""Lenient validation of foreign data (tauproxy/results/lenient.py): extras dropped, the input untouched."""

from __future__ import annotations

import copy

from pydantic import BaseModel, ConfigDict

from tauproxy.results.lenient import validate_dropping_extras


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid")

    met: bool


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reward: float
    check: Check | None = None


def test_extras_are_dropped_from_a_copy_and_named_with_their_values() -> None:
    data = {"reward": 1.0, "check": {"met": True, "newer_detail": "x"}, "unknown_detail": [1, 2]}
    before = copy.deepcopy(data)
    model, dropped = validate_dropping_extras(Strict, data)
    assert model == Strict(reward=1.0, check=Check(met=True))
    assert dropped == {"check.newer_detail": "x", "unknown_detail": [1, 2]}
    assert data == before  # the caller's data keeps every field


def test_data_without_extras_validates_as_is() -> None:
    data = {"reward": 0.5, "check": {"met": False}}
    assert validate_dropping_extras(Strict, data) == (Strict.model_validate(data), {})


def test_data_wrong_beyond_extras_gives_no_model() -> None:
    model, dropped = validate_dropping_extras(Strict, {"reward": "not a number", "unknown_detail": 1})
    assert model is None and dropped == {"unknown_detail": 1}
