"""One τ²-bench conversation, run by tauproxy under τ²'s rules, on τ²'s environment and message types.

This is τ²'s orchestrator (`tau2.orchestrator.Orchestrator`, as `tau2.run.run_task` drives it with
`llm_agent` and `user_simulator`) re-expressed for speed, not a variant of it. Its parts are τ²'s:
the environment, tools, messages (`tau2.data_model.message`), stop tokens and user scenario are
imported from the installed package; the prompts are read from its source (tau2bench/source.py);
the request bodies are what litellm sends for τ² (tau2bench/wire.py). What it does not import is
τ²'s agent, user and orchestrator modules, which import litellm. tests/tau2bench prove, on all four
domains, that both roles send byte-for-byte the requests `tau2 run` sends (so a cassette is shared
both ways) and that the trajectory and reward are τ²'s own.

The rules, as τ²'s orchestrator applies them:
- the environment is set from the task's initialization data and actions; the agent opens with
  τ²'s fixed greeting to the user;
- each step routes the last message: agent/env -> user, user/env -> agent, or a tool-calling
  message -> env, whose answers (`Environment.get_response`, errors counted) go back to the caller,
  several as one batch; the environment syncs its tools after every step;
- the user stops with ###STOP###, ###TRANSFER### or ###OUT-OF-SCOPE###; τ²'s LLM agent never stops;
- after a step that is not addressed to the environment, max_steps, then max_errors, end it (and
  override a stop in that same step, as τ² does);
- each role's request is its system prompt plus its history: the agent's as is, the user's with
  the roles flipped; a role with tools sends their schemas and tool_choice "auto";
- an answer with neither text nor tool calls is asked again, up to `num_retries` times;
- with the communication protocol on (`--enforce-communication-protocol`), an agent or user message
  that is empty or holds both text and tool calls ends the trial as agent_error / user_error, checked
  after its step as τ² checks it (before the step is counted; a violating tool call is not answered).

Not covered here (tau2bench/trial.py runs those on τ²'s own orchestrator): a task with a message
history, another agent or user than τ²'s LLM agent and user simulator (solo mode, the ground-truth
agent) and the repetition judge. `--max-errors`, `--max-retries`, `--task-set-name` and
`--enforce-communication-protocol` are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from tauproxy.tau2bench.wire import Answer, litellm_message, request_body

AGENT, USER, ENV = "agent", "user", "env"

# Answers a request body for a role ("agent" or "user"); raises when the call fails.
Ask = Callable[[str, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Side:
    """One role's fixed part of every request it sends."""

    model: str
    system_prompt: str
    params: dict[str, Any]
    retries: int
    tools: list[dict[str, Any]] | None  # OpenAI schemas; None: the role has no tools

    @cached_property
    def system_message(self) -> dict[str, Any]:
        # One object for all of a trial's requests, as its history's messages are: a message sent
        # is never changed, so the request key of each call hashes only what the last one lacked.
        return {"role": "system", "content": self.system_prompt}


