"""The user simulator: an LLM (or scripted model) that plays the customer from the task scenario."""

from __future__ import annotations

from tauproxy.data_model.call import ModelRequest
from tauproxy.data_model.message import Message
from tauproxy.data_model.task import Task
from tauproxy.data_model.tool import ToolSchema
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.proxy.client import ModelClient

STOP_TOKENS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")

USER_GUIDELINES = """You are playing a customer who contacts customer service. Stay in character and \
follow the scenario below. Write like a real person in a chat: short messages, one point at a time, \
and only reveal information when it is asked for or needed. Never invent facts that the scenario does \
not give you; if you are asked for something you do not know, say you do not know.

When your goal is reached, or it clearly cannot be reached, end the chat by writing ###STOP### on its \
own. If the agent transfers you to a human, write ###TRANSFER###. If the scenario does not tell you \
how to answer the agent's question, write ###OUT-OF-SCOPE###."""

TOOL_USER_GUIDELINES = """You also hold a device with tools. Use a device tool only when the agent \
asks you to do something on your device, and do exactly that. After each action, tell the agent in \
plain words what you see on the screen. Do not fix things on your own initiative."""


def user_system_prompt(task: Task, has_tools: bool, extra_policy: str | None = None) -> str:
    parts = [USER_GUIDELINES]
    if has_tools:
        parts.append(TOOL_USER_GUIDELINES)
    if extra_policy:
        parts.append(extra_policy.strip())
    parts.append(f"<scenario>\n{task.user_scenario.render()}\n</scenario>")
    return "\n\n".join(parts)


def user_view(messages: list[Message]) -> list[Message]:
    """The conversation as the user model sees it: roles flipped, the agent's tool traffic hidden."""
    view: list[Message] = []
    for message in messages:
        if message.role == "assistant" and message.has_text() and not message.tool_calls:
            view.append(Message(role="user", content=message.content))
        elif message.role == "user":
            view.append(Message(role="assistant", content=message.content, tool_calls=message.tool_calls))
        elif message.role == "tool" and message.requestor == "user":
            view.append(Message(role="tool", content=message.content, tool_call_id=message.tool_call_id))
    return view


def is_stop(message: Message) -> bool:
    return bool(message.content) and any(token in (message.content or "") for token in STOP_TOKENS)


class UserSimulator:
    def __init__(
        self, llm: LLMConfig, client: ModelClient, system_prompt: str, tools: list[ToolSchema], seed: int | None
    ) -> None:
        self._llm = llm
        self._client = client
        self._system = Message(role="system", content=system_prompt)
        self._tools = tools
        self._params = llm.params(seed)
        self._connection = llm.connection()

    def respond(self, messages: list[Message]) -> Message:
        request = ModelRequest(
            model=self._llm.model,
            messages=[self._system, *user_view(messages)],
            tools=self._tools or None,
            tool_choice="auto" if self._tools else None,
            params=self._params,
            connection=self._connection,
        )
        reply = self._client.complete(request, role="user").message
        calls = [call.model_copy(update={"requestor": "user"}) for call in reply.tool_calls or []]
        return Message(role="user", content=reply.content, tool_calls=calls or None)
