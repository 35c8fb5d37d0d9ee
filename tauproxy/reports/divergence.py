"""Where two trials of the same task part ways, and why.

The engine is deterministic given the model answers, so two trials with the same settings produce
the same messages until some call answers differently. The first differing message therefore
points at its cause:

- the k-th assistant message after the opening is the k-th agent call's answer, and the k-th user
  message the k-th user-simulator call's; a tool message comes from the environment;
- the same request key with a different answer is resampling noise; a different key means the
  request itself changed, and the run settings say what changed it;
- identical messages with different rewards leave the judge (or the grading itself).
"""

from __future__ import annotations

import difflib
from enum import StrEnum
from typing import Any

from pydantic import BaseModel

from tauproxy.data_model.call import CallRecord, CallRole
from tauproxy.data_model.key import canonical_json, without_connection_settings
from tauproxy.data_model.message import Message
from tauproxy.data_model.result import ModelInfo, RunInfo, SimulationRun
from tauproxy.data_model.task import Task
from tauproxy.store.cassette import Cassette
from tauproxy.store.diff import describe_request_difference
from tauproxy.store.entry import CassetteEntry

MAX_DIFF_LINES = 30
MAX_LINE_WIDTH = 200


class Cause(StrEnum):
    PROMPT_OR_TOOLS_CHANGED = "prompt_or_tools_changed"
    MODEL_OR_PARAMS_CHANGED = "model_or_params_changed"
    RESAMPLING_NOISE = "resampling_noise"
    TOOL_OUTPUT_CHANGED = "tool_output_changed"
    USER_SIMULATOR_CHANGED = "user_simulator_changed"
    JUDGE_CHANGED = "judge_changed"
    NO_DIVERGENCE = "no_divergence"
    # Beyond the list: the task's own opening messages differ, or nothing recorded explains it.
    TASK_CHANGED = "task_changed"
    UNEXPLAINED = "unexplained"


class Divergence(BaseModel):
    """The first point where two paired trials differ.

    message_index/message_role: the first differing message (None when the transcripts are equal).
    call_index/call_role: the first call whose answer or request differs: the call that produced that
    message; after a tool message, the next call (which saw the changed result); with equal
    transcripts, the first differing judge call. key_a/key_b are that call's request keys.
    """

    cause: Cause
    detail: str
    message_index: int | None = None
    message_role: str | None = None
    call_index: int | None = None
    call_role: CallRole | None = None
    key_a: str | None = None
    key_b: str | None = None
    message_diff: str = ""
    request_diff: str | None = None


# -- run settings -----------------------------------------------------------------------------


def _sampling_args(info: ModelInfo) -> dict[str, Any]:
    # Connection settings (api_base, timeouts, ...) never change an answer; a new stub port is no change.
    return without_connection_settings(info.llm_args)


def setting_changes(a: RunInfo, b: RunInfo) -> dict[str, tuple[Any, Any]]:
    """Every setting that differs between two runs, as name -> (A's value, B's value)."""
    changes: dict[str, tuple[Any, Any]] = {}
    for role, left, right in (
        ("agent", a.agent_info, b.agent_info),
        ("user", a.user_info, b.user_info),
        ("judge", a.judge_info, b.judge_info),
    ):
        pairs = {
            "llm": (left.llm, right.llm),
            "llm_args": (_sampling_args(left), _sampling_args(right)),
            "system_prompt_sha256": (left.system_prompt_sha256, right.system_prompt_sha256),
        }
        changes.update({f"{role}.{name}": pair for name, pair in pairs.items() if pair[0] != pair[1]})
    for name in ("domain", "domain_sha256", "seed", "max_steps", "max_errors", "solo", "tauproxy_version"):
        left_value, right_value = getattr(a, name), getattr(b, name)
        if left_value != right_value:
            changes[name] = (left_value, right_value)
    return changes


def _named(changes: dict[str, tuple[Any, Any]], names: tuple[str, ...]) -> list[str]:
    return [
        f"{name}: {short_value(changes[name][0])} -> {short_value(changes[name][1])}"
        for name in names
        if name in changes
    ]


