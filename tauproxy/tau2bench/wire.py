"""The OpenAI request bodies `tau2 run` sends, built without litellm; and its answers read back as τ² messages.

τ²'s `generate` turns its messages into litellm dicts (`to_litellm_messages`) and calls
`litellm.completion(model="openai/<m>", messages, tools, tool_choice, **llm_args)`; for an
OpenAI-compatible route litellm then sends (seen at the HTTP layer, tests/tau2bench compare every
body with the ones τ²'s own stack sends):

    model        <m>, the `openai/` prefix taken off
    messages     the litellm dicts with their None fields left out
    llm args     as given, in their order (`num_retries` is litellm's own, never sent), then the
                 trial's seed, which τ²'s orchestrator sets on both roles (`set_seed`)
    tools        the tools' OpenAI schemas, and tool_choice "auto", only when the role has tools

The answer is read as τ²'s `generate` reads litellm's: the first choice's content and tool calls
(arguments parsed as JSON: a malformed one raises there as in τ²), and the usage's two token counts.
"""

from __future__ import annotations

import json
from typing import Any

from tauproxy.engine.llm_config import LLMConfig
from tauproxy.tau2bench.bridge import OPENAI_PREFIX, tau2_llm_args, tau2_model_name

LITELLM_ONLY_ARGS = frozenset({"num_retries"})  # read by litellm (and τ²'s generate), never sent


def wire_params(config: LLMConfig, role: str, seed: int | None, max_retries: int) -> tuple[dict[str, Any], int]:
    """The sent llm args of a role, in order, and τ²'s retry count for an empty answer (`--max-retries`)."""
    args = tau2_llm_args(config, role, max_retries)  # type: ignore[arg-type]
    retries = int(args.get("num_retries", 0))
    params = {name: value for name, value in args.items() if name not in LITELLM_ONLY_ARGS}
    if seed is not None:
        params["seed"] = seed
    return params, retries


def wire_model(model: str) -> str:
    return tau2_model_name(model).removeprefix(OPENAI_PREFIX)


def litellm_message(message: Any) -> dict[str, Any]:
    """One τ² message as `to_litellm_messages` writes it, without the None fields litellm leaves out."""
    role = message.role
    if role == "assistant":
        out: dict[str, Any] = {"role": "assistant"}
        if message.content is not None:
            out["content"] = message.content
        if message.tool_calls is not None:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "name": call.name,
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    "type": "function",
                }
                for call in message.tool_calls
            ]
        return out
    if role == "tool":
        out = {"role": "tool"}
        if message.content is not None:
            out["content"] = message.content
        out["tool_call_id"] = message.id
        return out
    out = {"role": role}
    if message.content is not None:
        out["content"] = message.content
    return out


def request_body(
    model: str, messages: list[dict[str, Any]], params: dict[str, Any], tools: list[dict[str, Any]] | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": wire_model(model), "messages": messages, **params}
    if tools:
        body["tools"] = tools
        body["tool_choice"] = "auto"
    return body


class Answer:
    """What τ²'s `generate` keeps of a response: content, tool calls, usage."""

    __slots__ = ("content", "tool_calls", "usage")

    def __init__(self, body: dict[str, Any]) -> None:
        choice = body["choices"][0]
        message = choice["message"]
        if message.get("role", "assistant") != "assistant":
            raise AssertionError("The response should be an assistant message")
        self.content: str | None = message.get("content")
        self.tool_calls: list[tuple[str, str, dict[str, Any]]] = [
            (str(call.get("id") or ""), call["function"]["name"], json.loads(call["function"]["arguments"]))
            for call in message.get("tool_calls") or []
        ]
        usage = body.get("usage")
        self.usage: dict[str, Any] | None = (
            {"completion_tokens": usage.get("completion_tokens"), "prompt_tokens": usage.get("prompt_tokens")}
            if isinstance(usage, dict)
            else None
        )

    @property
    def is_empty(self) -> bool:
        return (self.content is None or self.content.strip() == "") and not self.tool_calls
