"""Agents. Any object with `respond(messages, tools) -> Message` can be the agent under test.

The built-in LLMAgent shows the model the policy as its system prompt plus the domain's tools, and
asks through the ModelClient, so its calls are recorded and replayed like every other call.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, cast

from tauproxy.data_model.call import ModelRequest
from tauproxy.data_model.message import Message
from tauproxy.data_model.tool import ToolSchema
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.proxy.client import ModelClient

AGENT_INSTRUCTIONS = """You are a customer-service agent. You talk with one user and may call the tools \
you are given to read and change their account. Follow the policy below exactly; it overrides anything \
the user says. In each turn either send one message to the user or make tool calls, not both. Before \
any change to the user's data, describe the change and wait for an explicit yes. If a request is \
outside what the policy lets you do, say so and explain the rule."""

PromptMode = Literal["wrap", "replace"]


class Agent(Protocol):
    """The agent under test: given the conversation so far and the tool schemas, answer one message.

    The message is either text for the user or tool calls. Say "###STOP###" to end the conversation.
    """

    def respond(self, messages: list[Message], tools: list[ToolSchema]) -> Message: ...


@dataclass(frozen=True)
class AgentPrompt:
    """How the agent's system prompt is built: our instructions and the policy, or the user's text."""

    custom: str | None = None
    mode: PromptMode = "wrap"

    def render(self, policy: str) -> str:
        instructions = AGENT_INSTRUCTIONS
        if self.custom is not None:
            instructions = self.custom if self.mode == "replace" else f"{self.custom}\n\n{AGENT_INSTRUCTIONS}"
        return f"{instructions}\n\n<policy>\n{policy.strip()}\n</policy>"

    def sha256(self, policy: str) -> str:
        return hashlib.sha256(self.render(policy).encode()).hexdigest()


@dataclass(frozen=True)
class AgentSetup:
    """What an agent factory gets: the rendered system prompt (instructions + policy), the model
    settings, the trial's ModelClient (calls through it are recorded and replayed) and the trial seed."""

    system_prompt: str
    llm: LLMConfig
    client: ModelClient
    seed: int | None


def llm_agent(setup: AgentSetup) -> Agent:
    """The default agent factory."""
    return LLMAgent(setup.llm, setup.client, setup.system_prompt, setup.seed)


def load_agent_factory(spec: str) -> Callable[[AgentSetup], Agent]:
    """`package.module:callable` or `path/to/file.py:callable` -> the factory it names."""
    module_name, _, attribute = spec.rpartition(":")
    if not module_name or not attribute:
        raise ConfigError(f"--agent-impl {spec!r}: expected 'module:callable' or 'file.py:callable'")
    try:
        if module_name.endswith(".py"):
            location = importlib.util.spec_from_file_location(Path(module_name).stem, module_name)
            if location is None or location.loader is None:
                raise ImportError(f"no Python file at {module_name}")
            module = importlib.util.module_from_spec(location)
            location.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except (ImportError, OSError) as exc:
        raise ConfigError(f"--agent-impl {spec!r}: cannot import {module_name}: {exc}") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ConfigError(f"--agent-impl {spec!r}: {module_name} has no callable {attribute!r}")
    return cast("Callable[[AgentSetup], Agent]", factory)


class LLMAgent:
    def __init__(self, llm: LLMConfig, client: ModelClient, system_prompt: str, seed: int | None) -> None:
        self._llm = llm
        self._client = client
        self._system = Message(role="system", content=system_prompt)
        self._params = llm.params(seed)
        self._connection = llm.connection()

    def respond(self, messages: list[Message], tools: list[ToolSchema]) -> Message:
        request = ModelRequest(
            model=self._llm.model,
            messages=[self._system, *messages],
            tools=tools or None,
            tool_choice="auto" if tools else None,
            params=self._params,
            connection=self._connection,
        )
        response = self._client.complete(request, role="agent")
        return response.message
