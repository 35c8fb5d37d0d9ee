"""A chat.completion body as the `stream: true` answer: chat.completion.chunk SSE events.

The answer is always complete before streaming starts (replayed, or fetched upstream non-streaming),
so every event is built at once and sent as one body; a client assembles the same message, tool-call
ids and usage as the non-streamed answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

DONE = b"data: [DONE]\n\n"


def completion_chunks(completion: dict[str, Any], include_usage: bool) -> Iterator[dict[str, Any]]:
    choice = completion["choices"][0]
    message = choice["message"]
    head = {
        "id": completion["id"],
        "object": "chat.completion.chunk",
        "created": completion["created"],
        "model": completion["model"],
    }
    # With include_usage every chunk carries "usage": null and one extra chunk carries the numbers,
    # which is how clients tell "no usage yet" from "no usage asked for".
    tail: dict[str, Any] = {"usage": None} if include_usage else {}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}], **tail}

    content = message.get("content")
    # The first delta names the role; content "" for a text answer and null for a tool-call answer,
    # so an assembler ends with content None exactly when the plain answer has it None.
    yield chunk({"role": message.get("role") or "assistant", "content": "" if content is not None else None})
    if content:
        yield chunk({"content": content})
    for name in ("refusal", "reasoning_content"):
        if message.get(name):
            yield chunk({name: message[name]})
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        delta = {
            "index": index,
            "id": call.get("id"),
            "type": call.get("type") or "function",
            "function": {"name": function.get("name"), "arguments": function.get("arguments") or ""},
        }
        yield chunk({"tool_calls": [delta]})
    yield chunk({}, choice.get("finish_reason") or "stop")
    if include_usage:
        yield {**head, "choices": [], "usage": completion.get("usage")}


def sse_body(completion: dict[str, Any], include_usage: bool) -> bytes:
    events = [b"data: " + json.dumps(c).encode("utf-8") + b"\n\n" for c in completion_chunks(completion, include_usage)]
    return b"".join([*events, DONE])
