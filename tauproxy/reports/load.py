"""Load what a report is pointed at: a tauproxy run, a τ²-bench simulations file, or several merged."""

from __future__ import annotations

import json
from pathlib import Path

from tauproxy.errors import ConfigError
from tauproxy.reports.merge import merge_results
from tauproxy.reports.provenance import SourcedResults
from tauproxy.reports.tau2 import is_tau2_document, tau2_to_results
from tauproxy.results.run_dir import RESULTS_FILE, load_results


def load_any_results(path: Path) -> SourcedResults:
    """A run directory, a tauproxy results.json or a τ²-bench simulations file, told apart by content."""
    file = path / RESULTS_FILE if path.is_dir() else path
    if not file.exists():
        raise ConfigError(f"{path}: no such file" if not path.is_dir() else f"{path}: no {RESULTS_FILE} here")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{file}: cannot read: {exc}") from None
    if is_tau2_document(data):
        return tau2_to_results(data, source=str(path))
    if isinstance(data, dict) and isinstance(data.get("metrics"), dict) and "pass_at_k" in data["metrics"]:
        raise ConfigError(
            f"{file}: this is τ²-bench's metrics file; pass the simulations file next to it "
            f"({file.name.removesuffix('_results.json')}.json)"
        )
    results = load_results(file)  # one place words the errors of a malformed tauproxy file
    return SourcedResults(timestamp=results.timestamp, info=results.info, tasks=results.tasks,
                          simulations=results.simulations, origin="tauproxy", sources=[str(path)])


def load_runs(paths: list[Path]) -> SourcedResults:
    """One input as it is; several merged by (task, seed)."""
    if not paths:
        raise ConfigError("give at least one run directory or results file")
    loaded = [load_any_results(path) for path in paths]
    if len(loaded) == 1:
        return loaded[0]
    return merge_results(loaded, sources=[str(path) for path in paths])


def split_solo(paths: list[Path]) -> tuple[SourcedResults | None, SourcedResults | None]:
    """Dual-control and solo inputs apart (each group merged), when both kinds are given."""
    loaded = [(path, load_any_results(path)) for path in paths]
    groups = {solo: [(p, r) for p, r in loaded if r.info.solo == solo] for solo in (False, True)}
    if not groups[False] or not groups[True]:
        return None, None

    def one(group: list[tuple[Path, SourcedResults]]) -> SourcedResults:
        if len(group) == 1:
            return group[0][1]
        return merge_results([r for _, r in group], sources=[str(p) for p, _ in group])

    return one(groups[False]), one(groups[True])
