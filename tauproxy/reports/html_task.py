"""The task panel of one trial: what the user simulator was told, the golden actions, and each
evaluation criterion with whether it held in this trial; then the agent's system prompt and policy.

Which criteria held comes from the trial's reward info (the checks the evaluator ran); a criterion
the evaluator did not check (its kind is not in the task's reward basis, so our engine skips it)
reads "not checked", never failed. A check that matches no criterion of the task (the task is not in
the results) is still listed, so nothing the reward info says is lost.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from tauproxy.data_model.call import CallRecord
from tauproxy.data_model.result import ModelInfo, RewardInfo, SimulationRun
from tauproxy.data_model.task import Action, EvaluationCriteria, RewardType, StructuredInstructions, Task
from tauproxy.reports.html_data import PageData, lazy_value
from tauproxy.reports.markup import cell, element, row, table
from tauproxy.reports.recorded_calls import RecordedCalls
from tauproxy.reports.trajectory import CheckRow, call_label, reward_checks

HELD = {True: "✓ held", False: "✗ failed", None: "not checked"}


def task_panel(run: SimulationRun, task: Task | None) -> str:
    if task is None:
        checks = reward_checks(run.reward_info)
        note = element("p", f"Task {run.task_id}: its definition is not at hand here; the checks its reward ran:")
        return element("h4", "Task") + note + (_checks_table(checks) if checks else "")
    parts = [element("h4", f"Task {task.id}")]
    purpose = _purpose(task)
    if purpose:
        parts.append(element("p", purpose, class_="purpose"))
    parts.append(_scenario(task))
    criteria = task.evaluation_criteria
    info = run.reward_info
    parts.append(_golden_actions(task.golden_actions(), info, criteria))
    parts.append(_criteria(criteria, info))
    leftover = _unmatched_checks(task, info)
    if leftover:
        parts += [element("p", "Checks in the reward info that match no criterion of the task:"), leftover]
    return element("div", class_="task", children="".join(parts))


def _purpose(task: Task) -> str:
    description = task.description
    if isinstance(description, str):
        return description
    if isinstance(description, dict):
        return " ".join(str(description[name]) for name in ("purpose", "notes") if description.get(name))
    return ""


def _scenario(task: Task) -> str:
    scenario = task.user_scenario
    facts: list[tuple[str, str]] = []
    if scenario.persona:
        facts.append(("persona", scenario.persona))
    instructions = scenario.instructions
    if isinstance(instructions, StructuredInstructions):
        facts += [
            (name.replace("_", " "), value)
            for name, value in (
                ("reason_for_call", instructions.reason_for_call),
                ("known_info", instructions.known_info),
                ("unknown_info", instructions.unknown_info),
                ("task_instructions", instructions.task_instructions),
            )
            if value
        ]
    else:
        facts.append(("instructions", instructions))
    initial = task.initial_state
    if initial is not None and initial.message_history:
        facts.append(("starts from", f"{len(initial.message_history)} messages of history"))
    if initial is not None and initial.initialization_actions:
        done = ", ".join(call_label(a.func_name, a.arguments) for a in initial.initialization_actions)
        facts.append(("set up by", done))
    pairs = "".join(element("dt", name) + element("dd", value) for name, value in facts)
    return element("h5", "User scenario") + element("dl", class_="scenario", children=pairs)


def _basis(criteria: EvaluationCriteria | None, info: RewardInfo | None) -> set[RewardType]:
    if info is not None and info.reward_basis:
        return set(info.reward_basis)
    return set(criteria.reward_basis) if criteria is not None else set()


def _counts(kind: RewardType, basis: set[RewardType]) -> str:
    return "yes" if kind in basis else "no"


def _held(held: bool | None) -> str:
    return cell(HELD[held], class_={True: "held", False: "failed", None: "unchecked"}[held])


def _golden_actions(actions: list[Action], info: RewardInfo | None, criteria: EvaluationCriteria | None) -> str:
    title = element("h5", "Golden actions")
    if not actions:
        return title + element("p", "none: the task expects no tool call")
    checks = {check.action.action_id: check for check in (info.action_checks or [])} if info else {}
    counts = _counts(RewardType.ACTION, _basis(criteria, info))
    rows = []
    for number, action in enumerate(actions, 1):
        check = checks.get(action.action_id)
        compared = f"compares {', '.join(action.compare_args)}" if action.compare_args is not None else "all arguments"
        rows.append(
            row(
                cell(str(number), number=True),
                cell(action.requestor),
                cell(call_label(action.name, action.arguments), class_="code"),
                cell(compared),
                cell(counts),
                _held(check.action_match if check else None),
            )
        )
    return title + table(["#", "by", "call", "match on", "in reward", "this trial"], rows)


def _criteria(criteria: EvaluationCriteria | None, info: RewardInfo | None) -> str:
    title = element("h5", "Evaluation criteria")
    if criteria is None:
        return title + element("p", "none: the task has no evaluation criteria")
    basis = _basis(criteria, info)
    rows: list[str] = []
    if RewardType.DB in basis or (info is not None and info.db_check is not None):
        held = info.db_check.db_match if info is not None and info.db_check is not None else None
        rows.append(_criterion(RewardType.DB, "the database ends as the golden actions leave it", basis, held))
    env_checks = {json.dumps(c.env_assertion.model_dump(mode="json"), sort_keys=True): c for c in _env(info)}
    for assertion in criteria.env_assertions or []:
        check = env_checks.get(json.dumps(assertion.model_dump(mode="json"), sort_keys=True))
        called = call_label(assertion.func_name, assertion.arguments)
        label = f"{assertion.env_type}: {called} is {assertion.assert_value!r}"
        why = assertion.message or ""
        if check is not None and check.actual_value is not None and not check.met:
            why = f"{why}; got {check.actual_value!r}".lstrip("; ")
        rows.append(_criterion(RewardType.ENV_ASSERTION, label, basis, check.met if check else None, why))
    communicated = {c.info: c for c in (info.communicate_checks or [])} if info else {}
    for text in criteria.communicate_info or []:
        found = communicated.get(text)
        held, why = (found.met, found.justification) if found else (None, "")
        rows.append(_criterion(RewardType.COMMUNICATE, f"tells the user: {text}", basis, held, why))
    judged = {c.nl_assertion: c for c in (info.nl_assertions or [])} if info else {}
    for text in criteria.nl_assertions or []:
        verdict = judged.get(text)
        held, why = (verdict.met, verdict.justification) if verdict else (None, "")
        rows.append(_criterion(RewardType.NL_ASSERTION, text, basis, held, why))
    listed = {
        RewardType.ACTION: criteria.actions,
        RewardType.ENV_ASSERTION: criteria.env_assertions,
        RewardType.COMMUNICATE: criteria.communicate_info,
        RewardType.NL_ASSERTION: criteria.nl_assertions,
    }
    for kind, items in listed.items():
        if kind in basis and not items:  # in the reward with nothing to check: its part is 1
            rows.append(
                _criterion(kind, "none listed, so nothing can fail", basis, None, "its part of the reward is 1")
            )
    names = ", ".join(kind.value for kind in criteria.reward_basis)
    line = element("p", f"reward basis: {names} (a criterion whose kind is not in it does not change the reward)")
    return title + line + (table(["kind", "criterion", "in reward", "this trial", "why"], rows) if rows else "")


def _criterion(kind: RewardType, label: str, basis: set[RewardType], held: bool | None, why: str = "") -> str:
    return row(cell(kind.value), cell(label), cell(_counts(kind, basis)), _held(held), cell(why))


def _env(info: RewardInfo | None) -> list[Any]:
    return list(info.env_assertions or []) if info is not None else []


def _unmatched_checks(task: Task, info: RewardInfo | None) -> str:
    """Checks of kinds the criteria table cannot place: actions not among the golden ones, and
    env, communicate and NL checks whose text is not one of the task's."""
    if info is None:
        return ""
    criteria = task.evaluation_criteria or EvaluationCriteria()
    known = {
        "ACTION": {call_label(action.name, action.arguments) for action in task.golden_actions()},
        "ENV_ASSERTION": {call_label(a.func_name, a.arguments) for a in criteria.env_assertions or []},
        "COMMUNICATE": set(criteria.communicate_info or []),
        "NL_ASSERTION": set(criteria.nl_assertions or []),
    }
    extra = [check for check in reward_checks(info) if check.kind != "DB" and check.label not in known[check.kind]]
    return _checks_table(extra) if extra else ""


