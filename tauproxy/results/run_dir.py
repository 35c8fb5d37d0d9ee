"""A run directory: `simulations.jsonl` grows one finished trial per line (so a crash or Ctrl-C loses
nothing finished, and `--save-to` resumes), and `results.json` is put in place at the end (its
simulations are written beside it as they come, `ResultsWriter`, so a run need not hold them).

Trials are appended at once and made durable in batches (`SYNC_INTERVAL_S`, and always at the end
of a run: `ResultsDir.sync`), not with an fsync each; see `ResultsDir.append` for why that keeps the
promise that a killed run loses no recorded call and resumes exactly.

    RUN_DIR/run.json           the run's settings (RunInfo), written when the run starts
    RUN_DIR/tasks.json         the run's tasks, written when the run starts
    RUN_DIR/simulations.jsonl  one SimulationRun per line, in finishing order
    RUN_DIR/results.json       Results, simulations sorted by task order then trial

results.json exists only for a run that ended: starting (or resuming) a run removes it. A directory
without it is a run that was cut short, and reads as what it saved (`ResultsDir.partial_results`),
which is why run.json and tasks.json are written up front. Connection settings are never part of
run.json (engine/llm_config.py keeps them out), so changing them never blocks a resume.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from tauproxy.data_model.key import without_connection_settings
from tauproxy.data_model.result import Results, RunInfo, SimulationRun, TerminationReason
from tauproxy.data_model.task import Task
from tauproxy.errors import ConfigError
from tauproxy.validation import first_problem

RESULTS_FILE = "results.json"
SIMULATIONS_FILE = "simulations.jsonl"
RUN_INFO_FILE = "run.json"
TASKS_FILE = "tasks.json"
# Settings that may differ when a run is resumed: they do not change what a trial is.
_RESUMABLE_DIFFERENCES = {"num_trials", "trial_seeds", "cassette", "record_mode", "price_source"}
_ROLES = ("agent_info", "user_info", "judge_info")
_TASK_LIST = TypeAdapter(list[Task])
# The longest a saved trial waits for its fsync while the run goes on (group commit): trials that
# finish within it share one.
SYNC_INTERVAL_S = 0.25


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ResultsDir:
    def __init__(
        self, path: Path, sync_interval_s: float = SYNC_INTERVAL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._sync_interval_s = sync_interval_s
        self._clock = clock
        self._fd: int | None = None  # simulations.jsonl, open for appending from the first append to `sync`
        self._synced_at: float | None = None
        self._unsynced = False

    def prepare(self, info: RunInfo, tasks: list[Task] | None = None) -> dict[str, SimulationRun]:
        """Create the directory, or check it holds the same run; return the trials already finished.

        `tasks` are saved to tasks.json so that the run can be reported should it never end."""
        # Checked before anything is written: a directory holding something other than this run (another
        # run's settings, a results.json that is not a tauproxy run's) is refused, never overwritten.
        for name in (RUN_INFO_FILE, RESULTS_FILE):
            if (self.path / name).exists():
                self._check_same_run(self._earlier_info(name), info)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            reason = exc.strerror or exc
            raise ConfigError(f"--save-to {self.path}: cannot create the run directory: {reason}") from None
        info_path = self.path / RUN_INFO_FILE
        # From here on an earlier results.json no longer describes the directory: were this run cut
        # short, a report would read the old file and miss every trial saved since.
        (self.path / RESULTS_FILE).unlink(missing_ok=True)
        _atomic_write(info_path, info.model_dump_json(indent=2))
        if tasks is not None:
            _atomic_write_parts(self.path / TASKS_FILE, _tasks_json_parts(tasks))
        return self.finished()

    def _earlier_info(self, name: str) -> RunInfo:
        """The settings of the run already in the directory, from its run.json or its results.json."""
        path = self.path / name
        refuse = f"; use another --save-to or remove {path}"
        try:
            raw = json.loads(read_text(path))
            return RunInfo.model_validate(raw if name == RUN_INFO_FILE else raw["info"])
        except ConfigError as exc:
            raise ConfigError(f"--save-to {self.path}: {exc}{refuse}") from None
        except (ValueError, RecursionError, TypeError, KeyError) as exc:  # JSON, pydantic and shape errors
            reason = _first_error(exc) if isinstance(exc, ValidationError) else _json_problem(exc)
            raise ConfigError(f"--save-to {self.path}: {path} is not from a tauproxy run ({reason}){refuse}") from None

    def _check_same_run(self, old: RunInfo, info: RunInfo) -> None:
        old_dump, new_dump = _comparable(old), _comparable(info)
        changed = [k for k in new_dump if k not in _RESUMABLE_DIFFERENCES and old_dump.get(k) != new_dump[k]]
        if changed:
            raise ConfigError(
                f"{self.path} holds a run with other settings ({', '.join(changed)} differ); "
                "use another --save-to or remove it"
            )

    def finished(self) -> dict[str, SimulationRun]:
        """The trials saved with an outcome; an infrastructure error is no outcome, so it runs again."""
        return {run_id: run for run_id, run in self._latest().items() if not _is_infrastructure_error(run)}

    def append(self, run: SimulationRun) -> None:
        """Save a finished trial: one line, written at once, fsynced with the others of its batch.

        Why no fsync per trial keeps the promises (a killed run loses no recorded call, and resumes
        exactly): the write reaches the kernel before the next trial is saved, so a killed process
        (kill -9, a crash, SIGTERM) loses no saved trial; only the machine going down can lose the
        ones written since the last fsync, at most `SYNC_INTERVAL_S` of them (and a cut last line,
        which reading skips). Such a trial is simply not finished on resume, so it runs again, and
        its model calls, each made durable in the cassette before its answer was used (the
        cassette's own fsync, unchanged), replay from it: no paid call is lost or paid twice in
        auto or replay mode, and the resumed trial is the trial that was lost. The run's end, also
        a stopped or interrupted one, fsyncs before results.json is written (`sync`).
        """
        self.append_line(run.model_dump_json())

    def append_line(self, line: str) -> None:
        """`append` for a trial already dumped: `line` is its `model_dump_json()`."""
        payload = (line + "\n").encode("utf-8")
        with self._lock:
            fd = self._open_for_append()
            try:
                _write_all(fd, payload)
                self._unsynced = True
                if self._synced_at is None or self._clock() - self._synced_at >= self._sync_interval_s:
                    self._sync_locked()
            except OSError:
                self._close_locked()  # reopened by the next append, which starts a fresh line if this cut one
                raise

    def sync(self) -> None:
        """Make every appended trial durable and close the file (a later append opens it again)."""
        with self._lock:
            try:
                if self._fd is not None and self._unsynced:
                    self._sync_locked()
            finally:
                self._close_locked()

    def _open_for_append(self) -> int:
        if self._fd is None:
            fd = os.open(self.path / SIMULATIONS_FILE, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                if _ends_cut(fd):
                    _write_all(fd, b"\n")  # a crash cut the last line: never glue a record onto it
            except OSError:
                os.close(fd)
                raise
            self._fd = fd
        return self._fd

    def _sync_locked(self) -> None:
        assert self._fd is not None
        os.fsync(self._fd)
        self._synced_at = self._clock()
        self._unsynced = False

    def _close_locked(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def write_results(self, info: RunInfo, tasks: list[Task], runs: list[SimulationRun]) -> Results:
        writer = self.results_writer()
        for run in runs:
            writer.add(run)
        timestamp = writer.finish(info, tasks)
        return Results(timestamp=timestamp, info=info, tasks=tasks, simulations=runs)

    def results_writer(self) -> ResultsWriter:
        """results.json written a trial at a time (see ResultsWriter)."""
        return ResultsWriter(self.path / RESULTS_FILE)

    def partial_results(self) -> Results:
        """The results of a run that did not end (killed, Ctrl-C, a crash), from what it saved.

        The simulations are the ones results.json would list (the run's tasks x its trials, each
        trial's last saved record, sorted by task order then trial); the timestamp is when the last
        one was saved. Nothing is written. Needs run.json; without tasks.json (a run started before
        it was written) the tasks are empty and every saved task counts, in the order first saved.
        """
        info = self._read_info()
        tasks = self._read_tasks()
        runs = _in_plan_order(list(self._latest().values()), info, tasks)
        return Results(timestamp=self._saved_at(), info=info, tasks=tasks, simulations=runs)

    def _read_info(self) -> RunInfo:
        path = self.path / RUN_INFO_FILE
        if not path.exists():
            raise ConfigError(f"{self.path}: no {RESULTS_FILE} or {RUN_INFO_FILE} here")
        try:
            return RunInfo.model_validate_json(read_text(path))
        except ValidationError as exc:
            raise ConfigError(f"{path}: not a tauproxy run settings file ({_first_error(exc)})") from None

    def _read_tasks(self) -> list[Task]:
        path = self.path / TASKS_FILE
        if not path.exists():
            return []
        try:
            return _TASK_LIST.validate_json(read_text(path))
        except ValidationError as exc:
            raise ConfigError(f"{path}: not a tauproxy tasks file ({_first_error(exc)})") from None

    def _saved_at(self) -> str | None:
        for name in (SIMULATIONS_FILE, RUN_INFO_FILE):
            try:
                mtime = (self.path / name).stat().st_mtime
            except OSError:
                continue
            return datetime.fromtimestamp(mtime, UTC).isoformat(timespec="seconds")
        return None

    def _latest(self) -> dict[str, SimulationRun]:
        """Each trial's last saved record, preferring one with an outcome to an infrastructure error."""
        latest: dict[str, SimulationRun] = {}
        for run in self._saved_runs():
            kept = latest.get(run.id)
            if kept is None or not _is_infrastructure_error(run) or _is_infrastructure_error(kept):
                latest[run.id] = run
        return latest

    def _saved_runs(self) -> Iterator[SimulationRun]:
        path = self.path / SIMULATIONS_FILE
        if not path.exists():
            return
        try:
            # A binary file splits on b"\n" only. str.splitlines would also split at U+2028, U+0085 and
            # the other Unicode line breaks, which JSON leaves raw inside strings: a message holding one
            # would cut its record in two, and that trial would run again on every resume.
            with open(path, "rb") as handle:
                for number, line in enumerate(handle, start=1):
                    run = _parse_line(path, number, line)
                    if run is not None:
                        yield run
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _is_infrastructure_error(run: SimulationRun) -> bool:
    return run.termination_reason is TerminationReason.INFRASTRUCTURE_ERROR


def _comparable(info: RunInfo) -> dict[str, Any]:
    """RunInfo as a resume compares it. A run.json written before connection settings were kept out of
    it may still hold some (api_base, timeout, ...); they never change a trial, so they are dropped."""
    dump = info.model_dump(mode="json")
    for role in _ROLES:
        args = dump[role]["llm_args"]
        dump[role]["llm_args"] = without_connection_settings(args)
    return dump


def _parse_line(path: Path, number: int, line: bytes) -> SimulationRun | None:
    text = _decode_line(path, number, line)
    if text is None or not text.strip():
        return None
    try:
        return SimulationRun.model_validate_json(text)
    except ValidationError:
        return None  # a line cut by a crash: that trial simply runs again


def _decode_line(path: Path, number: int, line: bytes) -> str | None:
    """A line's text; None for a line cut inside a character (a crash), an error for any other bad byte
    (no crash writes one: the file was damaged or edited, and skipping would hide it)."""
    body = line.removesuffix(b"\n")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data" and exc.end == len(body):
            return None
        raise ConfigError(_not_utf8(path, number, exc.start + 1, body[exc.start])) from None


def read_text(path: Path) -> str:
    """A file's UTF-8 text; a byte that is not UTF-8 is a one-line error naming file:line."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(_not_utf8(path, line, exc.start - line_start + 1, data[exc.start])) from None


def _not_utf8(path: Path, line: int, column: int, byte: int) -> str:
    return f"{path}:{line}: not UTF-8 (byte 0x{byte:02x} at column {column}); the file is damaged"


def _json_problem(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
    if isinstance(exc, RecursionError):
        return "not JSON: nested too deeply"
    return "no run settings in it"


def _first_error(exc: ValidationError) -> str:
    field, message = first_problem(exc)
    return f"field {field}: {message}" if field else message


def _in_plan_order(runs: list[SimulationRun], info: RunInfo, tasks: list[Task]) -> list[SimulationRun]:
    """The runs of the run's tasks x trials, in the order results.json lists them."""
    order = [task.id for task in tasks] or list(dict.fromkeys(run.task_id for run in runs))
    rank = {task_id: index for index, task_id in enumerate(order)}
    planned = [run for run in runs if run.task_id in rank and run.trial < info.num_trials]
    return sorted(planned, key=lambda run: (rank[run.task_id], run.trial))


def _ends_cut(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


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


class ResultsWriter:
    """results.json written as the trials come, in the order it lists them, so a run need not hold
    them all: each goes to a temp file beside it at once; `finish` writes the header (the timestamp is
    when the run ended), copies them after it and puts the file in place atomically. The bytes are
    those of `results_json_parts`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._body_path = path.with_name(path.name + ".body.tmp")
        self._body = open(self._body_path, "w", encoding="utf-8", newline="")  # noqa: SIM115 (finish or discard closes it)
        self._count = 0
        self._failed: OSError | None = None  # a write that failed leaves the body cut: never finished

    def add(self, run: SimulationRun, line: str | None = None) -> None:
        """A simulation, next in order; `line`: its `model_dump_json()` when the caller has it already."""
        if self._failed is not None:
            return  # the body is cut: finish refuses, nothing more is worth writing
        text = line if line is not None else run.model_dump_json()
        try:
            self._body.write(("    " if self._count == 0 else ",\n    ") + text)
        except OSError as exc:
            self._failed = self._failed or exc
            raise
        self._count += 1

    def finish(self, info: RunInfo, tasks: list[Task]) -> str:
        """Write results.json; returns its timestamp."""
        timestamp = utc_now()
        if self._failed is not None:
            self.discard()
            raise self._failed
        self._body.close()
        header = Results(timestamp=timestamp, info=info, tasks=tasks, simulations=[])
        try:
            with open(self._body_path, encoding="utf-8", newline="") as body:
                _atomic_write_parts(self.path, _with_body(header, iter(lambda: body.read(1 << 20), "")))
        finally:
            self._body_path.unlink(missing_ok=True)
        return timestamp

    def discard(self) -> None:
        with contextlib.suppress(OSError):  # what it could not flush is thrown away anyway
            self._body.close()
        self._body_path.unlink(missing_ok=True)


def _with_body(header: Results, body: Iterable[str]) -> Iterator[str]:
    parts = list(results_json_parts(header))
    yield from parts[:-1]  # up to and with `"simulations": [` (no simulation yet)
    yield from body
    yield parts[-1]


def _tasks_json_parts(tasks: list[Task]) -> Iterator[str]:
    yield "[\n"
    yield ",\n".join(f"  {task.model_dump_json()}" for task in tasks)
    yield "\n]\n"


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
    """A results.json, or a run directory: its results.json, or for a run cut short what it saved."""
    if path.is_dir() and not (path / RESULTS_FILE).exists():
        return ResultsDir(path).partial_results()
    file = path / RESULTS_FILE if path.is_dir() else path
    if not file.exists():
        raise ConfigError(f"{path}: no {RESULTS_FILE} here")
    try:
        return Results.model_validate_json(read_text(file))
    except ValidationError as exc:
        raise ConfigError(f"{file}: not a tauproxy results file ({_first_error(exc)})") from None
