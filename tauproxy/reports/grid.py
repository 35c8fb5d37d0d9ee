"""The per-task grid: one cell per trial, saying whether it passed and where its model calls came from."""

from __future__ import annotations

from collections import OrderedDict
from typing import Literal

from pydantic import BaseModel

from tauproxy.data_model.result import SimulationRun
from tauproxy.reports.metrics import EXCLUDED_TERMINATIONS, is_success

CellSource = Literal["live", "replayed", "mixed", "unknown"]


def call_source(run: SimulationRun) -> CellSource:
    """Where a trial's calls came from; "unknown" when it kept no call records (a τ²-bench file).

    A shared call got this run's own live answer to an identical sample: live, as far as the trial's
    answers are concerned (new, not read from a cassette).
    """
    kinds = {"live" if call.source == "shared" else call.source for call in run.calls}
    if not kinds:
        return "unknown"
    if kinds == {"live"}:
        return "live"
    if kinds == {"replay"}:
        return "replayed"
    return "mixed"


class GridCell(BaseModel):
    trial: int
    seed: int
    success: bool
    source: CellSource
    reward: float | None
    termination_reason: str
    # Infrastructure errors are shown but do not count toward pass^k.
    excluded: bool


class GridRow(BaseModel):
    task_id: str
    trials: list[GridCell]


def grid_cell(run: SimulationRun) -> GridCell:
    """One trial's cell of the grid."""
    return GridCell(
        trial=run.trial,
        seed=run.seed,
        success=is_success(run),
        source=call_source(run),
        reward=run.reward_info.reward if run.reward_info else None,
        termination_reason=run.termination_reason.value,
        excluded=run.termination_reason in EXCLUDED_TERMINATIONS,
    )


def trial_grid(runs: list[SimulationRun], task_order: list[str]) -> list[GridRow]:
    rows: OrderedDict[str, list[GridCell]] = OrderedDict((task_id, []) for task_id in task_order)
    for run in sorted(runs, key=lambda r: r.trial):
        rows.setdefault(run.task_id, []).append(grid_cell(run))
    return [GridRow(task_id=task_id, trials=cells) for task_id, cells in rows.items() if cells]
