"""tauproxy from Python, for notebooks and scripts: run a configuration, load a run from disk,
compare two runs, and get typed results instead of printed ones.

    from tauproxy.api import compare, load_run, run, run_config

    report = run(run_config("mock", agent="scripted/oracle?error_rate=0.3", num_trials=4,
                            cassette="cassettes/base", save_to="runs/base"))
    report.pass_hat_k[1], report.cost.live_usd, report.rows[0].reward
    report.write_csv("runs/base.csv")            # or report.to_dataframe(), with pandas installed
    base = load_run("runs/base")                 # a run directory, results.json or τ²-bench's NAME.json
    compare(report, base).comparisons[0].comparison

`intercept(cassette, mode)` records and replays an SDK's own calls in-process (tauproxy.intercept);
`ConnectionSettings` says where a `ModelRequest` goes (api_base, key, timeout) and is never keyed.

Nothing here is new machinery: `run` is the runner's `execute`, `load_run` the reader every command
uses (ours and τ²-bench's files, a serve run log joined on), the report is `ReportSummary` (what
`report --json` prints), `compare` is `report A --against B` and `check` is `tauproxy check`. Errors
are tauproxy's own (tauproxy.errors): a bad input is a ConfigError with one clear line, a strict-replay
miss a ReplayMissError whose message is the miss diff.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from tauproxy.data_model.call import ConnectionSettings, ModelRequest
from tauproxy.data_model.message import Message
from tauproxy.data_model.result import Results
from tauproxy.engine.agent import AgentPrompt
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.proxy.modes import RecordMode, parse_record_mode
from tauproxy.reports.compare import SideBySide, side_by_side
from tauproxy.reports.costs import CostSummary
from tauproxy.reports.load import load_runs
from tauproxy.reports.regression import DEFAULT_CONFIDENCE, ScoreComparison, compare_scores
from tauproxy.reports.summary import ReportSummary, summarize
from tauproxy.reports.trial_rows import TrialRow, to_dataframe, trial_rows, write_csv
from tauproxy.results.provenance import sources_of
from tauproxy.runner.config import RunConfig
from tauproxy.runner.executor import RunStop
from tauproxy.runner.prepared import ProgressCallback
from tauproxy.runner.run import execute
from tauproxy.validation import first_problem

if TYPE_CHECKING:
    from tauproxy.interception import Intercept, intercept

# Loaded on first use (`__getattr__`): they bring serve's app (Starlette, uvicorn, httpx), which a
# script that only runs and reports should not pay for at import.
_FROM_INTERCEPT = frozenset({"Intercept", "intercept"})

__all__ = [
    "AgentPrompt",
    "ConnectionSettings",
    "Intercept",
    "LLMConfig",
    "Message",
    "ModelRequest",
    "RecordMode",
    "ReportSummary",
    "RunConfig",
    "RunReport",
    "RunStop",
    "ScoreComparison",
    "SideBySide",
    "TrialRow",
    "check",
    "compare",
    "intercept",
    "load_run",
    "run",
    "run_config",
    "to_dataframe",
    "trial_rows",
    "write_csv",
]


def __getattr__(name: str) -> Any:
    if name in _FROM_INTERCEPT:
        import tauproxy.interception

        return getattr(tauproxy.interception, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class RunReport(BaseModel):
    """A run with its report: what `run` returns and what `load_run` reads back."""

    results: Results
    summary: ReportSummary
    rows: list[TrialRow]
    # Trials this call ran; the others were resumed from `save_to` (all of them, for a loaded run).
    new_trials: int = 0
    stop: RunStop | None = None  # why the run ended before every planned trial ran, if it did
    warnings: list[str] = []

    @property
    def pass_hat_k(self) -> dict[int, float]:
        """pass^k by k (1..the fewest trials any task has)."""
        return self.summary.pass_hat_k

    @property
    def pass_hat_k_ci(self) -> dict[int, tuple[float, float]]:
        """The seeded bootstrap 95% interval of each pass^k, over tasks."""
        return self.summary.pass_hat_k_ci

    @property
    def avg_reward(self) -> float:
        return self.summary.avg_reward

    @property
    def cost(self) -> CostSummary:
        """Live spend and replayed (saved) spend, by role, model and task; unknown is None, never 0."""
        return self.summary.cost

    def __repr__(self) -> str:
        stopped = f", stopped: {self.stop.reason}" if self.stop is not None else ""
        return f"<RunReport {repr(self.summary)[1:-1]}, {self.new_trials} new trials{stopped}>"

    __str__ = __repr__  # print() too: pydantic's str is its field list, every trial included

    def _repr_html_(self) -> str:
        html = self.summary._repr_html_()
        if self.stop is not None:
            html += f"<p>stopped before every planned trial ran: {escape(self.stop.reason)}</p>"
        return html

    def write_csv(self, target: Path | str | IO[str]) -> None:
        write_csv(self.rows, target)

    def to_dataframe(self) -> Any:
        """The per-trial rows as a pandas DataFrame (pandas is optional; see trial_rows.to_dataframe)."""
        return to_dataframe(self.rows)


def run_config(
    domain: str,
    agent: str | LLMConfig,
    *,
    user: str | LLMConfig | None = None,
    judge: str | LLMConfig | None = None,
    record_mode: str | RecordMode | None = None,
    **fields: Any,
) -> RunConfig:
    """A RunConfig with models given by name (`"scripted/oracle"`, or an LLMConfig for args) and the
    record mode by name (vcrpy's too); every other RunConfig field as a keyword. A refused value is a
    ConfigError naming the field."""
    values: dict[str, Any] = {"domain": domain, "agent": _llm(agent), **fields}
    for role, model in (("user", user), ("judge", judge)):
        if model is not None:
            values[role] = _llm(model)
    if record_mode is not None:
        values["record_mode"] = record_mode if isinstance(record_mode, RecordMode) else parse_record_mode(record_mode)
    try:
        return RunConfig.model_validate(values)
    except ValidationError as exc:
        field, message = first_problem(exc, "config")
        raise ConfigError(f"run config: {field}: {message}") from None


def _llm(model: str | LLMConfig) -> LLMConfig:
    return model if isinstance(model, LLMConfig) else LLMConfig(model=model)


def run(config: RunConfig, progress: ProgressCallback | None = None) -> RunReport:
    """Run the configuration as `tauproxy run` does (resuming `save_to` if it holds trials) and report it.

    `progress(simulation, done, total)` is called as each trial finishes. A run stopped early (budget,
    infrastructure, Ctrl-C) still returns, with `stop` saying why.
    """
    outcome = execute(config, progress)
    return _report(outcome.results, new_trials=len(outcome.new_runs), stop=outcome.stop, warnings=outcome.warnings)


def load_run(path: Path | str | Sequence[Path | str], run_log: Path | str | None = None) -> RunReport:
    """A run from disk, as every command reads it: a tauproxy run directory or results.json, or a
    τ²-bench simulations file (with a serve run log joined on: `run_log`, else NAME.runlog.jsonl beside
    it). Several paths are merged by (task, seed), as `tauproxy report A B` merges them."""
    paths = [Path(path)] if isinstance(path, str | Path) else [Path(p) for p in path]
    return _report(load_runs(paths, Path(run_log) if run_log is not None else None))


def _report(
    results: Results, new_trials: int = 0, stop: RunStop | None = None, warnings: list[str] | None = None
) -> RunReport:
    return RunReport(
        results=results,
        summary=summarize(results),
        rows=trial_rows(results),
        new_trials=new_trials,
        stop=stop,
        warnings=warnings or [],
    )


Run = RunReport | Results | Path | str


def compare(candidate: Run, baseline: Run, seed: int = 0) -> SideBySide:
    """Both runs' reports and the paired comparison candidate - baseline (pass^1, pass^k, avg reward with
    paired-bootstrap intervals over tasks, and the exact sign-flip test): `report candidate --against
    baseline --json`. `comparisons[0].comparison` is None when they share no scored task."""
    return side_by_side([_labelled(baseline, "baseline"), _labelled(candidate, "candidate")], seed=seed)


def check(
    candidate: Run,
    baseline: Run,
    max_drop: float,
    metric: str = "pass^1",
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> ScoreComparison:
    """`tauproxy check`'s verdict on the drop (baseline - candidate) of `metric`: good, bad, undecided
    (the interval straddles `max_drop`: the data cannot tell) or skip (nothing to compare)."""
    _, mine = _labelled(candidate, "candidate")
    _, theirs = _labelled(baseline, "baseline")
    return compare_scores(mine, theirs, metric, max_drop, confidence, seed=seed)


def _labelled(value: Run, default: str) -> tuple[str, Results]:
    if isinstance(value, str | Path):
        return str(value), load_run(value).results
    results = value.results if isinstance(value, RunReport) else value
    return " + ".join(sources_of(results)) or default, results
