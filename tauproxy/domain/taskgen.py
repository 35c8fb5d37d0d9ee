"""Runs a pack's own task generator (`taskgen.py` with `generate_tasks(seed, n)`) and validates the output."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from tauproxy.data_model.task import Task
from tauproxy.domain.pack import load_pack
from tauproxy.errors import DomainError


def generate_tasks(domain: str, seed: int, n: int) -> list[Task]:
    pack = load_pack(domain)
    package = pack.module.__name__.rsplit(".", 1)[0] if pack.module else ""
    try:
        module = importlib.import_module(f"{package}.taskgen")
    except ModuleNotFoundError:
        raise DomainError(f"{pack.root}: domain {pack.name!r} has no taskgen.py task generator") from None
    try:
        raw = module.generate_tasks(seed=seed, n=n)
    except (RuntimeError, ValueError) as exc:  # e.g. more tasks asked for than the DB can back
        raise DomainError(f"domain {pack.name!r} cannot generate {n} tasks with seed {seed}: {exc}") from None
    try:
        return TypeAdapter(list[Task]).validate_python(raw)
    except ValidationError as exc:
        raise DomainError(f"{pack.root / 'taskgen.py'}: generated an invalid task: {exc.errors()[0]}") from None


def write_tasks(tasks: list[Task], path: Path) -> None:
    data = [task.model_dump(mode="json", exclude_none=True) for task in tasks]
    try:
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    except OSError as exc:
        raise DomainError(f"--out {path}: cannot write: {exc.strerror or exc}") from None