def _checks_table(checks: list[CheckRow]) -> str:
    rows = [row(cell(c.kind), cell(c.label), _held(c.met), cell(c.detail)) for c in checks]
    return table(["kind", "check", "this trial", "why"], rows)


# -- the agent's system prompt ------------------------------------------------------------------

_POLICY = re.compile(r"<policy>\s*(.*?)\s*</policy>", re.S)


def prompt_panel(run: SimulationRun, agent: ModelInfo, calls: RecordedCalls, data: PageData) -> str:
    """The agent's system prompt and policy, folded, as the agent was actually sent them: the
    system message of the trial's first recorded agent request (the results keep only its sha256).
    The text goes into the page's data once, however many trials share it."""
    first = next((call for call in sorted(run.calls, key=lambda c: c.index) if call.role == "agent"), None)
    prompt = _system_text(calls, first)
    if prompt is None:
        if first is not None:
            why = calls.absence(first)
        elif run.calls:
            why = "the trial made no agent call"
        else:
            why = "the results keep no call records for this trial (τ²-bench files keep none)"
        digest = (
            f"; its sha256 in the results is {agent.system_prompt_sha256[:12]}" if agent.system_prompt_sha256 else ""
        )
        return element("p", f"Agent system prompt: not shown: {why}{digest}.", class_="absent")
    digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
    checked = ""
    if agent.system_prompt_sha256:
        same = digest == agent.system_prompt_sha256
        checked = " (as the run recorded it)" if same else " (the run recorded another)"
    where = f"sent in call #{first.index}" if first is not None else "sent"
    found = _POLICY.search(prompt)
    instructions = (_POLICY.sub("", prompt).strip() if found else prompt) or "(empty)"
    title = f"Agent system prompt: {len(prompt):,} characters, {where}, sha256 {digest[:12]}{checked}"
    parts = [_fold(title, instructions, data)]
    if found:
        policy = found.group(1)
        parts.append(_fold(f"Policy: {len(policy):,} characters, the prompt's <policy> block", policy, data))
    else:
        parts.append(element("p", "Policy: not marked apart in the prompt (no <policy> block).", class_="absent"))
    return "".join(parts)


def _fold(title: str, text: str, data: PageData) -> str:
    return element("details", class_="prompt", children=element("summary", title) + lazy_value(data, text))


def _system_text(calls: RecordedCalls, first: CallRecord | None) -> str | None:
    recorded = calls.of(first) if first is not None else None
    if recorded is None:
        return None
    for message in recorded.request.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "system":
            return _text(message.get("content"))
    return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: the text ones, joined
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""