def short_value(value: Any) -> str:
    text = value if isinstance(value, str) else canonical_json(value)
    if isinstance(value, str) and len(value) == 64:
        return value[:12]  # a sha256: the prefix is enough to tell two apart
    return text if len(text) <= 80 else text[:79] + "…"


# -- message walking --------------------------------------------------------------------------


def opening_length(task: Task | None) -> int:
    """Messages before the first model call: the task's own history, else the greeting (or solo brief)."""
    history = task.initial_state.message_history if task and task.initial_state else None
    return len(history) if history else 1


def _same(left: Message, right: Message) -> bool:
    return left.model_dump(exclude={"turn_idx"}) == right.model_dump(exclude={"turn_idx"})


def first_difference(a: list[Message], b: list[Message]) -> int | None:
    for index in range(max(len(a), len(b))):
        if index >= len(a) or index >= len(b) or not _same(a[index], b[index]):
            return index
    return None


def _nth(calls: list[CallRecord], role: CallRole, n: int) -> CallRecord | None:
    mine = [call for call in calls if call.role == role]
    return mine[n] if 0 <= n < len(mine) else None


def _nth_dialogue_call(calls: list[CallRecord], n: int) -> CallRecord | None:
    dialogue = [call for call in calls if call.role != "judge"]
    return dialogue[n] if 0 <= n < len(dialogue) else None


def _message_lines(message: Message | None, ended: str) -> list[str]:
    if message is None:
        return [f"(no message: the conversation had ended, {ended})"]
    head = message.role + (f" ({message.requestor})" if message.requestor else "")
    lines = [head + (" [error]" if message.error else "")]
    lines += (message.content or "").splitlines()
    lines += [f"tool call {c.name}({canonical_json(c.arguments)}) id={c.id}" for c in message.tool_calls or []]
    if message.tool_call_id:
        lines.append(f"tool_call_id: {message.tool_call_id}")
    return lines


def unified(old: list[str], new: list[str]) -> str:
    """A unified diff of two line lists, clipped to MAX_DIFF_LINES lines of MAX_LINE_WIDTH characters."""
    lines = [
        line if len(line) <= MAX_LINE_WIDTH else line[: MAX_LINE_WIDTH - 1] + "…"
        for line in difflib.unified_diff(old, new, "A", "B", n=2, lineterm="")
    ]
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[: MAX_DIFF_LINES - 1], f"… {len(lines) - MAX_DIFF_LINES + 1} more lines"]
    return "\n".join(lines)


# -- the cassette side ------------------------------------------------------------------------


def _find(cassettes: list[Cassette], sample_key: str) -> tuple[Cassette, CassetteEntry] | None:
    for cassette in cassettes:
        entry = cassette.lookup(sample_key)
        if entry is not None:
            return cassette, entry
    return None


def request_diff(cassettes: list[Cassette], left: CallRecord | None, right: CallRecord | None) -> str | None:
    """The exact difference of two calls' requests, when the given cassettes hold both."""
    if left is None or right is None:
        return None
    found_a, found_b = _find(cassettes, left.sample_key), _find(cassettes, right.sample_key)
    if found_a is None or found_b is None:
        return None
    return describe_request_difference(found_b[0].request_of(found_b[1]), found_a[0].request_of(found_a[1]))


# -- classification ---------------------------------------------------------------------------


class TrialContext(BaseModel):
    """One paired trial and what the classifier needs around it."""

    a: SimulationRun
    b: SimulationRun
    task_a: Task | None = None
    task_b: Task | None = None
    changes: dict[str, tuple[Any, Any]] = {}

    def task_changed(self) -> bool:
        return (
            self.task_a is not None and self.task_b is not None and self.task_a.model_dump() != self.task_b.model_dump()
        )

    def notes(self) -> list[str]:
        notes = []
        if self.a.seed != self.b.seed:
            notes.append(f"trial seed: {self.a.seed} -> {self.b.seed}")
        if self.task_changed():
            notes.append("the task's definition differs between the runs")
        return notes


