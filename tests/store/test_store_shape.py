"""The store stays in small parts with one job each: no module over 400 lines, no class with more than
20 public methods (a cassette front, a reader, a writer, an index query, ... rather than two god classes)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

STORE = Path(__file__).resolve().parents[2] / "tauproxy" / "store"
MAX_LINES = 400
MAX_PUBLIC_METHODS = 20

MODULES = sorted(STORE.glob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_store_module_is_small(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines: split it by job"


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.name)
def test_store_classes_have_few_public_methods(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    too_wide = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            public = [
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and not item.name.startswith("_")
            ]
            if len(public) > MAX_PUBLIC_METHODS:
                too_wide.append(f"{node.name}: {len(public)} public methods")
    assert not too_wide, too_wide
