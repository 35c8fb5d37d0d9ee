"""Scripted models: deterministic, seeded stand-ins for LLMs, for offline tests and demos.

    scripted/oracle                performs the task's golden actions, then tells the user every
                                   communicate_info item and quoted phrase of the NL assertions
    scripted/oracle?error_rate=R   the same, but skips each step with probability R (0 to 1), drawn
                                   from the request's seed, so trials differ and pass^k < pass^1 can be shown
    scripted/oracle?violate=1      also performs the task's forbidden actions (refusal tasks)
    scripted/oracle?skip_user=1    never asks the user to act (fails dual control; in solo runs it
                                   holds the user's tools and acts itself, so it passes)
    scripted/silent                answers every turn with a polite refusal and does nothing
    scripted/user                  states its request, performs user actions the agent names,
                                   says "###TRANSFER###" after a transfer and "###STOP###" when done
    scripted/judge                 an assertion is met when every 'quoted' phrase in it appears
                                   in the agent's lines of the transcript

Options combine with `&` (`scripted/oracle?error_rate=0.3&violate=1`); each model's options are a typed
schema (OracleOptions, NoOptions for the others), so an unknown key, a value that is not a number or
a flag, or an error_rate outside 0 to 1 is refused with one line naming the options the model takes.
Their llm args (ScriptedArgs) are the common sampling args: carried in the request, and so in its
key, but they change no answer.

They answer through the same transport seam as live models, so cassettes record them too. They
need the task, which they look up by the trial scope of the call.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generic

from pydantic import Field

from tauproxy.data_model.call import ModelCall, ModelRequest, ModelResponse, Usage
from tauproxy.data_model.completion import Completion
from tauproxy.data_model.judge import (
    ASSERTIONS_CLOSE,
    ASSERTIONS_OPEN,
    TRANSCRIPT_CLOSE,
    TRANSCRIPT_OPEN,
    JudgeItem,
    JudgeVerdict,
    between,
)
from tauproxy.data_model.message import Message, ToolCall
from tauproxy.data_model.task import Action, Task
from tauproxy.data_model.wire import response_to_wire
from tauproxy.errors import ConfigError
from tauproxy.proxy.model_options import ModelOptions, NoOptions, Options, SamplingArgs, parse_name_options

PREFIX = "scripted/"
FINAL_PREFIX = "Your request is complete."
TRANSFER_NOTE = "I have transferred you to a human agent."
_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"")


class OracleOptions(ModelOptions):
    error_rate: float = Field(0.0, ge=0, le=1, allow_inf_nan=False)
    violate: bool = False
    skip_user: bool = False


class ScriptedArgs(SamplingArgs):
    """The llm args of a scripted model: the common sampling args, accepted and ignored."""


@dataclass(frozen=True)
class ScriptedModel(Generic[Options]):
    """One scripted model: how it answers and the options its name takes."""

    answer: Callable[[ModelRequest, Task | None, Options, int], Message]
    options: type[Options]


@dataclass(frozen=True)
class ScriptedSpec:
    """A scripted model name, parsed: which model, with its options checked."""

    name: str
    options: ModelOptions


@lru_cache(maxsize=256)
def parse_spec(model: str) -> ScriptedSpec:
    """`scripted/NAME?key=value&...` as a spec; a ConfigError naming the known models or the valid
    options if it is not one. Cached: every scripted call parses its model name."""
    name, _, query = model[len(PREFIX) :].partition("?")
    scripted = SCRIPTED_MODELS.get(name)
    if scripted is None:
        known = ", ".join(PREFIX + name for name in SCRIPTED_MODELS)
        raise ConfigError(f"unknown scripted model {model!r} (known: {known})")
    return ScriptedSpec(name, parse_name_options(model, query, scripted.options))


class ScriptedTransport:
    def __init__(self, tasks: Mapping[str, Task]) -> None:
        self._tasks = tasks

    def complete(self, call: ModelCall) -> Completion:
        request = call.request
        if request is None:
            raise ConfigError(f"{call.model}: scripted models answer in-process calls only")
        spec = parse_spec(request.model)
        task = self._tasks.get(call.scope.task_id)
        seed = request.seed or 0
        message = SCRIPTED_MODELS[spec.name].answer(request, task, spec.options, seed)
        usage = _usage(call.wire, message)
        response = ModelResponse(
            message=message,
            finish_reason="tool_calls" if message.tool_calls else "stop",
            usage=usage,
            response_model=request.model,
        )
        return Completion(body=response_to_wire(response, request.model), source="live")

    def close(self) -> None:
        return None


def _usage(wire: dict[str, Any], message: Message) -> Usage:
    """Token counts of a scripted call, estimated at four characters a token, so stats stay useful."""
    prompt = max(1, len(json.dumps(wire.get("messages", []))) // 4 + len(json.dumps(wire.get("tools") or [])) // 4)
    out = len(message.content or "") + sum(len(json.dumps(c.arguments)) for c in message.tool_calls or [])
    completion = max(1, out // 4)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion)


def _text(content: str) -> Message:
    return Message(role="assistant", content=content)


def _slips(seed: int, task_id: str, steps: int, rate: float) -> list[bool]:
    return [random.Random(f"{seed}:{task_id}:{i}").random() < rate for i in range(steps)]


def oracle(request: ModelRequest, task: Task | None, options: OracleOptions, seed: int) -> Message:
    messages = request.messages
    if task is None:
        return _text("I cannot find your request.")
    own_tools = {tool.name for tool in request.tools or []}
    plan = _oracle_plan(task, options, seed, own_tools)
    own = sum(1 for m in messages if m.role == "assistant")
    opened_by_agent = next((m.role for m in messages if m.role != "system"), None) == "assistant"
    done = max(0, own - 1) if opened_by_agent else own  # the fixed greeting is not one of our steps
    step = plan[min(done, len(plan) - 1)]
    # In solo runs the agent holds the user's tools too, so it performs user actions itself.
    if isinstance(step, Action) and (step.requestor == "assistant" or step.name in own_tools):
        return Message(
            role="assistant", tool_calls=[ToolCall(id=f"call_{done}", name=step.name, arguments=step.arguments)]
        )
    if isinstance(step, Action):
        args = json.dumps(step.arguments, sort_keys=True)
        return _text(f"Please use {step.name} on your device with {args}, then tell me what you see.")
    return _text(step)


def _oracle_plan(task: Task, options: OracleOptions, seed: int, own_tools: set[str]) -> list[Action | str]:
    golden = task.golden_actions()
    slips = _slips(seed, task.id, len(golden) + 1, options.error_rate)
    plan: list[Action | str] = []
    for action, slipped in zip(golden, slips, strict=False):
        guides_user = action.requestor == "user" and action.name not in own_tools
        if slipped or (guides_user and options.skip_user):
            continue
        plan.append(action)
    if options.violate:
        plan.extend(_forbidden_actions(task))
    plan.append(
        _final_words(
            task,
            slipped=slips[-1],
            transferred=any(isinstance(a, Action) and a.name == "transfer_to_human_agents" for a in plan),
        )
    )
    return plan


def _forbidden_actions(task: Task) -> list[Action]:
    description = task.description if isinstance(task.description, dict) else {}
    raw = description.get("forbidden_actions") or []
    return [
        Action(action_id=f"forbidden_{i}", name=item["name"], arguments=item.get("arguments", {}))
        for i, item in enumerate(raw)
    ]


def _final_words(task: Task, *, slipped: bool, transferred: bool) -> str:
    parts = [TRANSFER_NOTE if transferred else FINAL_PREFIX]
    criteria = task.evaluation_criteria
    if criteria is not None and not slipped:
        parts.extend(criteria.communicate_info or [])
        for assertion in criteria.nl_assertions or []:
            parts.extend(a or b for a, b in _QUOTED.findall(assertion))
    return " ".join(parts)


def silent(request: ModelRequest, task: Task | None, options: NoOptions, seed: int) -> Message:
    return _text("I'm sorry, I can't help with that.")


def user(request: ModelRequest, task: Task | None, options: NoOptions, seed: int) -> Message:
    """The user's view is flipped: "assistant" messages are the user's own, "user" ones the agent's."""
    messages = request.messages
    own = [m for m in messages if m.role == "assistant"]
    last = messages[-1] if messages else None
    if not own:
        return _text(_opening(task))
    if last is not None and last.role == "tool":
        return _text(f"Done. My screen shows: {last.content}")
    agent_text = (last.content or "") if last is not None else ""
    for action in _pending_user_actions(task, own):
        if action.name in agent_text:
            call = ToolCall(id=f"ucall_{len(own)}", name=action.name, arguments=action.arguments, requestor="user")
            return Message(role="assistant", tool_calls=[call])
    if "transfer" in agent_text.lower():
        return _text("###TRANSFER###")
    if agent_text.rstrip().endswith("?") and len(own) < 4:
        return _text("Yes, please go ahead.")
    return _text("Thank you, that is all. ###STOP###")


