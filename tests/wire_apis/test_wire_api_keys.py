"""Every wire API keys through the one key function: chat exactly as before, the others with their
API's name in the key, so identical-looking bodies of two APIs never share a key."""

from __future__ import annotations

from typing import Any

import pytest

from tauproxy.data_model.key import WIRE_API_PARAM, request_key, without_connection_settings
from tauproxy.wire_apis.base import RequestRejected
from tauproxy.wire_apis.registry import BY_NAME, WIRE_APIS, api_for_path, wire_api
from tauproxy.wire_apis.responses import conversation_of, keyed_request, response_view

CHAT = wire_api("chat")
RESPONSES = wire_api("responses")


def test_the_registry_names_each_api_once_with_its_paths() -> None:
    assert [api.name for api in WIRE_APIS] == list(BY_NAME)
    paths = [path for api in WIRE_APIS for path in api.paths]
    assert len(paths) == len(set(paths)) and "/v1/responses" in paths and "/v1/chat/completions" in paths
    assert all(api.paths[0].startswith("/v1/") for api in WIRE_APIS)
    with pytest.raises(KeyError, match="known: chat, responses"):
        wire_api("nope")
    assert api_for_path("/proxy/v1/responses/") is RESPONSES and api_for_path("chat/completions") is CHAT
    assert api_for_path("/v1/responses/resp_1") is None and api_for_path("/v1/models") is None


def test_chat_keys_the_body_as_before() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True, "api_key": "sk-x"}
    request = CHAT.request(body)
    assert request.keyed == without_connection_settings(body) and request.stream
    assert request_key(request.keyed) == request_key({"model": "m", "messages": body["messages"]})
    with pytest.raises(RequestRejected, match=WIRE_API_PARAM):
        CHAT.request({**body, WIRE_API_PARAM: "responses"})


def test_identical_looking_bodies_of_two_apis_never_share_a_key() -> None:
    chat = CHAT.request({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    responses = RESPONSES.request({"model": "m", "input": [{"role": "user", "content": "hi"}]})
    assert responses.keyed["messages"] == chat.keyed["messages"]
    assert request_key(responses.keyed) != request_key(chat.keyed)


def test_responses_keyed_form() -> None:
    text = keyed_request({"model": "m", "input": "hi", "stream": True, "metadata": {"run": "1"}})
    listed = keyed_request({"model": "m", "input": [{"role": "user", "content": "hi"}]})
    assert request_key(text) == request_key(listed)  # a string input is the one user message
    spaced = {"type": "function_call", "call_id": "c", "name": "f", "arguments": '{"b": 1,  "a": 2}'}
    tight = {**spaced, "arguments": '{"a":2,"b":1}'}
    assert request_key(keyed_request({"model": "m", "input": [spaced]})) == request_key(
        keyed_request({"model": "m", "input": [tight]})
    )
    chained = keyed_request({"model": "m", "input": "hi", "previous_response_id": "resp_1"})
    assert request_key(chained) != request_key(text) and chained["previous_response_id"] == "resp_1"
    assert text[WIRE_API_PARAM] == "responses" and "stream" not in text and "metadata" not in text
    prompted = RESPONSES.request({"model": "m", "prompt": {"id": "pmpt_1"}})  # no input: a stored prompt
    assert prompted.keyed["messages"] == [] and prompted.keyed["prompt"] == {"id": "pmpt_1"}


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"input": "hi"}, "'model'"),
        ({"model": "m"}, "'input'"),
        ({"model": "m", "input": [1]}, r"input\[0\]"),
        ({"model": "m", "input": "hi", "tools": {}}, "'tools'"),
        ({"model": "m", "input": "hi", "stream": "yes"}, "'stream'"),
        ({"model": "m", "input": "hi", "previous_response_id": 3}, "previous_response_id"),
        ({"model": "m", "input": "hi", WIRE_API_PARAM: "chat"}, "reserved"),
        ({"model": "m", "input": "hi", "background": True}, "'background'"),
    ],
)
def test_responses_requests_refused_in_one_line(body: dict[str, Any], reason: str) -> None:
    with pytest.raises(RequestRejected, match=reason) as refused:
        RESPONSES.request(body)
    assert refused.value.status == 400 and "\n" not in refused.value.message


def test_the_chat_views_of_a_responses_request_and_answer() -> None:
    body = {
        "model": "m",
        "instructions": "be brief",
        "input": [
            {"role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
            {"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        ],
    }
    assert [m["role"] for m in conversation_of(body)] == ["system", "system", "user", "assistant", "tool"]
    answer = {
        "id": "resp_1",
        "model": "m-2025",
        "created_at": 1700000000.0,
        "status": "completed",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {
                "type": "message",
                "content": [{"type": "output_text", "text": "a"}, {"type": "output_text", "text": "b"}],
            },
            {"type": "function_call", "call_id": "c2", "name": "g", "arguments": '{"x":1}'},
        ],
        "usage": {
            "input_tokens": 10,
            "output_tokens": 4,
            "total_tokens": 14,
            "input_tokens_details": {"cached_tokens": 3},
            "output_tokens_details": {"reasoning_tokens": 2},
        },
    }
    view = response_view(answer)
    message = view["choices"][0]["message"]
    assert message["content"] == "ab" and message["tool_calls"][0]["function"] == {"name": "g", "arguments": '{"x":1}'}
    assert view["choices"][0]["finish_reason"] == "tool_calls" and view["id"] == "resp_1"
    assert view["created"] == 1700000000 and view["model"] == "m-2025"
    assert view["usage"] == {
        "prompt_tokens": 10,
        "completion_tokens": 4,
        "total_tokens": 14,
        "prompt_tokens_details": {"cached_tokens": 3},
        "completion_tokens_details": {"reasoning_tokens": 2},
    }
    with pytest.raises(ValueError, match="output"):
        response_view({"id": "x"})
