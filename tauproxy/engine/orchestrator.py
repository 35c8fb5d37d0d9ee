"""The tau2-style loop: a fixed greeting, then agent <-> user <-> environment until a stop or a limit.

Nothing in here reads a clock or draws a random number: given the same model answers, the same
messages (and so the same requests) come out, byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tauproxy.data_model.message import Message, Requestor, ToolCall
from tauproxy.data_model.result import TerminationReason
from tauproxy.data_model.task import Task
from tauproxy.data_model.tool import ToolSchema
from tauproxy.engine.agent import Agent
from tauproxy.engine.environment import Environment
from tauproxy.engine.limits import Limits
from tauproxy.engine.user import UserSimulator, is_stop
from tauproxy.errors import CassetteWriteError, InfrastructureError, ReplayMissError, TauproxyError
from tauproxy.redact import redact_text

GREETING = "Hi! How can I help you today?"
AGENT_STOP_TOKEN = "###STOP###"


@dataclass
class Trajectory:
    messages: list[Message]
    termination_reason: TerminationReason
    error: str | None = None


def agent_view(messages: list[Message]) -> list[Message]:
    """What the agent sees: its own messages and tool results, and the user's words (not their device).

    Tool results are matched to the agent's own calls by id, so in solo runs the agent also sees what
    the user-side tools it called returned.
    """
    own_calls = {c.id for m in messages if m.role == "assistant" for c in m.tool_calls or []}
    view = []
    for message in messages:
        if message.role == "assistant":
            view.append(Message(role="assistant", content=message.content, tool_calls=message.tool_calls))
        elif message.role == "user" and message.has_text() and not message.tool_calls:
            view.append(Message(role="user", content=message.content))
        elif message.role == "tool" and (message.requestor != "user" or message.tool_call_id in own_calls):
            view.append(Message(role="tool", content=message.content, tool_call_id=message.tool_call_id))
    return view


def solo_opening(task: Task) -> str:
    return (
        "You are working alone: there is no user to talk to. You hold the user's device tools as well "
        "as your own. Resolve this request, then reply with ###STOP###.\n\n" + task.user_scenario.render()
    )


@dataclass
class Orchestrator:
    task: Task
    environment: Environment
    agent: Agent
    agent_tools: list[ToolSchema]
    user: UserSimulator | None
    limits: Limits = field(default_factory=Limits)
    user_tool_names: frozenset[str] = frozenset()

    def run(self) -> Trajectory:
        messages = self._opening()
        to_user = self.user is not None and messages[-1].role == "assistant"
        steps = errors = 0
        try:
            while True:
                if steps >= self.limits.max_steps:
                    return Trajectory(messages, TerminationReason.MAX_STEPS)
                steps += 1
                if to_user:
                    outcome, errors = self._user_turn(messages, errors)
                else:
                    outcome, errors = self._agent_turn(messages, errors)
                if errors >= self.limits.max_errors:
                    return Trajectory(messages, TerminationReason.TOO_MANY_ERRORS)
                if isinstance(outcome, TerminationReason):
                    return Trajectory(messages, outcome)
                to_user = outcome
        except (ReplayMissError, CassetteWriteError):
            raise  # these stop the whole run, not only this trial (see tauproxy.errors)
        except InfrastructureError as exc:
            return Trajectory(messages, TerminationReason.INFRASTRUCTURE_ERROR, redact_text(str(exc)))
        except _UserFailure as exc:
            return Trajectory(messages, TerminationReason.USER_ERROR, redact_text(str(exc)))
        except TauproxyError as exc:
            return Trajectory(messages, TerminationReason.AGENT_ERROR, redact_text(str(exc)))

    def _opening(self) -> list[Message]:
        history = self.task.initial_state.message_history if self.task.initial_state else None
        if history:
            return [m.model_copy() for m in history]
        if self.user is None:
            return [Message(role="user", content=solo_opening(self.task), turn_idx=0)]
        return [Message(role="assistant", content=GREETING, turn_idx=0)]

    def _user_turn(self, messages: list[Message], errors: int) -> tuple[TerminationReason | bool, int]:
        assert self.user is not None
        try:
            reply = self.user.respond(messages)
        except InfrastructureError:
            raise
        except TauproxyError as exc:
            raise _UserFailure(str(exc)) from None
        self._append(messages, reply)
        if reply.tool_calls:
            return True, errors + self._run_tools(messages, reply, default="user")
        if is_stop(reply):
            return TerminationReason.USER_STOP, errors
        return False, errors

    def _agent_turn(self, messages: list[Message], errors: int) -> tuple[TerminationReason | bool, int]:
        try:
            reply = self.agent.respond(agent_view(messages), self.agent_tools)
        except TauproxyError:
            raise
        except Exception as exc:  # a user-written agent's bug ends its trial, not the run
            return _agent_error(messages, f"{type(exc).__name__}: {exc}"), errors
        calls = [self._side_of(call) for call in reply.tool_calls or []]
        reply = Message(role="assistant", content=reply.content, tool_calls=calls or None)
        if not reply.tool_calls and not reply.has_text():
            return _agent_error(messages, "the agent sent an empty message"), errors
        self._append(messages, reply)
        if reply.tool_calls:
            return False, errors + self._run_tools(messages, reply, default="assistant")
        if AGENT_STOP_TOKEN in (reply.content or "") or self.user is None:
            return TerminationReason.AGENT_STOP, errors
        return True, errors

    def _side_of(self, call: ToolCall) -> ToolCall:
        if self.user is None and call.name in self.user_tool_names:
            return call.model_copy(update={"requestor": "user"})  # solo: the agent works the user's device
        return call.model_copy(update={"requestor": "assistant"})

    def _run_tools(self, messages: list[Message], reply: Message, default: Requestor) -> int:
        failures = 0
        for call in reply.tool_calls or []:
            requestor: Requestor = call.requestor if default == "assistant" else "user"
            result = self.environment.execute(call, requestor)
            self._append(messages, result)
            failures += int(result.error)
        return failures

    @staticmethod
    def _append(messages: list[Message], message: Message) -> None:
        messages.append(message.model_copy(update={"turn_idx": len(messages)}))


class _UserFailure(TauproxyError):
    pass


def _agent_error(messages: list[Message], reason: str) -> TerminationReason:
    messages.append(Message(role="assistant", content=f"[agent error] {reason}", turn_idx=len(messages)))
    return TerminationReason.AGENT_ERROR
