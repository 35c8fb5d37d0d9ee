"""The runs under a directory, for `tauproxy view DIR --html OUT`: one page listing each run.

A run is a tauproxy run directory (it holds results.json, or run.json and simulations.jsonl when it
was cut short; nothing under it is searched further) or a τ²-bench simulations file (`NAME.json`).
Every other `.json` file is skipped with the reason (a τ² metrics file `NAME_results.json`, a file that
is not results, one that cannot be read): a directory of runs holds other things, and one bad file
must not hide the rest. Directories whose name starts with a dot (.git, .venv) are not searched.

Each run's own report (the full HTML report) is written beside the index, in `NAME_files/` next to
`NAME.html` (as a browser saves a page), named after the run's path under DIR: the index and its
reports move together as one folder, and `view runs --html runs.html` writes nothing into runs/.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

from tauproxy.data_model.result import Results
from tauproxy.errors import ConfigError
from tauproxy.reports.html import render_html
from tauproxy.reports.summary import ReportSummary, summarize
from tauproxy.results.load import load_any_results
from tauproxy.results.run_dir import RESULTS_FILE, RUN_INFO_FILE, SIMULATIONS_FILE, read_text
from tauproxy.results.tau2_format import looks_like_tau2_metrics, looks_like_tau2_simulations
from tauproxy.store.format import CALLS_FILE


class IndexedRun(BaseModel):
    """One run of the index: where it is (under the index's root), its report and the page it got."""

    path: str
    timestamp: str | None
    summary: ReportSummary
    # The run's HTML report, relative to the index page.
    report: str


class SkippedFile(BaseModel):
    path: str
    reason: str


class RunsIndex(BaseModel):
    root: str
    runs: list[IndexedRun]
    skipped: list[SkippedFile]


def reports_dir(out: Path) -> Path:
    """Where the index page `out` keeps the runs' reports: `NAME_files/` beside `NAME.html`."""
    return out.parent / f"{out.stem}_files"


def is_run_dir(path: Path) -> bool:
    """A tauproxy run directory: finished (results.json) or cut short (run.json and simulations.jsonl)."""
    return (path / RESULTS_FILE).is_file() or ((path / RUN_INFO_FILE).is_file() and (path / SIMULATIONS_FILE).exists())


def index_runs(root: Path, out: Path) -> RunsIndex:
    """Read every run under `root`, write each one's report into `reports_dir(out)`; the index.

    The index page itself is `render_runs_index` (tauproxy/reports/html_runs_index.py)."""
    if not root.is_dir():
        raise ConfigError(f"{root}: no such directory")
    if not out.parent.is_dir():
        raise ConfigError(f"{out}: cannot write the page: no directory {out.parent}")
    reports = reports_dir(out)
    runs: list[IndexedRun] = []
    skipped: list[SkippedFile] = []
    used: set[str] = set()
    for found in _candidates(root):
        name = found.relative_to(root).as_posix()
        loaded = _load(found)
        if isinstance(loaded, str):
            skipped.append(SkippedFile(path=name, reason=loaded))
            continue
        summary = summarize(loaded)
        page = f"{_slug(name, used)}.html"
        _write(reports / page, render_html(summary, loaded))
        runs.append(IndexedRun(path=name, timestamp=loaded.timestamp, summary=summary, report=f"{reports.name}/{page}"))
    if not runs:
        said = "".join(f"; {s.path}: {s.reason}" for s in skipped[:3])
        raise ConfigError(f"{root}: no runs under it (no results.json, no τ²-bench simulations file){said}")
    return RunsIndex(root=str(root), runs=runs, skipped=skipped)


def _candidates(root: Path) -> Iterator[Path]:
    """Run directories and `.json` files under `root`, in path order; a run directory is not entered."""
    for directory, subdirs, files in os.walk(root):
        here = Path(directory)
        if is_run_dir(here) and here != root:
            subdirs[:] = []
            yield here
            continue
        if (here / CALLS_FILE).is_file():  # a cassette: its manifest and prices are not runs, nor worth a note
            subdirs[:] = []
            continue
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        yield from (here / name for name in sorted(files) if name.endswith(".json"))


def _load(path: Path) -> Results | str:
    """The run at `path`, or why it is not one."""
    if path.is_file():
        try:
            data = json.loads(read_text(path))
        except (ConfigError, ValueError) as exc:
            return f"not JSON ({exc})"
        if looks_like_tau2_metrics(data):
            return "τ²-bench's metrics file (its simulations file is the run)"
        is_ours = isinstance(data, dict) and isinstance(data.get("info"), dict) and "simulations" in data
        if not looks_like_tau2_simulations(data) and not is_ours:
            return "not a results file"
    try:
        return load_any_results(path)
    except (ConfigError, OSError, ValueError) as exc:
        return str(exc).removeprefix(f"{path}: ")


def _slug(name: str, used: set[str]) -> str:
    """A file name from the run's path under the root: `a/b/results` -> `a__b`, unique in the index."""
    stem = name.removesuffix(".json").replace("/", "__")
    base = _UNSAFE.sub("_", stem) or "run"
    slug, n = base, 1
    while slug in used:
        slug, n = f"{base}.{n}", n + 1
    used.add(slug)
    return slug


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc}") from None
