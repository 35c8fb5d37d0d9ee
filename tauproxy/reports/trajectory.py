"""One trajectory, ready to show: which trial to pick, tool results by call, reward checks as rows.

Shared by `tauproxy view` and the HTML report so both show the same checks the same way.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from tauproxy.data_model.message import Message
from tauproxy.data_model.result import Results, RewardInfo, SimulationRun
from tauproxy.errors import ConfigError
from tauproxy.reports.metrics import is_success


def select_trial(results: Results, task_id: str | None, trial: int | None) -> SimulationRun:
    """The asked trial; without one, the first failing trial (the one worth reading), else the first."""
    runs = results.simulations
    if not runs:
        raise ConfigError("these results hold no trials")
    if task_id is None:
        if trial is not None:
            raise ConfigError("--trial needs --task")
        return next((run for run in runs if not is_success(run)), runs[0])
    of_task = [run for run in runs if run.task_id == task_id]
    if not of_task:
        known = ", ".join(dict.fromkeys(run.task_id for run in runs))
        raise ConfigError(f"no trials of task {task_id!r} (tasks: {known})")
    if trial is None:
        return next((run for run in of_task if not is_success(run)), of_task[0])
    for run in of_task:
        if run.trial == trial:
            return run
    trials = ", ".join(str(run.trial) for run in of_task)
    raise ConfigError(f"task {task_id!r} has no trial {trial} (trials: {trials})")


def tool_names_by_call(messages: list[Message]) -> dict[str, str]:
    """Tool call id -> tool name, so a tool result can say which call it answers."""
    return {call.id: call.name for m in messages for call in m.tool_calls or []}


def call_label(name: str, arguments: dict[str, Any]) -> str:
    return f"{name}({json.dumps(arguments, sort_keys=True, ensure_ascii=False)})"


class CheckRow(BaseModel):
    kind: str
    label: str
    met: bool
    detail: str = ""


def reward_checks(info: RewardInfo | None) -> list[CheckRow]:
    if info is None:
        return []
    rows: list[CheckRow] = []
    if info.db_check is not None:
        rows.append(
            CheckRow(kind="DB", label="database matches the golden actions' end state", met=info.db_check.db_match)
        )
    for env in info.env_assertions or []:
        assertion = env.env_assertion
        rows.append(
            CheckRow(
                kind="ENV_ASSERTION",
                label=call_label(assertion.func_name, assertion.arguments),
                met=env.met,
                detail=assertion.message or "",
            )
        )
    for action in info.action_checks or []:
        rows.append(
            CheckRow(
                kind="ACTION", label=call_label(action.action.name, action.action.arguments), met=action.action_match
            )
        )
    for communicate in info.communicate_checks or []:
        rows.append(
            CheckRow(kind="COMMUNICATE", label=communicate.info, met=communicate.met, detail=communicate.justification)
        )
    for nl in info.nl_assertions or []:
        rows.append(CheckRow(kind="NL_ASSERTION", label=nl.nl_assertion, met=nl.met, detail=nl.justification))
    return rows
