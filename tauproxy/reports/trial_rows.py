"""One flat row per trial, for spreadsheets and data frames: `report --format csv` and `tauproxy.api`.

A row says what the trial scored (the reward and each reward component), how it ended, where its
model calls came from and what they cost and used, by role. What the input does not say stays
unknown (an empty cell, never 0):

- a τ²-bench file keeps no call records, so its live, replayed and shared counts and its live cost are
  unknown (a serve run log joined on fills them in); its tokens come from the usage τ² keeps per
  message (agent and user only);
- a call with no price makes its role's cost unknown, and the trial's total with it;
- a trial that was not graded (an infrastructure error) has no reward, not a reward of 0.

`cost_usd` (per role and in total) is every call at its price, live or replayed: what the trial
costs; `live_cost_usd` is what was actually spent.
"""

from __future__ import annotations

import csv
import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel

from tauproxy.data_model.call import CallRecord, CallRole, role_cost
from tauproxy.data_model.result import Results, SimulationRun, TerminationReason
from tauproxy.data_model.task import RewardType
from tauproxy.errors import ConfigError
from tauproxy.reports.metrics import BASIS_ORDER
from tauproxy.reports.paired import trial_cost
from tauproxy.results.provenance import ObservedCall, observed_calls_of, origin_of, task_order

ROLES: tuple[CallRole, ...] = ("agent", "user", "judge")
# The roles whose usage τ²-bench keeps per message (its agent's and user simulator's).
OBSERVED_ROLES: frozenset[CallRole] = frozenset({"agent", "user"})

Cell = str | int | float | None


class RoleUse(BaseModel):
    """One role's calls in one trial; None: unknown."""

    cost_usd: float | None
    prompt_tokens: int | None
    completion_tokens: int | None


class TrialRow(BaseModel):
    task: str
    trial: int
    seed: int
    reward: float | None  # None: not graded (an infrastructure error is never a score)
    components: dict[RewardType, float]  # the reward breakdown, as far as the task's basis has it
    termination: TerminationReason
    live_calls: int | None
    replayed_calls: int | None
    shared_calls: int | None  # answered by the run's own live call to the identical sample
    cost_usd: float | None
    live_cost_usd: float | None
    agent: RoleUse
    user: RoleUse
    judge: RoleUse

    def role(self, name: CallRole) -> RoleUse:
        return {"agent": self.agent, "user": self.user, "judge": self.judge}[name]


def trial_rows(results: Results) -> list[TrialRow]:
    """A row per trial, in task order (as the results list their tasks), then by trial."""
    order = {task_id: index for index, task_id in enumerate(task_order(results))}
    runs = sorted(results.simulations, key=lambda run: (order.get(run.task_id, len(order)), run.trial))
    observed = observed_calls_of(results)
    # Our own runs keep a record of every call, so a trial without any made none; only a foreign
    # file's trial without records is a trial whose calls are unknown.
    ours = origin_of(results) == "tauproxy"
    return [_row(run, ours or bool(run.calls), observed.get(run.id)) for run in runs]


def _row(run: SimulationRun, calls_known: bool, observed: list[ObservedCall] | None) -> TrialRow:
    roles = {role: _role_use(run, role, calls_known, observed) for role in ROLES}
    info = run.reward_info
    return TrialRow(
        task=run.task_id,
        trial=run.trial,
        seed=run.seed,
        reward=info.reward if info is not None else None,
        components=dict(info.reward_breakdown or {}) if info is not None else {},
        termination=run.termination_reason,
        live_calls=sum(call.source == "live" for call in run.calls) if calls_known else None,
        replayed_calls=sum(call.source == "replay" for call in run.calls) if calls_known else None,
        shared_calls=sum(call.source == "shared" for call in run.calls) if calls_known else None,
        cost_usd=_rounded(trial_cost(run)),
        live_cost_usd=_live_cost(run.calls) if calls_known else None,
        agent=roles["agent"],
        user=roles["user"],
        judge=roles["judge"],
    )


