"""The Messages API's pure parts: request checks, the keyed form, the chat view, usage, the stream, the API."""

from __future__ import annotations

import copy
import json
from typing import Any

import anthropic
import httpx2
import pytest

from tauproxy.data_model.completion import Completion
from tauproxy.data_model.key import WIRE_API_PARAM, request_key
from tauproxy.wire_apis import messages as m
from tauproxy.wire_apis.base import RequestRejected
from tauproxy.wire_apis.messages_stream import stream_body, stream_events

AUTHORIZATION = "authorization"  # a client's key header, which is never passed on
HEADERS = {"anthropic-version": "2023-06-01"}

BASE: dict[str, Any] = {
    "model": "claude-stub",
    "max_tokens": 256,
    "system": "You are a helpful agent.",
    "messages": [
        {"role": "user", "content": "Find order 7."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking it up."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_order", "input": {"order_id": "7", "full": True}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"status": "shipped"}'}],
        },
    ],
    "tools": [{"name": "get_order", "description": "An order.", "input_schema": {"type": "object"}}],
    "temperature": 0.0,
}

REPLY: dict[str, Any] = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-stub",
    "content": [
        {"type": "text", "text": "It shipped. Cancelling the rest."},
        {"type": "tool_use", "id": "toolu_2", "name": "cancel", "input": {"order_id": "8", "reason": "dup"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 120,
        "output_tokens": 30,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 5,
    },
}


def request(body: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> m.MessagesRequest:
    return m.check_request(copy.deepcopy(BASE) if body is None else body, headers or HEADERS)


def key(body: dict[str, Any], headers: dict[str, str] | None = None) -> str:
    return request_key(m.keyed_request(request(body, headers)))


def with_(**changes: Any) -> dict[str, Any]:
    body = copy.deepcopy(BASE)
    body.update(changes)
    return body


# ---- checks ---------------------------------------------------------------------------------------

BAD: list[tuple[Any, str]] = [
    ([], "request body must be a JSON object"),
    ({k: v for k, v in BASE.items() if k != "model"}, "model: Field required"),
    (with_(model=""), "model: String should have at least 1 character"),
    (with_(max_tokens=0), "max_tokens: Input should be greater than 0"),
    (with_(max_tokens="5"), "max_tokens: Input should be a valid integer"),
    (with_(messages=[]), "messages: List should have at least 1 item"),
    (with_(messages=[{"role": "system", "content": "x"}]), "messages.0.role: Input should be 'user' or 'assistant'"),
    (with_(messages=[{"role": "user", "content": [{"type": "text"}]}]), "a text block needs 'text'"),
    (
        with_(messages=[{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n"}]}]),
        "a tool_use block needs 'input', an object",
    ),
    (
        with_(messages=[{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]),
        "a tool_result block needs 'tool_use_id'",
    ),
    (with_(tools=[{"description": "no name"}]), "tools.0.name: Field required"),
    (with_(stream="yes"), "stream: Input should be a valid boolean"),
    (with_(system=5), "system: Input should be a string or an array of content blocks"),
    (with_(**{"anthropic-version": "x"}), "anthropic-version: reserved by tauproxy"),
    (with_(**{WIRE_API_PARAM: "chat"}), f"{WIRE_API_PARAM}: reserved by tauproxy"),
]


@pytest.mark.parametrize(("body", "expected"), BAD, ids=[expected for _, expected in BAD])
def test_a_bad_request_is_one_line_naming_its_field(body: Any, expected: str) -> None:
    with pytest.raises(RequestRejected) as caught:
        m.check_request(body, HEADERS)
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_request_without_the_version_header_is_refused_like_the_real_api() -> None:
    with pytest.raises(RequestRejected, match="anthropic-version: header is required"):
        m.check_request(copy.deepcopy(BASE), {})
    with pytest.raises(RequestRejected):
        m.check_request(copy.deepcopy(BASE), {"anthropic-version": "  "})


def test_error_bodies_have_anthropics_shape() -> None:
    assert m.error_body(400, "bad") == {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
    assert m.error_body(404, "x")["error"]["type"] == "not_found_error"
    assert m.error_body(529, "x")["error"]["type"] == "overloaded_error"
    assert m.error_body(502, "x")["error"]["type"] == "api_error"


def test_unknown_block_types_and_parameters_pass_the_checks() -> None:
    body = with_(
        messages=[{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "u"}}]}],
        container="c1",
    )
    assert m.check_request(body, HEADERS).body is body


# ---- the key --------------------------------------------------------------------------------------

# Each case changes the base in one field; `True` when the change must change the key.
KEY_CASES: list[tuple[str, dict[str, Any] | None, dict[str, str] | None, bool]] = [
    ("model", with_(model="claude-other"), None, True),
    ("system text", with_(system="Another prompt."), None, True),
    ("system as one text block", with_(system=[{"type": "text", "text": BASE["system"]}]), None, False),
    ("no system", {k: v for k, v in BASE.items() if k != "system"}, None, True),
    ("message text", with_(messages=[{"role": "user", "content": "Find order 8."}]), None, True),
    ("max_tokens", with_(max_tokens=512), None, True),
    ("temperature", with_(temperature=0.5), None, True),
    ("top_p", with_(top_p=0.9), None, True),
    ("top_k", with_(top_k=5), None, True),
    ("stop_sequences", with_(stop_sequences=["END"]), None, True),
    ("thinking", with_(thinking={"type": "enabled", "budget_tokens": 1024}), None, True),
    ("tool_choice", with_(tool_choice={"type": "any"}), None, True),
    ("tools", with_(tools=[]), None, True),
    ("unknown parameter", with_(service_tier="auto"), None, True),
    ("stream", with_(stream=True), None, False),
    ("metadata", with_(metadata={"user_id": "u-1"}), None, False),
    ("a null parameter", with_(top_k=None), None, False),
    ("version", None, {"anthropic-version": "2024-01-01"}, True),
    ("a beta", None, {**HEADERS, "anthropic-beta": "output-128k-2025-02-19"}, True),
    (
        "client credentials and sdk headers",
        None,
        {**HEADERS, "x-api-key": "sk-a", "x-stainless-retry-count": "1"},
        False,
    ),
]


@pytest.mark.parametrize(("name", "body", "headers", "changes"), KEY_CASES, ids=[c[0] for c in KEY_CASES])
def test_the_key_changes_exactly_when_a_field_that_can_change_the_answer_does(
    name: str, body: dict[str, Any] | None, headers: dict[str, str] | None, changes: bool
) -> None:
    base = key(copy.deepcopy(BASE))
    changed = key(body if body is not None else copy.deepcopy(BASE), headers)
    assert (changed != base) is changes


def test_betas_key_as_a_set_and_tool_inputs_in_any_key_order() -> None:
    one = key(copy.deepcopy(BASE), {**HEADERS, "anthropic-beta": "a-1,b-2"})
    assert key(copy.deepcopy(BASE), {**HEADERS, "anthropic-beta": " b-2 , a-1"}) == one
    reordered = copy.deepcopy(BASE)
    reordered["messages"][1]["content"][1]["input"] = {"full": True, "order_id": "7"}
    assert key(reordered) == key(copy.deepcopy(BASE))


def test_string_content_keys_as_its_one_text_block_in_messages_and_tool_results() -> None:
    blocks = copy.deepcopy(BASE)
    blocks["messages"][0]["content"] = [{"type": "text", "text": "Find order 7."}]
    blocks["messages"][2]["content"][0]["content"] = [{"type": "text", "text": '{"status": "shipped"}'}]
    assert key(blocks) == key(copy.deepcopy(BASE))


def test_the_keyed_form_names_the_api_so_no_other_api_keys_alike() -> None:
    keyed = m.keyed_request(request(with_(stream=True, metadata={"user_id": "u"})))
    assert keyed[WIRE_API_PARAM] == "messages"
    assert keyed["anthropic-version"] == "2023-06-01" and "anthropic-beta" not in keyed
    assert "stream" not in keyed and "metadata" not in keyed
    assert keyed["system"] == [{"type": "text", "text": "You are a helpful agent."}]
    assert keyed["messages"][0] == {"role": "user", "content": [{"type": "text", "text": "Find order 7."}]}
    # The same keyed form without the API's name is a chat request's: it keys differently.
    as_chat = {name: value for name, value in keyed.items() if name != WIRE_API_PARAM}
    assert request_key(as_chat) != request_key(keyed)


# ---- the chat view and usage -----------------------------------------------------------------------


def test_the_conversation_reads_as_chat_messages() -> None:
    assert m.chat_messages(copy.deepcopy(BASE)) == [
        {"role": "system", "content": "You are a helpful agent."},
        {"role": "user", "content": "Find order 7."},
        {
            "role": "assistant",
            "content": "Looking it up.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "get_order", "arguments": '{"full":true,"order_id":"7"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": '{"status": "shipped"}'},
    ]


def test_system_blocks_and_error_results_read_as_text() -> None:
    body = with_(
        system=[{"type": "text", "text": "Part one. "}, {"type": "text", "text": "Part two."}],
        messages=[
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "is_error": True,
                        "content": [{"type": "text", "text": "no"}],
                    },
                    {"type": "text", "text": "Try again."},
                ],
            }
        ],
    )
    assert m.chat_messages(request(body).body) == [
        {"role": "system", "content": "Part one. Part two."},
        {"role": "tool", "tool_call_id": "t", "content": "Error: no"},
        {"role": "user", "content": "Try again."},
    ]


def test_the_reply_reads_as_one_assistant_message_and_its_usage_as_tauproxys() -> None:
    reply = m.parse_reply(json.dumps(REPLY).encode())
    assert m.chat_reply(reply) == {
        "role": "assistant",
        "content": "It shipped. Cancelling the rest.",
        "tool_calls": [
            {
                "id": "toolu_2",
                "type": "function",
                "function": {"name": "cancel", "arguments": '{"order_id":"8","reason":"dup"}'},
            }
        ],
    }
    usage = m.usage_of(reply)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens, usage.cached_tokens) == (
        225,
        30,
        255,
        100,
    )