def explain(context: TrialContext, cassettes: list[Cassette]) -> Divergence:
    """Find the first divergence of a paired trial and classify its cause."""
    a, b = context.a, context.b
    index = first_difference(a.messages, b.messages)
    if index is None:
        return _judge_divergence(context, cassettes)
    left = a.messages[index] if index < len(a.messages) else None
    right = b.messages[index] if index < len(b.messages) else None
    message = right or left
    assert message is not None  # one side has a message at the first difference
    opening = opening_length(context.task_b or context.task_a)
    earlier = b.messages[opening:index] if right is not None else a.messages[opening:index]
    agent_before = sum(m.role == "assistant" for m in earlier)
    user_before = sum(m.role == "user" for m in earlier)
    diff = unified(_message_lines(left, a.termination_reason.value), _message_lines(right, b.termination_reason.value))
    found = Divergence(
        cause=Cause.UNEXPLAINED, detail="", message_index=index, message_role=message.role, message_diff=diff
    )
    if index < opening:
        found.cause, found.detail = Cause.TASK_CHANGED, "the task's opening messages differ"
        return found
    if message.role == "tool":
        call_a = _nth_dialogue_call(a.calls, agent_before + user_before)
        call_b = _nth_dialogue_call(b.calls, agent_before + user_before)
    else:
        role: CallRole = "agent" if message.role == "assistant" else "user"
        count = agent_before if role == "agent" else user_before
        call_a, call_b = _nth(a.calls, role, count), _nth(b.calls, role, count)
    _set_call(found, call_a, call_b)
    found.request_diff = request_diff(cassettes, call_a, call_b)
    if left is None or right is None:
        _classify_ended(found, context, ended="A" if left is None else "B")
    elif message.role == "tool":
        _classify_tool(found, context, index)
    elif message.role == "assistant":
        _classify_agent(found, context, call_a, call_b)
    else:
        _classify_user(found, context, call_a, call_b)
    return found


def _set_call(found: Divergence, call_a: CallRecord | None, call_b: CallRecord | None) -> None:
    call = call_b or call_a
    if call is not None:
        found.call_index, found.call_role = call.index, call.role
    found.key_a = call_a.key if call_a else None
    found.key_b = call_b.key if call_b else None


def _with_notes(text: str, extra: list[str]) -> str:
    return text + (f" ({'; '.join(extra)})" if extra else "")


def _same_key(call_a: CallRecord | None, call_b: CallRecord | None) -> bool:
    return call_a is not None and call_b is not None and call_a.key == call_b.key


def _classify_agent(found: Divergence, ctx: TrialContext, call_a: CallRecord | None, call_b: CallRecord | None) -> None:
    if _same_key(call_a, call_b):
        found.cause = Cause.RESAMPLING_NOISE
        found.detail = "the agent was sent the same request (same key) and answered differently"
        return
    prompt = _named(ctx.changes, ("agent.system_prompt_sha256", "domain_sha256"))
    model = _named(ctx.changes, ("agent.llm", "agent.llm_args"))
    if ctx.a.seed != ctx.b.seed:
        model.append(f"trial seed: {ctx.a.seed} -> {ctx.b.seed}")
    if prompt:
        found.cause = Cause.PROMPT_OR_TOOLS_CHANGED
        found.detail = _with_notes(
            "the agent's request changed with its system prompt or the domain's tools", prompt + model
        )
    elif model:
        found.cause = Cause.MODEL_OR_PARAMS_CHANGED
        found.detail = _with_notes("the agent's model or sampling parameters changed", model)
    else:
        found.detail = _with_notes(
            "the agent's requests differ although no recorded setting does (agent code or tauproxy changed?)",
            _named(ctx.changes, ("tauproxy_version",)) + ctx.notes(),
        )