def _role_use(run: SimulationRun, role: CallRole, calls_known: bool, observed: list[ObservedCall] | None) -> RoleUse:
    reported = {"agent": run.agent_cost, "user": run.user_cost, "judge": run.judge_cost}[role]
    cost = _rounded(role_cost(run.calls, role) if run.calls else reported)
    if calls_known:
        mine = [call.usage for call in run.calls if call.role == role]
    elif observed is not None and role in OBSERVED_ROLES:
        mine = [call.usage for call in observed if call.role == role]
    else:
        return RoleUse(cost_usd=cost, prompt_tokens=None, completion_tokens=None)
    return RoleUse(
        cost_usd=cost,
        prompt_tokens=sum(u.prompt_tokens for u in mine),
        completion_tokens=sum(u.completion_tokens for u in mine),
    )


def _live_cost(calls: list[CallRecord]) -> float | None:
    costs = [call.cost_usd for call in calls if call.source == "live"]
    if any(cost is None for cost in costs):
        return None
    return _rounded(sum(cost for cost in costs if cost is not None))


def _rounded(usd: float | None) -> float | None:
    """To 1e-10 USD, as the cost summary rounds: sums of float prices carry noise in the last digits."""
    return None if usd is None else round(usd, 10)


def component_column(basis: RewardType) -> str:
    return f"reward_{basis.value.lower()}"


def columns(rows: Sequence[TrialRow]) -> list[str]:
    """The flat columns: a reward component's column only when some row has that component."""
    present = {basis for row in rows for basis in row.components}
    bases = [b for b in BASIS_ORDER if b in present] + sorted(present - set(BASIS_ORDER))
    by_role = [f"{role}_{part}" for role in ROLES for part in ("cost_usd", "prompt_tokens", "completion_tokens")]
    return [
        "task",
        "trial",
        "seed",
        "reward",
        *map(component_column, bases),
        "termination",
        "live_calls",
        "replayed_calls",
        "shared_calls",
        "cost_usd",
        "live_cost_usd",
        *by_role,
    ]


def flat(row: TrialRow) -> dict[str, Cell]:
    """The row as one level of named cells (None: unknown, or a component the task does not use)."""
    cells: dict[str, Cell] = {"task": row.task, "trial": row.trial, "seed": row.seed, "reward": row.reward}
    cells.update({component_column(basis): value for basis, value in row.components.items()})
    cells.update(
        {
            "termination": row.termination.value,
            "live_calls": row.live_calls,
            "replayed_calls": row.replayed_calls,
            "shared_calls": row.shared_calls,
            "cost_usd": row.cost_usd,
            "live_cost_usd": row.live_cost_usd,
        }
    )
    for role in ROLES:
        use = row.role(role)
        cells.update(
            {
                f"{role}_cost_usd": use.cost_usd,
                f"{role}_prompt_tokens": use.prompt_tokens,
                f"{role}_completion_tokens": use.completion_tokens,
            }
        )
    return cells


def write_csv(rows: Sequence[TrialRow], target: Path | str | IO[str]) -> None:
    """The rows as CSV with a header line, to a file path or an open text stream; unknown is empty."""
    if isinstance(target, str | Path):
        try:
            with Path(target).open("w", encoding="utf-8", newline="") as stream:
                _write(rows, stream)
        except OSError as exc:
            raise ConfigError(f"{target}: cannot write CSV: {exc.strerror or exc}") from None
    else:
        _write(rows, target)


def _write(rows: Sequence[TrialRow], stream: IO[str]) -> None:
    writer = csv.DictWriter(stream, fieldnames=columns(rows), lineterminator="\n")
    writer.writeheader()
    writer.writerows(flat(row) for row in rows)


def to_dataframe(rows: Sequence[TrialRow]) -> Any:
    """The rows as a `pandas.DataFrame` with the CSV's columns (unknown is missing). pandas is
    optional: it is imported here, and only here (by name, as it ships no type information)."""
    try:
        pandas = importlib.import_module("pandas")
    except ImportError:
        raise ConfigError(
            "to_dataframe needs pandas, which tauproxy does not install: pip install pandas "
            "(or write_csv, which needs nothing)"
        ) from None
    data: list[dict[str, Any]] = [flat(row) for row in rows]
    return pandas.DataFrame(data, columns=columns(rows))
