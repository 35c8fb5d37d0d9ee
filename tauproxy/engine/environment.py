"""The environment: one trial's state plus deterministic execution of tool calls."""

from __future__ import annotations

import json
from typing import Any

from tauproxy.data_model.message import Message, Requestor, ToolCall
from tauproxy.data_model.task import EnvFunctionCall, Task
from tauproxy.domain.pack import DomainPack
from tauproxy.domain.state import State
from tauproxy.domain.tools import DomainFunction
from tauproxy.errors import DomainError, ToolExecutionError

TRANSFER_TOOL = "transfer_to_human_agents"


class Environment:
    """Holds agent-side and user-side state in one `State` and runs tools on it."""

    def __init__(self, pack: DomainPack, task: Task | None = None) -> None:
        self.pack = pack
        self.state: State = pack.base_state.fresh()
        self.transferred = False
        if task is not None and task.initial_state is not None:
            self._initialise(task)

    def _initialise(self, task: Task) -> None:
        initial = task.initial_state
        assert initial is not None
        data = initial.initialization_data
        if data is not None:
            for part in (data.agent_data, data.user_data):
                if part:
                    self.state.update(part)
        for call in initial.initialization_actions or []:
            try:
                self.run_function(call)
            except ToolExecutionError as exc:
                raise DomainError(f"task {task.id!r}: initialization action {call.func_name!r} failed: {exc}") from None

    def run_function(self, call: EnvFunctionCall) -> Any:
        function = self.pack.functions.get(call.func_name)
        if function is None:
            raise DomainError(f"domain {self.pack.name!r} has no function {call.func_name!r}")
        return function.call(self.state, call.arguments)

    def execute(self, call: ToolCall, requestor: Requestor) -> Message:
        """Run one tool call. Any failure becomes an error tool message; the run never crashes."""
        try:
            function = self._tool_for(call.name, requestor)
            output = function.call(self.state, call.arguments)
            if call.name == TRANSFER_TOOL:
                self.transferred = True
            content, error = render_output(output), False
        except ToolExecutionError as exc:
            content, error = f"Error: {exc}", True
        except Exception as exc:  # a tool's own bug must not end the simulation
            content, error = f"Error: {type(exc).__name__}: {exc}", True
        return Message(role="tool", content=content, tool_call_id=call.id, requestor=requestor, error=error)

    def _tool_for(self, name: str, requestor: Requestor) -> DomainFunction:
        function = self.pack.functions.get(name)
        side = "user" if requestor == "user" else "assistant"
        if function is None or function.mark.role != "tool" or function.mark.side != side:
            raise ToolExecutionError(f"tool {name!r} not found")
        return function

    def is_write(self, name: str) -> bool:
        function = self.pack.functions.get(name)
        return bool(function and function.is_write)

    def state_hash(self) -> str:
        return self.state.sha256()


def render_output(output: Any) -> str:
    """Tool output as the text a model reads: strings as they are, everything else as sorted JSON."""
    if output is None:
        return "OK"
    if isinstance(output, str):
        return output
    if hasattr(output, "model_dump"):
        output = output.model_dump(mode="json")
    return json.dumps(output, sort_keys=True, default=str)
