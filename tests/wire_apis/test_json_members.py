"""A request body read member by member, its tool list copied from memory, is exactly what json's own
parse and the usual checks make of it: the same value, the same refusal, whatever came before."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

from tauproxy.wire_apis import json_body
from tauproxy.wire_apis.base import RequestRejected
from tauproxy.wire_apis.json_body import MAX_JSON_DEPTH, nesting_depth, parse_json_object


def tools(variant: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": f"tool_{index}_{variant}",
                "description": 'Looks up one thing. Entrée ☃ \u2028 \\ " ' * 4,
                "parameters": {
                    "type": "object",
                    "properties": {"n": {"type": "number", "minimum": -0.0, "maximum": 1.5e300, "default": 0.1}},
                    "required": ["n"],
                    "big": 2**80,
                    "flags": [True, False, None],
                },
            },
        }
        for index in range(6)
    ]


def body(index: int, tool_list: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [{"role": "system", "content": "policy " * 50}, {"role": "user", "content": f"turn {index}"}],
        "tools": tools() if tool_list is None else tool_list,
        "temperature": 0.7,
        **extra,
    }


def as_json_does(raw: bytes) -> tuple[str, Any]:
    """What parse_json_object made of a body before it read members: json.loads, then the checks."""
    what = "request body"
    try:
        value = json.loads(
            raw.decode("utf-8"),
            parse_constant=functools.partial(json_body._refuse_constant, what),
            parse_float=functools.partial(json_body._finite_float, what),
        )
    except RequestRejected as exc:
        return "refused", str(exc)
    except RecursionError:
        return "refused", f"request body nests deeper than {MAX_JSON_DEPTH} levels"
    except ValueError as exc:
        return "refused", f"request body is not valid JSON: {exc}"
    path = json_body.lone_surrogate_path(value) if json_body._SURROGATE_ESCAPE.search(raw) else None
    if path is not None:
        return "refused", f"{path} holds a lone surrogate escape (\\uD800-\\uDFFF), which is not a character"
    if nesting_depth(value) > MAX_JSON_DEPTH:
        return "refused", f"request body nests deeper than {MAX_JSON_DEPTH} levels"
    if not isinstance(value, dict):
        return "refused", "request body must be a JSON object"
    return "value", value


def outcome(raw: bytes) -> tuple[str, Any]:
    try:
        return "value", parse_json_object(raw)
    except RequestRejected as exc:
        return "refused", str(exc)


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down and floats equal bit for bit (-0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return math.copysign(1, a) == math.copysign(1, b) and (a == b or (math.isnan(a) and math.isnan(b)))
    return bool(a == b)


def bodies() -> Iterator[bytes]:
    deep: Any = "x"
    for _ in range(MAX_JSON_DEPTH):
        deep = [deep]
    for index in range(3):  # the first of each remembers the tool list; the rest read it back
        yield json.dumps(body(index)).encode()
        yield json.dumps(body(index), indent=2).encode()  # other whitespace around the same tool list
        yield json.dumps(body(index), separators=(",", ":"), ensure_ascii=False).encode()
        yield json.dumps(body(index, tools(1))).encode()
    plain = json.dumps(body(9))
    tool_text = json.dumps(tools())
    yield (plain[:-1] + f', "tools": {json.dumps(tools(2))}}}').encode()  # a repeated key: the last value wins
    yield (plain[:-1] + ', "tools": 3}').encode()
    yield ('{"tools": ' + tool_text + ', "model": "m", "tools": ' + tool_text + "}").encode()
    yield (plain[:-1] + ",}").encode()  # a trailing comma
    yield (plain[:-1] + "} x").encode()  # extra data
    yield (plain[:-1] + "]").encode()
    yield plain.replace(tool_text, tool_text + "]", 1).encode()  # the remembered text, then a stray bracket
    yield plain.replace(tool_text, tool_text[:-1], 1).encode()  # cut short
    yield plain.replace('"m"', '"m", "x": NaN', 1).encode()
    yield plain.replace('"m"', '"m", "x": 1e999', 1).encode()
    yield plain.replace("policy", "\\ud800 policy", 1).encode()  # a lone surrogate
    yield plain.replace("policy", "\\ud83d\\ude00 policy", 1).encode()  # a pair: a character
    yield json.dumps(body(0, extra=deep)).encode()  # within the depth limit, the tool list remembered
    yield json.dumps(body(0, extra=[deep])).encode()  # one level past it
    yield json.dumps(body(0, [*tools(), {"deep": deep}])).encode()  # a new tool list past it
    yield b"\xef\xbb\xbf" + plain.encode()  # a byte order mark
    yield b" \n" + plain.encode() + b"\r\n\t"
    yield b"{}"
    yield b"[]"
    yield b'{"model": "m"}'
    yield b'{"tools": []}'


def test_a_body_read_member_by_member_is_what_json_makes_of_it() -> None:
    json_body._REMEMBERED.clear()
    for raw in bodies():
        expected, got = as_json_does(raw), outcome(raw)
        assert got[0] == expected[0] and (same(got[1], expected[1]) if got[0] == "value" else got == expected), raw[:80]


def test_a_remembered_tool_list_is_a_fresh_copy_for_each_request() -> None:
    json_body._REMEMBERED.clear()
    raw = json.dumps(body(0)).encode()
    first = parse_json_object(raw)
    first["tools"][0]["function"]["name"] = "changed"
    first["tools"].append({"extra": True})
    second = parse_json_object(raw)
    assert second["tools"] == tools() and second["tools"] is not first["tools"]


@pytest.mark.parametrize("spaced", [False, True])
def test_a_tool_list_remembered_once_is_read_back_where_it_starts(spaced: bool) -> None:
    json_body._REMEMBERED.clear()
    raw = json.dumps(body(0), indent=2 if spaced else None).encode()
    parse_json_object(raw)
    text = raw.decode()
    at = text.index("[", text.index('"tools"'))
    found = json_body._REMEMBERED.find(text, at)
    assert found is not None and same(found[0], tools()) and found[2] == nesting_depth(tools())