def test_the_reply_reads_as_a_chat_completion_body_for_reports_and_pricing() -> None:
    body = m.chat_view(REPLY)
    assert body["id"] == "msg_01" and body["model"] == "claude-stub"
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert body["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "cancel"
    assert body["usage"]["prompt_tokens"] == 225 and body["usage"]["completion_tokens"] == 30
    assert m.chat_view({**REPLY, "stop_reason": "max_tokens"})["choices"][0]["finish_reason"] == "length"


def test_a_body_that_is_not_a_message_is_refused_as_a_reply() -> None:
    with pytest.raises(ValueError, match="not a Messages API answer"):
        m.parse_reply(b'{"type": "error", "error": {}}')


# ---- the stream -----------------------------------------------------------------------------------


def _sdk_over_stub() -> anthropic.Anthropic:
    """The anthropic SDK answered in-process: REPLY, or its stream from stream_body.

    The SDK sends through httpx2, its own fork of httpx, so its mock transport is httpx2's."""

    def handle(sent: httpx2.Request) -> httpx2.Response:
        if json.loads(sent.content).get("stream"):
            return httpx2.Response(200, content=stream_body(REPLY), headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, json=REPLY)

    http_client = httpx2.Client(transport=httpx2.MockTransport(handle))
    return anthropic.Anthropic(api_key="test", base_url="http://stub.invalid", http_client=http_client, max_retries=0)


def test_the_stream_assembles_to_the_non_streamed_message_in_the_sdk() -> None:
    client = _sdk_over_stub()
    args: dict[str, Any] = {k: BASE[k] for k in ("model", "max_tokens", "system", "messages", "tools")}
    plain = client.messages.create(**args)
    with client.messages.stream(**args) as stream:
        texts = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(texts) == "It shipped. Cancelling the rest."
    assert final.model_dump() == plain.model_dump()
    raw = list(client.messages.create(**args, stream=True))
    assert [event.type for event in raw] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]