def _classify_user(found: Divergence, ctx: TrialContext, call_a: CallRecord | None, call_b: CallRecord | None) -> None:
    if _same_key(call_a, call_b):
        found.cause = Cause.RESAMPLING_NOISE
        found.detail = "the user simulator was sent the same request (same key) and answered differently"
        return
    # The user's view of an identical prefix is identical, so its request changed with its own model,
    # args, scenario or the domain's user side (user policy, device tools).
    reasons = _named(ctx.changes, ("user.llm", "user.llm_args", "domain_sha256")) + ctx.notes()
    found.cause = Cause.USER_SIMULATOR_CHANGED
    found.detail = _with_notes("the user simulator's request changed", reasons)


def _classify_tool(found: Divergence, ctx: TrialContext, index: int) -> None:
    call_id = ctx.b.messages[index].tool_call_id
    name = next((c.name for m in ctx.b.messages[:index] for c in m.tool_calls or [] if c.id == call_id), None)
    found.cause = Cause.TOOL_OUTPUT_CHANGED
    what = f"tool {name}" if name else "a tool"
    reasons = _named(ctx.changes, ("domain_sha256",)) + ctx.notes()
    found.detail = _with_notes(f"the same call of {what} returned a different result (environment or domain)", reasons)


def _classify_ended(found: Divergence, ctx: TrialContext, ended: str) -> None:
    run = ctx.a if ended == "A" else ctx.b
    reasons = _named(ctx.changes, ("max_steps", "max_errors")) + ctx.notes()
    found.detail = _with_notes(
        f"{ended}'s conversation ended here ({run.termination_reason.value}) while the other went on", reasons
    )


def _verdicts(run: SimulationRun) -> list[tuple[str, bool]]:
    checks = run.reward_info.nl_assertions if run.reward_info else None
    return [(check.nl_assertion, check.met) for check in checks or []]


def _reward_lines(run: SimulationRun) -> list[str]:
    info = run.reward_info
    lines = [f"termination: {run.termination_reason.value}", f"reward: {info.reward if info else None}"]
    if info is not None:
        lines += [f"{basis}: {value}" for basis, value in (info.reward_breakdown or {}).items()]
        lines += [f"{'met' if met else 'not met'}: {text}" for text, met in _verdicts(run)]
    return lines


def _first_key_difference(keys_a: list[str], keys_b: list[str]) -> int:
    """The first judge call whose key differs, or that only one side made; 0 when all agree."""
    for index in range(max(len(keys_a), len(keys_b))):
        if index >= len(keys_a) or index >= len(keys_b) or keys_a[index] != keys_b[index]:
            return index
    return 0


def _judge_divergence(ctx: TrialContext, cassettes: list[Cassette]) -> Divergence:
    judge_a = [call for call in ctx.a.calls if call.role == "judge"]
    judge_b = [call for call in ctx.b.calls if call.role == "judge"]
    found = Divergence(
        cause=Cause.NO_DIVERGENCE, detail="", message_diff=unified(_reward_lines(ctx.a), _reward_lines(ctx.b))
    )
    changed = _named(ctx.changes, ("judge.llm", "judge.llm_args"))
    keys_a, keys_b = [c.key for c in judge_a], [c.key for c in judge_b]
    # A judge setting change explains nothing for a trial that never called the judge.
    if (judge_a or judge_b) and (changed or keys_a != keys_b):
        position = _first_key_difference(keys_a, keys_b)
        pair = (
            judge_a[position] if position < len(judge_a) else None,
            judge_b[position] if position < len(judge_b) else None,
        )
        _set_call(found, *pair)
        found.request_diff = request_diff(cassettes, *pair)
        found.cause = Cause.JUDGE_CHANGED
        found.detail = _with_notes("same transcript, different judge or judge requests", changed + ctx.notes())
    elif judge_a and _verdicts(ctx.a) != _verdicts(ctx.b):
        _set_call(found, judge_a[0], judge_b[0] if judge_b else None)
        found.cause = Cause.RESAMPLING_NOISE
        found.detail = "same transcript and judge requests, but the judge answered differently"
    else:
        found.detail = _with_notes(
            "same transcript and judge verdicts; the grading itself differs (evaluation criteria or domain)",
            _named(ctx.changes, ("domain_sha256",)) + ctx.notes(),
        )
    return found
