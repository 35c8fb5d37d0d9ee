"""A recorded answer of an API that serve passes through to the provider's own endpoint (the OpenAI
Responses API, Anthropic's Messages API; chat completions where a route passes them through), as the
body that endpoint answers a non-streamed call with.

Serve asks those upstreams without `stream` and records the answer's bytes, so a replay is byte for
byte what the upstream sent. A recorded JSON body is therefore handed on exactly as recorded. A
recorded stream (the client asked for `stream: true`) is turned into the answer it carries:

    Responses  the `response` of its `response.completed` event (or `response.incomplete`: an answer
               cut short by max_output_tokens is still the answer), which is the whole response
    chat       the chat.completion its chunks add up to (chat_answer.py), whole: with `object` and
               `total_tokens`, which the chunks do not carry (wire.normalise_response, the form
               serve answers a chat call in when it has no upstream bytes)
    Messages   the message of `message_start`, its content blocks filled in by the deltas (text,
               tool input JSON, thinking and its signature, citations), and `message_delta`'s stop
               reason and final usage

encoded compactly (there are no upstream bytes of a non-streamed answer to keep).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tauproxy.data_model.wire import normalise_response
from tauproxy.vcr_import.chat_answer import assemble_stream
from tauproxy.vcr_import.streams import UnreadableAnswer, decoded, is_stream, stream_events

# Responses API stream events whose `response` is a finished answer.
FINISHED_RESPONSE_EVENTS = ("response.completed", "response.incomplete")


def _compact(value: dict[str, Any]) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def chat_body(body: bytes, content_type: str) -> bytes:
    """A chat.completion a recorded response holds, as the non-streamed body's bytes (for a chat route
    passed through to an OpenAI-compatible endpoint rather than sent through litellm)."""
    text = decoded(body)
    return _compact(normalise_response(assemble_stream(text))) if is_stream(text, content_type) else body


def responses_body(body: bytes, content_type: str) -> bytes:
    """The Responses API answer a recorded response holds, as the non-streamed body's bytes."""
    text = decoded(body)
    if not is_stream(text, content_type):
        return body
    for event in reversed(stream_events(text)):
        if event.get("type") in FINISHED_RESPONSE_EVENTS and isinstance(event.get("response"), dict):
            return _compact(event["response"])
        if event.get("type") == "response.failed":
            raise UnreadableAnswer("the stream ended in response.failed")
    raise UnreadableAnswer("stream has no response.completed event")


def messages_body(body: bytes, content_type: str) -> bytes:
    """The Messages API answer a recorded response holds, as the non-streamed body's bytes."""
    text = decoded(body)
    if not is_stream(text, content_type):
        return body
    return _compact(assemble_message(stream_events(text)))


def assemble_message(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The message a Messages API stream adds up to."""
    message: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    partial_json: dict[int, str] = {}
    stopped = False
    for event in events:
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            message = dict(event["message"])
        elif kind == "content_block_start":
            blocks[_index(event)] = dict(event.get("content_block") or {})
        elif kind == "content_block_delta":
            _apply_delta(blocks, partial_json, _index(event), event.get("delta") or {})
        elif kind == "message_delta" and message is not None:
            message.update({k: v for k, v in (event.get("delta") or {}).items()})
            message["usage"] = {**(message.get("usage") or {}), **(event.get("usage") or {})}
        elif kind == "message_stop":
            stopped = True
    if message is None:
        raise UnreadableAnswer("stream has no message_start event")
    if not stopped:
        raise UnreadableAnswer("stream ends before message_stop")
    for index, text in partial_json.items():
        try:
            blocks[index]["input"] = json.loads(text) if text else {}
        except ValueError:
            raise UnreadableAnswer(f"tool input of block {index} is not JSON") from None
    message["content"] = [blocks[index] for index in sorted(blocks)]
    return message


def _index(event: dict[str, Any]) -> int:
    index = event.get("index")
    if not isinstance(index, int):
        raise UnreadableAnswer(f"{event.get('type')} event without an index")
    return index


def _apply_delta(blocks: dict[int, dict[str, Any]], partial_json: dict[int, str], index: int, delta: Any) -> None:
    block = blocks.get(index)
    if block is None or not isinstance(delta, dict):
        raise UnreadableAnswer(f"a delta for block {index}, which never started")
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = block.get("text", "") + str(delta.get("text", ""))
    elif kind == "input_json_delta":
        partial_json[index] = partial_json.get(index, "") + str(delta.get("partial_json", ""))
    elif kind == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
    elif kind == "signature_delta":
        block["signature"] = block.get("signature", "") + str(delta.get("signature", ""))
    elif kind == "citations_delta":
        block.setdefault("citations", []).append(delta.get("citation"))


# By wire API name: how a recorded response becomes what the pass-through upstream answers.
NativeBodyReader = Callable[[bytes, str], bytes]
NATIVE_BODY_READERS: dict[str, NativeBodyReader] = {
    "chat": chat_body,
    "responses": responses_body,
    "messages": messages_body,
}
