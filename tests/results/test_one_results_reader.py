"""results/ is the one reader of results files: no module outside it names results.json or reads
one itself (`cassette prune` takes its keep-set from results.keys_used). Read from the sources."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_module_outside_results_names_the_results_file() -> None:
    offenders = []
    for path in sorted([*(ROOT / "tauproxy").rglob("*.py"), *(ROOT / "cli").rglob("*.py")]):
        if path.parent == ROOT / "tauproxy" / "results":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value == "results.json":
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "RESULTS_FILE" for t in node.targets
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} defines RESULTS_FILE")
    assert offenders == []


def test_the_store_reads_no_results() -> None:
    store = ROOT / "tauproxy" / "store"
    assert not [p.name for p in store.glob("*.py") if "tauproxy.results" in p.read_text(encoding="utf-8")]