@dataclass
class Conversation:
    """τ²'s orchestrator state for one trial (the names are τ²'s)."""

    environment: Any
    agent: Side
    user: Side
    ask: Ask
    max_steps: int
    max_errors: int
    enforce_communication_protocol: bool = False
    trajectory: list[Any] = field(default_factory=list)
    agent_history: list[dict[str, Any]] = field(default_factory=list)
    user_history: list[dict[str, Any]] = field(default_factory=list)
    termination_reason: Any = None
    step_count: int = 0
    num_errors: int = 0

    def run(self, task: Any, greeting: str) -> None:
        from tau2.data_model.message import AssistantMessage
        from tau2.data_model.simulation import TerminationReason
        from tau2.utils.utils import get_now

        state = task.initial_state
        self.environment.set_state(
            initialization_data=state.initialization_data if state is not None else None,
            initialization_actions=state.initialization_actions if state is not None else None,
            message_history=[],
        )
        first = AssistantMessage(role="assistant", content=greeting, cost=0.0)
        first.timestamp = get_now()
        self.agent_history.append(litellm_message(first))
        self.trajectory.append(first)
        message: Any = first
        source, target = AGENT, USER
        self.environment.sync_tools()
        done = False
        while not done:
            message, source, target, done = self._step(message, source, target)
            if target == ENV:
                continue
            if self.step_count >= self.max_steps:
                done = True
                self.termination_reason = TerminationReason.MAX_STEPS
            if self.num_errors >= self.max_errors:
                done = True
                self.termination_reason = TerminationReason.TOO_MANY_ERRORS
        if target == ENV and not self._ended_on_error():
            raise ValueError("Environment should not receive the last message. Last message: " + str(message))

    def _ended_on_error(self) -> bool:
        from tau2.data_model.simulation import TerminationReason

        return self.termination_reason in (TerminationReason.AGENT_ERROR, TerminationReason.USER_ERROR)

    def _step(self, message: Any, source: str, target: str) -> tuple[Any, str, str, bool]:
        from tau2.data_model.simulation import TerminationReason
        from tau2.user.base import OUT_OF_SCOPE, STOP, TRANSFER

        done = False
        if target == USER:
            self._hand(self.user_history, message, flip=True)
            reply = self._generate_user()
            reply.validate()
            if reply.tool_calls is None:
                assert reply.content is not None
                if STOP in reply.content or TRANSFER in reply.content or OUT_OF_SCOPE in reply.content:
                    done = True
                    self.termination_reason = TerminationReason.USER_STOP
            self.trajectory.append(reply)
            message, source, target = reply, USER, ENV if reply.tool_calls is not None else AGENT
        elif target == AGENT:
            self._hand(self.agent_history, message, flip=False)
            reply = self._generate_agent()
            reply.validate()
            self.trajectory.append(reply)
            message, source, target = reply, AGENT, ENV if reply.tool_calls is not None else USER
        else:
            from tau2.data_model.message import MultiToolMessage

            answers = []
            for call in message.tool_calls:
                answer = self.environment.get_response(call)
                if answer.error:
                    self.num_errors += 1
                answers.append(answer)
            self.trajectory.extend(answers)
            message = MultiToolMessage(role="tool", tool_messages=answers) if len(answers) > 1 else answers[0]
            source, target = ENV, source
        if self.enforce_communication_protocol and source != ENV and _breaks_protocol(message):
            done = True
            self.termination_reason = TerminationReason.AGENT_ERROR if source == AGENT else TerminationReason.USER_ERROR
        self.step_count += 1
        self.environment.sync_tools()
        return message, source, target, done

    @staticmethod
    def _hand(history: list[dict[str, Any]], message: Any, flip: bool) -> None:
        """A message reaching a role joins its history (a batch of tool answers as its parts); the
        user sees the agent's text as the user's and its own tool answers as they are."""
        parts = message.tool_messages if hasattr(message, "tool_messages") else [message]
        for part in parts:
            if flip and part.role == "assistant":
                history.append({"role": "user", **({"content": part.content} if part.content is not None else {})})
            else:
                history.append(litellm_message(part))

    def _answer(self, role: str, side: Side, history: list[dict[str, Any]]) -> Answer:
        body = request_body(side.model, [side.system_message, *history], side.params, side.tools)
        answer = Answer(self.ask(role, body))
        for _ in range(side.retries):
            if not answer.is_empty:
                break
            answer = Answer(self.ask(role, body))
        return answer

    def _calls(self, answer: Answer, requestor: str) -> list[Any] | None:
        from tau2.data_model.message import ToolCall

        calls = [
            ToolCall(id=call_id, name=name, arguments=arguments, requestor=requestor)
            for call_id, name, arguments in answer.tool_calls
        ]
        return calls or None

    # A message's cost: τ² writes litellm's price of the call there; tauproxy prices every call
    # itself (its CallRecord), and a trial's result never reads the message's, so it is 0.0, as τ²
    # writes for a model litellm has no price for.
    def _generate_agent(self) -> Any:
        from tau2.data_model.message import AssistantMessage

        answer = self._answer(AGENT, self.agent, self.agent_history)
        reply = AssistantMessage(
            role="assistant",
            content=answer.content,
            tool_calls=self._calls(answer, "assistant"),
            cost=0.0,
            usage=answer.usage,
        )
        self.agent_history.append(litellm_message(reply))
        return reply

    def _generate_user(self) -> Any:
        from tau2.data_model.message import UserMessage

        answer = self._answer(USER, self.user, self.user_history)
        reply = UserMessage(
            role="user", content=answer.content, tool_calls=self._calls(answer, "user"), cost=0.0, usage=answer.usage
        )
        # The user's own turn, seen from its side, is the assistant's (τ²'s flip_roles).
        self.user_history.append(litellm_message(_as_assistant(reply)))
        return reply


def _breaks_protocol(message: Any) -> bool:
    """τ²'s communication protocol: a message has text or tool calls, never neither, never both."""
    return bool(message.is_tool_call()) == bool(message.has_text_content())


class _as_assistant:
    """A user message seen as an assistant message, for litellm_message."""

    role = "assistant"

    def __init__(self, message: Any) -> None:
        self.content = message.content
        self.tool_calls = message.tool_calls
