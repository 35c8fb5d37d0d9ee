"""What every command that reads a run accepts, said once for their --help (tauproxy.results.load)."""

RUN_ARGUMENT = "run directory, results.json or τ²-bench simulations file"
RUN_LOG_HELP = (
    "A `tauproxy serve --run-log` file to join onto the run's results (live or replayed, cost and role "
    "per call). Without it, NAME.runlog.jsonl beside NAME.json joins by itself."
)