def _opening(task: Task | None) -> str:
    if task is None:
        return "Hello, I need help."
    instructions = task.user_scenario.instructions
    if isinstance(instructions, str):
        return instructions
    return " ".join(p for p in (instructions.reason_for_call, instructions.known_info) if p)


def _pending_user_actions(task: Task | None, own: list[Message]) -> list[Action]:
    if task is None:
        return []
    made = [(c.name, json.dumps(c.arguments, sort_keys=True)) for m in own for c in m.tool_calls or []]
    pending = []
    for action in task.golden_actions():
        if action.requestor != "user":
            continue
        signature = (action.name, json.dumps(action.arguments, sort_keys=True))
        if signature in made:
            made.remove(signature)
        else:
            pending.append(action)
    return pending


def judge(request: ModelRequest, task: Task | None, options: NoOptions, seed: int) -> Message:
    prompt = next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")
    transcript = between(prompt, TRANSCRIPT_OPEN, TRANSCRIPT_CLOSE)
    agent_text = "\n".join(line for line in transcript.splitlines() if line.lower().startswith("assistant:")).lower()
    items = []
    for line in between(prompt, ASSERTIONS_OPEN, ASSERTIONS_CLOSE).splitlines():
        if not line.startswith("- "):
            continue
        assertion = line[2:].strip()
        phrases = [a or b for a, b in _QUOTED.findall(assertion)]
        met = bool(phrases) and all(p.lower() in agent_text for p in phrases)
        why = "every quoted phrase was said" if met else "a quoted phrase was not said (or none given)"
        items.append(JudgeItem(assertion=assertion, met=met, justification=why))
    return _text(JudgeVerdict(results=items).model_dump_json())


SCRIPTED_MODELS: dict[str, ScriptedModel[Any]] = {
    "oracle": ScriptedModel(oracle, OracleOptions),
    "silent": ScriptedModel(silent, NoOptions),
    "user": ScriptedModel(user, NoOptions),
    "judge": ScriptedModel(judge, NoOptions),
}
