"""Load what a report is pointed at: one run as every command reads it, or several merged."""

from __future__ import annotations

from pathlib import Path

from tauproxy.errors import ConfigError
from tauproxy.reports.merge import merge_results
from tauproxy.results.load import load_any_results
from tauproxy.results.provenance import SourcedResults


def load_runs(paths: list[Path], run_log: Path | None = None) -> SourcedResults:
    """One input as it is (with `run_log` joined on, when given); several merged by (task, seed)."""
    if not paths:
        raise ConfigError("give at least one run directory or results file")
    if run_log is not None and len(paths) > 1:
        # Which of several runs a log belongs to is not for us to guess; beside its file it is clear.
        raise ConfigError(
            "--run-log joins onto one run; with several runs, put each run's log beside "
            "its results file as NAME.runlog.jsonl"
        )
    loaded = [load_any_results(path, run_log) for path in paths]
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
