"""The small parts of `tauproxy serve`: SSE framing, scope headers, the upstream map, error mapping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tauproxy.data_model.key import SERVE_SCOPE, Occurrences, TrialScope
from tauproxy.data_model.wire import normalise_response
from tauproxy.errors import ConfigError
from tauproxy.proxy.modes import RecordMode
from tauproxy.serve.completions import upstream_http_error
from tauproxy.serve.config import ServeConfig, load_upstream_map
from tauproxy.serve.errors import HttpError
from tauproxy.serve.identity import parse_role, parse_scope
from tauproxy.wire_apis.chat_stream import sse_body

COMPLETION: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 7,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": '{"x":1}'}},
                    {"id": "call_b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
}


def events(data: bytes) -> list[Any]:
    text = data.decode()
    assert text.endswith("data: [DONE]\n\n")
    return [json.loads(block.removeprefix("data: ")) for block in text.split("\n\n")[:-2]]


def test_sse_carries_tool_calls_and_the_usage_chunk() -> None:
    chunks = events(sse_body(COMPLETION, include_usage=True))
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == "chatcmpl-1" for c in chunks)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas[0] == {"role": "assistant", "content": None}
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert [(c["index"], c["id"], c["function"]["arguments"]) for c in calls] == [
        (0, "call_a", '{"x":1}'),
        (1, "call_b", "{}"),
    ]
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == COMPLETION["usage"]
    without = events(sse_body(COMPLETION, include_usage=False))
    assert all("usage" not in c for c in without) and len(without) == len(chunks) - 1


def test_scope_header() -> None:
    assert parse_scope(None) is None and TrialScope(task_id="serve", trial=0) == SERVE_SCOPE
    assert parse_scope("airline/task 3/2") == TrialScope(task_id="airline/task 3", trial=2)
    for bad in ("3", "task/", "/1", "task/x"):
        with pytest.raises(HttpError) as caught:
            parse_scope(bad)
        assert caught.value.status == 400
    assert parse_role("User") == "user" and parse_role(None) is None
    with pytest.raises(HttpError):
        parse_role("boss")


def test_occurrences_count_per_scope_and_key_in_claim_order() -> None:
    counter = Occurrences()
    other = TrialScope(task_id="t", trial=1)
    slots = [
        counter.take(SERVE_SCOPE, "k"),
        counter.take(SERVE_SCOPE, "k"),
        counter.take(other, "k"),
        counter.take(SERVE_SCOPE, "j"),
    ]
    assert [(s.occurrence, s.call_index) for s in slots] == [(0, 0), (1, 1), (0, 0), (0, 2)]


def test_upstream_map_routes_and_refuses_keys(tmp_path: Path) -> None:
    path = tmp_path / "map.yaml"
    path.write_text("gpt-x:\n  model: openai/x\n  api_key_env: X_KEY\n'*':\n  model: 'openai/{model}'\n")
    routes = load_upstream_map(path)
    assert routes.route("gpt-x").litellm_model("gpt-x") == "openai/x"
    assert routes.route("other").litellm_model("other") == "openai/other"
    assert routes.names() == ["gpt-x"] and routes.missing_key_envs() == ["X_KEY"]
    keyed = tmp_path / "keyed.json"
    keyed.write_text(json.dumps({"gpt-x": {"model": "openai/x", "api_key": "sk-secret"}}))
    with pytest.raises(ConfigError, match="api_key_env"):
        load_upstream_map(keyed)
    (tmp_path / "typo.json").write_text(json.dumps({"gpt-x": {"modle": "x"}}))
    with pytest.raises(ConfigError, match="modle"):
        load_upstream_map(tmp_path / "typo.json")


def test_config_needs_a_cassette_unless_off(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--cassette"):
        ServeConfig(cassette=None, mode=RecordMode.AUTO)
    assert ServeConfig(cassette=None, mode=RecordMode.OFF).goes_live
    assert not ServeConfig(cassette=tmp_path, mode=RecordMode.REPLAY).goes_live


def test_upstream_errors_map_to_http() -> None:
    from tauproxy.proxy.live import load_litellm, model_call_error

    litellm = load_litellm()

    def http(exc: Exception) -> HttpError:
        return upstream_http_error(model_call_error(exc, "m", ()))

    assert http(litellm.Timeout("slow", model="m", llm_provider="openai")).status == 504
    refused = http(litellm.APIConnectionError("refused", llm_provider="openai", model="m"))
    assert refused.status == 502 and refused.code == "upstream_unreachable"
    limited = http(litellm.RateLimitError("sk-abcdefghijkl too many", llm_provider="openai", model="m"))
    assert limited.status == 429 and "sk-abcdefghijkl" not in limited.message  # keys never echo back


def test_normalised_answers_keep_only_what_is_replayed() -> None:
    raw = json.loads(json.dumps(COMPLETION))
    raw["choices"][0]["message"].update({"function_call": None, "annotations": [], "audio": None})
    raw["choices"][0]["message"]["tool_calls"][0]["index"] = 0
    raw["system_fingerprint"] = "fp"
    body = normalise_response(raw)
    assert set(body["choices"][0]["message"]) == {"role", "content", "tool_calls"}
    assert body["choices"][0]["message"]["tool_calls"][0] == COMPLETION["choices"][0]["message"]["tool_calls"][0]
    with pytest.raises(ValueError, match="no choices"):
        normalise_response({"choices": []})


def test_bodies_that_cannot_be_keyed_are_refused_before_parsing() -> None:
    from tauproxy.serve.body import check_content_type
    from tauproxy.wire_apis.base import RequestRejected
    from tauproxy.wire_apis.chat import ChatApi
    from tauproxy.wire_apis.json_body import MAX_JSON_DEPTH, nesting_depth, parse_json_object

    def parse_chat_request(raw: bytes) -> object:
        return ChatApi().request(parse_json_object(raw))

    assert nesting_depth(json.loads(b'{"a": "[[[[", "b": [1, {"c": []}]}')) == 4  # brackets in strings do not count
    nested_messages = b'{"model": "m", "messages": [' + b"[" * 480 + b"]" * 480 + b"]}"
    nested_body = b"[" * 100_000 + b"]" * 100_000
    refusals = {
        nested_messages: "nests deeper",
        nested_body: "nests deeper",
        b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": NaN}': "NaN",
        b'{"model": "m", "messages": [{"content": "no role"}]}': "no 'role'",
    }
    for raw, reason in refusals.items():
        with pytest.raises(RequestRejected, match=reason) as caught:
            parse_chat_request(raw)
        assert caught.value.status == 400
    with pytest.raises(RecursionError):  # what json makes of the deepest body: refused as too deep above
        json.loads(nested_body)
    assert nesting_depth(json.loads(nested_messages)) > MAX_JSON_DEPTH
    for media in ("text/plain", "application/x-www-form-urlencoded"):
        with pytest.raises(HttpError) as refused:
            check_content_type(media)
        assert refused.value.status == 400
    for media in (None, "application/json", "application/json; charset=utf-8", "application/vnd.api+json"):
        check_content_type(media)
