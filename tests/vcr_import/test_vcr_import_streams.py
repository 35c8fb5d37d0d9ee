"""Recorded streams turned into the answers serve would have recorded: chat chunks assembled, the
Responses API's finished response taken from its event, a Messages API stream assembled block by block."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tauproxy.vcr_import.native_answer import messages_body, responses_body
from tauproxy.vcr_import.streams import UnreadableAnswer

SSE = "text/event-stream"


def sse(events: list[dict[str, Any]], named: bool = True) -> bytes:
    """Events as an SSE body, with `event:` lines as the Responses and Messages APIs send them."""
    parts = [(f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}\n\n" for e in events]
    return "".join(parts).encode()


MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-x",
    "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "find_user", "input": {"email": "ada@example.com"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 9},
}
MESSAGE_STREAM = [
    {
        "type": "message_start",
        "message": {**MESSAGE, "content": [], "stop_reason": None, "usage": {"input_tokens": 12, "output_tokens": 1}},
    },
    {"type": "ping"},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me "}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "look."}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "find_user", "input": {}},
    },
    {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"email": '}},
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '"ada@example.com"}'},
    },
    {"type": "content_block_stop", "index": 1},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": 9},
    },
    {"type": "message_stop"},
]


def test_a_messages_stream_is_the_message_it_adds_up_to() -> None:
    assert json.loads(messages_body(sse(MESSAGE_STREAM), SSE)) == MESSAGE


def test_a_messages_json_answer_is_handed_on_byte_for_byte() -> None:
    body = json.dumps(MESSAGE, indent=1).encode()
    assert messages_body(body, "application/json") is body


@pytest.mark.parametrize(
    ("events", "why"),
    [
        (MESSAGE_STREAM[:-1], "stream ends before message_stop"),
        (MESSAGE_STREAM[1:], "stream has no message_start event"),
        (
            [*MESSAGE_STREAM[:3], {"type": "error", "error": {"type": "overloaded_error"}}],
            "the stream ended in an error event",
        ),
    ],
)
def test_a_messages_stream_that_is_not_whole_is_unreadable(events: list[dict[str, Any]], why: str) -> None:
    with pytest.raises(UnreadableAnswer, match=why):
        messages_body(sse(events), SSE)


RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "status": "completed",
    "model": "gpt-x",
    "output": [
        {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]}
    ],
    "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4},
}


def test_a_responses_stream_is_its_completed_response() -> None:
    events = [
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": {**RESPONSE, "status": "in_progress", "output": []},
        },
        {"type": "response.output_text.delta", "sequence_number": 1, "delta": "Hi"},
        {"type": "response.completed", "sequence_number": 2, "response": RESPONSE},
    ]
    assert json.loads(responses_body(sse(events), SSE)) == RESPONSE
    failed = [
        events[0],
        {"type": "response.failed", "sequence_number": 1, "response": {**RESPONSE, "status": "failed"}},
    ]
    with pytest.raises(UnreadableAnswer, match=r"response\.failed"):
        responses_body(sse(failed), SSE)
    with pytest.raises(UnreadableAnswer, match=r"no response\.completed"):
        responses_body(sse(events[:2]), SSE)


# Round trips: a stream as serve itself streams an answer assembles back to that answer.


def test_serve_s_own_messages_stream_assembles_to_its_message() -> None:
    from tauproxy.wire_apis.messages_stream import stream_body

    thinking = {"type": "thinking", "thinking": "Look it up.", "signature": "sig"}
    reply = {**MESSAGE, "content": [thinking, *MESSAGE["content"]]}
    assert json.loads(messages_body(stream_body(reply), SSE)) == reply


def test_serve_s_own_responses_stream_carries_its_response() -> None:
    from tauproxy.wire_apis.responses_stream import response_events

    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in response_events(RESPONSE)).encode()
    assert json.loads(responses_body(body, SSE)) == RESPONSE


def test_serve_s_own_chat_stream_assembles_to_its_completion() -> None:
    from tauproxy.vcr_import.chat_answer import chat_answer
    from tauproxy.wire_apis.chat_stream import sse_body

    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
            {"id": "call_b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
        ],
    }
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 7,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
    }
    assert chat_answer(sse_body(completion, include_usage=True), SSE) == completion
    text = {
        **completion,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
    }
    assert chat_answer(sse_body(text, include_usage=True), SSE) == text