def test_the_stream_has_the_real_apis_event_sequence() -> None:
    events = stream_events(REPLY)
    assert [kind for kind, _ in events][:2] == ["message_start", "ping"]
    start = events[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None and start["usage"]["output_tokens"] == 0
    assert start["usage"]["input_tokens"] == 120
    delta = next(data for kind, data in events if kind == "message_delta")
    assert delta["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert delta["usage"]["output_tokens"] == 30
    tool_start = [data for kind, data in events if kind == "content_block_start"][1]["content_block"]
    assert tool_start == {"type": "tool_use", "id": "toolu_2", "name": "cancel", "input": {}}
    body = stream_body(REPLY).decode()
    assert body.startswith("event: message_start\ndata: {") and body.endswith(
        'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )


def test_thinking_and_unknown_blocks_stream_too() -> None:
    reply = {
        **REPLY,
        "content": [
            {"type": "thinking", "thinking": "Let me see.", "signature": "sig"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Done."},
        ],
        "stop_reason": "end_turn",
    }
    deltas = [data["delta"] for kind, data in stream_events(reply) if kind == "content_block_delta"]
    assert deltas == [
        {"type": "thinking_delta", "thinking": "Let me see."},
        {"type": "signature_delta", "signature": "sig"},
        {"type": "text_delta", "text": "Done."},
    ]
    starts = [data["content_block"] for kind, data in stream_events(reply) if kind == "content_block_start"]
    assert starts[1] == {"type": "redacted_thinking", "data": "opaque"}


# ---- the wire API --------------------------------------------------------------------------------


def test_the_api_sends_the_body_without_stream_and_the_headers_that_count_upstream() -> None:
    headers = {**HEADERS, "anthropic-beta": "b-2,a-1", "x-api-key": "sk-client", AUTHORIZATION: "Bearer c"}
    asked = m.MessagesApi().request(with_(stream=True), headers)
    assert asked.stream and asked.api == "messages" and asked.model == "claude-stub"
    assert asked.native is not None
    assert "stream" not in asked.native.body and asked.native.body["model"] == "claude-stub"
    assert asked.native.headers == {"anthropic-version": "2023-06-01", "anthropic-beta": "a-1,b-2"}
    assert asked.conversation[0] == {"role": "system", "content": "You are a helpful agent."}


def test_the_answer_is_the_recorded_bytes_or_the_stream_built_from_them() -> None:
    api = m.MessagesApi()
    raw = json.dumps(REPLY, indent=1)
    completion = Completion(body=m.chat_view(REPLY), source="replay", raw_body=raw)
    plain = api.answer(api.request(copy.deepcopy(BASE), HEADERS), completion)
    assert (plain.content, plain.media_type) == (raw.encode(), "application/json")
    streamed = api.answer(api.request(with_(stream=True), HEADERS), completion)
    assert streamed.media_type == "text/event-stream"
    assert streamed.content == stream_body(REPLY)
