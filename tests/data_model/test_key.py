"""The key changes exactly when a field that can change the output changes (one field at a time)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tauproxy.data_model.call import ConnectionSettings, ModelRequest
from tauproxy.data_model.key import EXCLUDED_PARAMS, request_key, sample_key, without_connection_settings
from tauproxy.data_model.message import Message, ToolCall
from tauproxy.data_model.wire import request_to_wire

BASE: dict[str, Any] = {
    "model": "openai/gpt-4.1",
    "messages": [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1, "b": 2}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "tool_choice": "auto",
    "temperature": 0.0,
    "seed": 7,
}


def changed(path: str, value: Any) -> dict[str, Any]:
    body = copy.deepcopy(BASE)
    target: Any = body
    parts = path.split(".")
    for part in parts[:-1]:
        target = target[int(part)] if part.isdigit() else target[part]
    last = parts[-1]
    target[int(last) if last.isdigit() else last] = value
    return body


INCLUDED_CHANGES = [
    ("model", "openai/gpt-4.1-mini"),
    ("messages.0.content", "other policy"),
    ("messages.1.content", "hello"),
    ("messages.1.role", "system"),
    ("messages.2.tool_calls.0.id", "c2"),
    ("messages.2.tool_calls.0.function.arguments", '{"a": 1, "b": 3}'),
    ("messages.3.content", "not ok"),
    ("tools.0.function.name", "g"),
    ("tool_choice", "required"),
    ("temperature", 0.7),
    ("seed", 8),
    ("top_p", 0.5),
    ("max_tokens", 100),
    ("response_format", {"type": "json_object"}),
]

EXCLUDED_CHANGES = [
    ("api_key", "sk-secret"),
    ("api_base", "http://elsewhere/v1"),
    ("base_url", "http://elsewhere/v1"),
    ("extra_headers", {"Authorization": "Bearer x"}),
    ("timeout", 3),
    ("num_retries", 5),
    ("max_retries", 5),
    ("metadata", {"run": "x"}),
    ("stream", True),
    ("user", "someone"),
    ("messages.2.tool_calls.0.function.arguments", '{"b":2,"a":1}'),  # same arguments, other text
    ("messages.2.content", None),
]


@pytest.mark.parametrize(("path", "value"), INCLUDED_CHANGES)
def test_included_field_changes_key(path: str, value: Any) -> None:
    assert request_key(changed(path, value)) != request_key(BASE)


@pytest.mark.parametrize(("path", "value"), EXCLUDED_CHANGES)
def test_excluded_field_keeps_key(path: str, value: Any) -> None:
    assert request_key(changed(path, value)) == request_key(BASE)


def test_dict_order_does_not_matter() -> None:
    reordered = dict(reversed(list(BASE.items())))
    assert request_key(reordered) == request_key(BASE)


def test_excluded_set_is_what_the_docstring_lists() -> None:
    import tauproxy.data_model.key as key_module

    for name in EXCLUDED_PARAMS:
        assert name in (key_module.__doc__ or "")


# Every field the filter drops, with a value of the kind a caller passes.
CONNECTION_FIELDS: list[tuple[str, Any]] = [
    ("api_key", "sk-secret"),
    ("api_base", "http://127.0.0.1:9/v1"),
    ("base_url", "http://127.0.0.1:9/v1"),
    ("api_version", "2024-06-01"),
    ("organization", "org-x"),
    ("aws_access_key_id", "AKIA"),
    ("aws_secret_access_key", "secret"),
    ("aws_session_token", "token"),
    ("vertex_credentials", "{}"),
    ("authorization", "Bearer x"),
    ("headers", {"X-Key": "k"}),
    ("extra_headers", {"Authorization": "Bearer x"}),
    ("timeout", 3),
    ("request_timeout", 3),
    ("num_retries", 5),
    ("max_retries", 5),
    ("metadata", {"run": "x"}),
    ("user", "someone"),
    ("stream", True),
    ("stream_options", {"include_usage": True}),
]

# Fields the filter keeps: everything that can change an answer, unknown names included.
KEY_FIELDS: list[tuple[str, Any]] = [
    ("model", "openai/gpt-4.1"),
    ("messages", [{"role": "user", "content": "hi"}]),
    ("tools", [{"type": "function", "function": {"name": "f"}}]),
    ("tool_choice", "auto"),
    ("temperature", 0.0),
    ("top_p", 0.5),
    ("seed", 7),
    ("max_tokens", 100),
    ("stop", ["\n"]),
    ("response_format", {"type": "json_object"}),
    ("n", 1),
    ("reasoning_effort", "low"),
    ("a_parameter_no_one_has_heard_of", 1),
    ("Timeout", 3),  # names are matched exactly: a differently spelt name is kept, so it is keyed
]


def test_the_table_names_every_connection_field() -> None:
    assert {name for name, _ in CONNECTION_FIELDS} == EXCLUDED_PARAMS


@pytest.mark.parametrize(("name", "value"), CONNECTION_FIELDS)
def test_without_connection_settings_drops(name: str, value: Any) -> None:
    assert without_connection_settings({"temperature": 0, name: value}) == {"temperature": 0}


@pytest.mark.parametrize(("name", "value"), KEY_FIELDS)
def test_without_connection_settings_keeps(name: str, value: Any) -> None:
    assert without_connection_settings({"api_base": "http://x/v1", name: value}) == {name: value}


def test_without_connection_settings_keeps_nulls_and_leaves_its_argument_alone() -> None:
    """It drops names only: a null value stays (the key drops nulls itself), the input is unchanged."""
    args = {"api_key": "sk-x", "temperature": None, "seed": 3}
    assert without_connection_settings(args) == {"temperature": None, "seed": 3}
    assert args == {"api_key": "sk-x", "temperature": None, "seed": 3}


def test_sample_identity_separates_trials_seeds_and_occurrences() -> None:
    key = request_key(BASE)
    base = sample_key(key, 7, "t", 0, 0)
    assert (
        len(
            {
                base,
                sample_key(key, 8, "t", 0, 0),
                sample_key(key, 7, "t", 1, 0),
                sample_key(key, 7, "u", 0, 0),
                sample_key(key, 7, "t", 0, 1),
            }
        )
        == 5
    )


def test_connection_settings_never_reach_the_wire() -> None:
    request = ModelRequest(
        model="m",
        messages=[Message(role="assistant", tool_calls=[ToolCall(id="1", name="f", arguments={"b": 1, "a": 2})])],
        params={"temperature": 0, "api_key": "sk-leak"},
        connection=ConnectionSettings(api_key="sk-secret", api_base="http://x"),
    )
    wire = request_to_wire(request)
    text = str(wire)
    assert "sk-secret" not in text and "sk-leak" not in text and "http://x" not in text
    assert wire["messages"][0]["tool_calls"][0]["function"]["arguments"] == '{"a":2,"b":1}'


def test_conversation_keys_are_request_keys_as_a_conversation_grows_forks_and_changes() -> None:
    from tauproxy.data_model.key import ConversationKeys

    keys = ConversationKeys()
    messages = list(BASE["messages"])
    tools = BASE["tools"]
    seen = []
    for turn in range(6):
        wire = {**BASE, "messages": list(messages), "tools": tools, "seed": turn}
        assert keys.key(wire) == request_key(wire)
        seen.append(keys.key(wire))
        messages.append({"role": "user" if turn % 2 else "assistant", "content": f"turn {turn}", "name": None})
    assert len(set(seen)) == len(seen)
    # A request that shares only a prefix (a retry, another branch), other tools, no tools at all.
    branch = {**BASE, "messages": [*BASE["messages"][:2], {"role": "user", "content": "other"}]}
    assert keys.key(branch) == request_key(branch)
    other_tools = {**BASE, "tools": [{"type": "function", "function": {"name": "g"}}]}
    assert keys.key(other_tools) == request_key(other_tools)
    bare = {k: v for k, v in BASE.items() if k not in ("tools", "tool_choice")}
    assert keys.key(bare) == request_key(bare)
    # Equal but not the same objects: rehashed, and still equal.
    assert keys.key(copy.deepcopy(BASE)) == request_key(BASE)


def test_a_tool_list_seen_before_keys_as_it_did_and_a_changed_one_keys_anew() -> None:
    from tauproxy.data_model import key as key_module

    tools = [{"type": "function", "function": {"name": "f", "description": None, "parameters": {"a": [1, None]}}}]
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": tools}
    key_module._TOOLS_TEXTS.clear()
    first = request_key(body)
    assert request_key(json.loads(json.dumps(body))) == first  # a fresh copy of the same tools: the kept text
    key_module._TOOLS_TEXTS.clear()
    assert request_key(body) == first  # computed again without the kept text: the same key
    tools[0]["function"]["name"] = "g"  # the same list object, changed: keyed by what it holds now
    changed = request_key(body)
    assert changed != first
    key_module._TOOLS_TEXTS.clear()
    assert request_key(body) == changed


def test_a_message_seen_before_keys_as_it_did_and_equal_values_of_other_types_do_not_share_its_text() -> None:
    from tauproxy.data_model import key as key_module

    def fresh_key(body: dict[str, Any]) -> str:
        key_module._MESSAGE_TEXTS.clear()
        key_module._TOOLS_TEXTS.clear()
        return request_key(body)

    # 1, 1.0 and True are equal in Python but not in JSON: each keeps its own canonical text.
    bodies = [
        {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content": value}]}
        for value in (1, 1.0, True, "1")
    ]
    expected = [fresh_key(body) for body in bodies]
    assert len(set(expected)) == len(bodies)
    for body in bodies:  # the memo warm with each of the others first
        request_key(body)
    assert [request_key(json.loads(json.dumps(body))) for body in bodies] == expected
    # Keys in another order are the same message: the same key, memo or not.
    swapped = {"model": "m", "messages": [{"content": 1, "tool_call_id": "c", "role": "tool"}]}
    assert request_key(swapped) == expected[0] == fresh_key(swapped)

    # A value marshal refuses (a str subclass) is canonicalised as given.
    class Text(str):
        pass

    assert request_key({"model": "m", "messages": [{"role": "user", "content": Text("1")}]}) == fresh_key(
        {"model": "m", "messages": [{"role": "user", "content": "1"}]}
    )


def test_requests_that_share_their_first_message_key_as_each_alone() -> None:
    from tauproxy.data_model import key as key_module

    def alone(body: dict[str, Any]) -> str:
        key_module._FIRST_MESSAGES.clear()
        return request_key(body)

    policy = {"role": "system", "content": "policy " * 3000}
    bodies = [
        {"model": "m", "messages": [policy, *({"role": "user", "content": f"turn {t}"} for t in range(turns))]}
        for turns in range(4)
    ]
    bodies.append({"model": "m", "messages": [{**policy, "content": "another policy"}, *bodies[3]["messages"][1:]]})
    expected = [alone(body) for body in bodies]
    assert len(set(expected)) == len(bodies)
    for _ in range(2):  # each after the others: the hash state after the shared policy is reused
        assert [request_key(json.loads(json.dumps(body))) for body in bodies] == expected
    small = key_module._FirstMessageHashers(max_chars=20_000)  # past its bound, it starts again: the same keys
    hashers = []
    for body in bodies:
        first, *rest = body["messages"]
        hasher = small.then(key_module.message_text(first))
        for message in rest:
            hasher = hasher.then(key_module.message_text(message))
        hashers.append(key_module._finish(hasher, body, None))
    assert hashers == expected


def test_canonical_json_says_what_json_dumps_says_with_the_canonical_settings() -> None:
    from tauproxy.data_model.key import canonical_json

    values: list[Any] = [
        {"b": [1, 2.5, -0.0, 1e300, 2**70, True, None], "a": {"é": '☃ \u2028 \\ "', "": []}},
        [float("nan"), float("inf"), -float("inf"), 1.0, 0.1],
        "plain \ud83d\ude00 text",
        12,
        None,
        {10: "int keys", 9: {}},
    ]
    for value in values:
        assert canonical_json(value) == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    circular: list[Any] = []
    circular.append(circular)
    with pytest.raises(ValueError, match="Circular reference"):
        canonical_json(circular)
    with pytest.raises(TypeError, match="not JSON serializable"):
        canonical_json({"x": object()})


def test_a_message_of_strings_seen_before_keys_as_it_did_in_any_key_order() -> None:
    from tauproxy.data_model import key as key_module

    message = {"role": "system", "content": "policy ☃ " * 500, "name": "ops"}
    reordered = {"name": "ops", "content": "policy ☃ " * 500, "role": "system"}
    key_module._MESSAGE_TEXTS.clear()
    first = key_module.message_text(message)
    assert first == key_module.canonical_json(key_module.canonical_message(message))
    assert key_module.message_text(reordered) == first  # another entry, of the same text
    assert key_module.message_text({**message, "name": "other"}) != first
    empty_calls = {"role": "assistant", "content": "x", "tool_calls": ""}  # canonically dropped
    assert key_module.message_text(empty_calls) == '{"content":"x","role":"assistant"}'
    body = {"model": "m", "messages": [message]}
    remembered = request_key(body)
    key_module._MESSAGE_TEXTS.clear()
    assert request_key(json.loads(json.dumps(body))) == remembered
