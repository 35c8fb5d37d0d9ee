"""The one reader of what a command is pointed at: a tauproxy run directory, a tauproxy results.json,
or a τ²-bench simulations file, told apart by content. `report`, `view`, `diff`, `check`, `estimate
--history` and `cassette prune` all read their runs through `load_any_results`, so a τ² file means
the same to each of them.

A serve run log joins on by itself when it sits beside the results under the conventional name
(`NAME.runlog.jsonl` beside `NAME.json`; tauproxy.results.run_log), or when one is given: each
answered call lands on the message it produced (tauproxy.results.run_log_join), which tells live
from replayed calls, their cost and their roles for a run another harness made.
"""

from __future__ import annotations

import json
from pathlib import Path

from tauproxy.data_model.result import Results
from tauproxy.errors import ConfigError
from tauproxy.results.provenance import SourcedResults
from tauproxy.results.run_dir import RESULTS_FILE, load_results, read_text
from tauproxy.results.run_log import read_run_log, run_log_beside
from tauproxy.results.run_log_join import join_run_log, with_joined_calls
from tauproxy.results.tau2_format import looks_like_tau2_metrics, looks_like_tau2_simulations, tau2_to_results


def load_any_results(path: Path, run_log: Path | None = None) -> SourcedResults:
    """`path` read as results, with `run_log` (else the run log beside it, if any) joined on."""
    results = _read(path)
    log = run_log if run_log is not None else run_log_beside(results_file_of(path))
    return results if log is None else _joined(results, log)


def results_file_of(path: Path) -> Path:
    """The results file a command argument names: a run directory's results.json, or the file itself."""
    return path / RESULTS_FILE if path.is_dir() else path


def holds_tau2_simulations(path: Path) -> bool:
    """Whether `path` is a τ²-bench simulations file; False for anything unreadable, whose errors are
    for the reader the caller picks to word."""
    file = results_file_of(path)
    try:
        return looks_like_tau2_simulations(json.loads(read_text(file))) if file.is_file() else False
    except (ConfigError, json.JSONDecodeError):
        return False


def _read(path: Path) -> SourcedResults:
    if path.is_dir() and not (path / RESULTS_FILE).exists():
        return _cut_short_run(path)
    file = results_file_of(path)
    if not file.exists():
        raise ConfigError(f"{path}: no such file")
    try:
        data = json.loads(read_text(file))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file}: cannot read: {exc}") from None
    if looks_like_tau2_simulations(data):
        return tau2_to_results(data, source=str(path))
    if looks_like_tau2_metrics(data):
        raise ConfigError(
            f"{file}: this is τ²-bench's metrics file; pass the simulations file next to it "
            f"({file.name.removesuffix('_results.json')}.json)"
        )
    return _sourced(load_results(file), path)  # one place words the errors of a malformed tauproxy file


def _cut_short_run(path: Path) -> SourcedResults:
    """A run directory without results.json: a run that was killed or stopped, read from what it saved."""
    results = load_results(path)
    note = (
        f"{path}: the run did not finish (no {RESULTS_FILE}); "
        f"reporting the {len(results.simulations)} trial(s) it saved"
    )
    return _sourced(results, path, notes=[note])


def _sourced(results: Results, path: Path, notes: list[str] | None = None) -> SourcedResults:
    return SourcedResults(
        timestamp=results.timestamp,
        info=results.info,
        tasks=results.tasks,
        simulations=results.simulations,
        origin="tauproxy",
        sources=[str(path)],
        notes=notes or [],
    )


def _joined(results: SourcedResults, log: Path) -> SourcedResults:
    joined = join_run_log(results, read_run_log(log))
    unmatched = len(joined.unmatched)
    if unmatched:
        # Calls that joined no message (a judge's, or another run's) have a cost the tables cannot place.
        answered = unmatched + joined.matched
        results = results.model_copy(
            update={
                "notes": [
                    *results.notes,
                    f"run log {log}: {unmatched} of its {answered} answered calls match no message of this run "
                    "(judge calls, or another run's); they are left out of the call counts and costs",
                ]
            }
        )
    return with_joined_calls(results, joined)
