"""Which recorded calls a run used: the keep-set of `tauproxy cassette prune`.

Read through the one results reader (load.py), so a run directory, a results.json and a τ²-bench
file mean the same here as to every other command. The store only prunes by the set it is given.
"""

from __future__ import annotations

from pathlib import Path

from tauproxy.errors import ConfigError
from tauproxy.results.load import holds_tau2_simulations, load_any_results, results_file_of
from tauproxy.results.run_log import logged_sample_keys, read_run_log, run_log_beside, run_log_path_for


def sample_keys_used_by(run: Path) -> set[str]:
    """The sample keys a run used: its results' call records, plus every call its serve run log
    answered (judge calls join no message, yet the run needs them replayed)."""
    log = run_log_beside(results_file_of(run))
    logged = logged_sample_keys(read_run_log(log)) if log is not None else set()
    if holds_tau2_simulations(run):
        if log is None:
            # Its calls are unknown: pruning by it would drop every call it replayed.
            raise ConfigError(
                f"{run}: a τ²-bench file records no model calls; put the `tauproxy serve --run-log` of that "
                f"run beside it as {run_log_path_for(results_file_of(run)).name} to prune by it"
            )
        return logged
    results = load_any_results(run)
    return {call.sample_key for simulation in results.simulations for call in simulation.calls} | logged


def sample_keys_used(runs: list[Path]) -> set[str]:
    """Every sample key the given runs used (see sample_keys_used_by)."""
    return set().union(*(sample_keys_used_by(run) for run in runs))
