"""A recorded chat-completions response as the answer a live call through serve would have recorded.

Serve asks the upstream without streaming and records the chat.completion it gets, reduced by
`wire.normalise_response`. A recorded response is either that body (JSON) or, when the client
asked for `stream: true`, the chat.completion.chunk SSE events the upstream sent: those are
assembled here into the one chat.completion they add up to (content and arguments concatenated,
tool calls by their index, the finish reason and the usage chunk), then reduced the same way. A
stream key and a non-stream key are the same (`stream` is not in the key), so either form answers
a replay of both.
"""

from __future__ import annotations

from typing import Any

from tauproxy.data_model.wire import normalise_response
from tauproxy.vcr_import.streams import UnreadableAnswer, decoded, is_stream, json_object, stream_events


def chat_answer(body: bytes, content_type: str) -> dict[str, Any]:
    """The normalised chat.completion a recorded response body holds, or UnreadableAnswer."""
    text = decoded(body)
    raw = assemble_stream(text) if is_stream(text, content_type) else json_object(text)
    try:
        return normalise_response(raw)
    except ValueError as exc:
        raise UnreadableAnswer(str(exc)) from None


def assemble_stream(text: str) -> dict[str, Any]:
    """The chat.completion that a chat.completion.chunk stream adds up to (its first choice)."""
    events = stream_events(text)
    message: dict[str, Any] = {"role": "assistant", "content": None}
    calls: dict[int, dict[str, Any]] = {}
    finish_reason: str | None = None
    usage: Any = None
    for event in events:
        if event.get("usage"):
            usage = event["usage"]
        for choice in event.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # a cassette sample is the first choice, as serve asks for n=1
            finish_reason = choice.get("finish_reason") or finish_reason
            delta = choice.get("delta") or {}
            if delta.get("role"):
                message["role"] = delta["role"]
            for name in ("content", "refusal", "reasoning_content"):
                piece = delta.get(name)
                if isinstance(piece, str):
                    message[name] = (message.get(name) or "") + piece
            for call in delta.get("tool_calls") or []:
                _add_call_delta(calls, call)
    if calls:
        message["tool_calls"] = [calls[index] for index in sorted(calls)]
    first = events[0]
    return {
        "id": first.get("id"),
        "created": first.get("created"),
        "model": first.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage,
    }


def _add_call_delta(calls: dict[int, dict[str, Any]], delta: Any) -> None:
    if not isinstance(delta, dict):
        raise UnreadableAnswer("a tool-call delta is not an object")
    index = delta.get("index", len(calls))
    call = calls.setdefault(index, {"id": None, "type": "function", "function": {"name": None, "arguments": ""}})
    if delta.get("id"):
        call["id"] = delta["id"]
    if delta.get("type"):
        call["type"] = delta["type"]
    function = delta.get("function") or {}
    if function.get("name"):
        call["function"]["name"] = function["name"]
    if isinstance(function.get("arguments"), str):
        call["function"]["arguments"] += function["arguments"]
