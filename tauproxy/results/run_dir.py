"""A run directory: `simulations.jsonl` grows one finished trial per line (so a crash or Ctrl-C loses
nothing finished, and `--save-to` resumes), and `results.json` is written whole at the end.

    RUN_DIR/run.json           the run's settings (RunInfo)
    RUN_DIR/simulations.jsonl  one SimulationRun per line, in finishing order
    RUN_DIR/results.json       Results, simulations sorted by task order then trial
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from tauproxy.data_model.result import Results, RunInfo, SimulationRun
from tauproxy.data_model.task import Task
from tauproxy.errors import ConfigError

RESULTS_FILE = "results.json"
SIMULATIONS_FILE = "simulations.jsonl"
RUN_INFO_FILE = "run.json"
# Settings that may differ when a run is resumed: they do not change what a trial is.
_RESUMABLE_DIFFERENCES = {"num_trials", "trial_seeds", "cassette", "record_mode", "price_source"}


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ResultsDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def prepare(self, info: RunInfo) -> dict[str, SimulationRun]:
        """Create the directory, or check it holds the same run; return the trials already finished."""
        self.path.mkdir(parents=True, exist_ok=True)
        info_path = self.path / RUN_INFO_FILE
        if info_path.exists():
            self._check_same_run(info_path, info)
        _atomic_write(info_path, info.model_dump_json(indent=2))
        return self.finished()

    def _check_same_run(self, info_path: Path, info: RunInfo) -> None:
        try:
            old = RunInfo.model_validate_json(info_path.read_text(encoding="utf-8"))
        except (OSError, ValidationError) as exc:
            raise ConfigError(f"{info_path}: cannot read the earlier run's settings: {exc}") from None
        old_dump, new_dump = old.model_dump(mode="json"), info.model_dump(mode="json")
        changed = [k for k in new_dump if k not in _RESUMABLE_DIFFERENCES and old_dump.get(k) != new_dump[k]]
        if changed:
            raise ConfigError(
                f"{self.path} holds a run with other settings ({', '.join(changed)} differ); "
                "use another --save-to or remove it"
            )

    def finished(self) -> dict[str, SimulationRun]:
        path = self.path / SIMULATIONS_FILE
        done: dict[str, SimulationRun] = {}
        if not path.exists():
            return done
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                run = SimulationRun.model_validate_json(line)
            except ValidationError:
                continue  # a line cut by a crash: that trial simply runs again
            if run.termination_reason != "infrastructure_error":
                done[run.id] = run
        return done

    def append(self, run: SimulationRun) -> None:
        line = run.model_dump_json() + "\n"
        with self._lock:
            fd = os.open(self.path / SIMULATIONS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())
                os.fsync(fd)
            finally:
                os.close(fd)

    def write_results(self, info: RunInfo, tasks: list[Task], runs: list[SimulationRun]) -> Results:
        results = Results(timestamp=utc_now(), info=info, tasks=tasks, simulations=runs)
        _atomic_write_parts(self.path / RESULTS_FILE, results_json_parts(results))
        return results


def results_json_parts(results: Results) -> Iterator[str]:
    """results.json, written a piece at a time with one simulation per line.

    Streaming keeps a large run's file from existing twice in memory, and one line per simulation
    makes two results files easy to diff.
    """
    yield "{\n"
    yield f'  "timestamp": {json.dumps(results.timestamp)},\n'
    yield f'  "info": {results.info.model_dump_json()},\n'
    yield '  "tasks": [\n'
    yield ",\n".join(f"    {task.model_dump_json()}" for task in results.tasks)
    yield '\n  ],\n  "simulations": [\n'
    for index, run in enumerate(results.simulations):
        yield ("    " if index == 0 else ",\n    ") + run.model_dump_json()
    yield "\n  ]\n}\n"


def _atomic_write(path: Path, text: str) -> None:
    _atomic_write_parts(path, [text])


def _atomic_write_parts(path: Path, parts: Iterable[str]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for part in parts:
            handle.write(part)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def load_results(path: Path) -> Results:
    """A results.json, or a run directory holding one (or only simulations.jsonl, for a cut run)."""
    file = path / RESULTS_FILE if path.is_dir() else path
    if not file.exists():
        raise ConfigError(f"{path}: no {RESULTS_FILE} here")
    try:
        return Results.model_validate_json(file.read_text(encoding="utf-8"))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{file}: not a tauproxy results file (field {field}: {first['msg']})") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{file}: cannot read: {exc}") from None
