"""A reply answered again and again is put in wire order once and kept as JSON text (reader.py,
wire_form.answer_message_text): every answer is a fresh body, in the wire's key order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from recordings import recording

from tauproxy.store.cassette import Cassette
from tauproxy.store.format import json_value
from tauproxy.store.wire_form import answer_message, answer_message_text

TOOL_CALL = {"function": {"arguments": '{"a":1}', "name": "f"}, "id": "call_1", "type": "function"}


def test_answer_message_text_reads_back_as_answer_message() -> None:
    reply = {"content": "caf\u00e9 \ud800 1.5e-7", "role": "assistant", "tool_calls": [TOOL_CALL], "zeta": 0.1}
    text = answer_message_text(json.dumps(reply, sort_keys=True))
    expected = answer_message(json.loads(json.dumps(reply, sort_keys=True)))
    assert json.loads(text) == expected
    assert list(json.loads(text)) == ["role", "content", "tool_calls", "zeta"]
    assert list(json.loads(text)["tool_calls"][0]) == ["id", "type", "function"]


def test_a_reply_answered_twice_is_a_fresh_body_in_wire_order(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    keys = []
    for index in range(2):  # two calls with the same reply
        request = {"model": "m", "messages": [{"role": "user", "content": f"q {index}"}]}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]}
        keys.append(cassette.record(recording(request, {"choices": [{"message": message}]})).sample_key)
    bodies = []
    for key in keys:
        entry = cassette.lookup(key)
        assert entry is not None
        bodies.append(cassette.response_of(entry))
    first = bodies[0]["choices"][0]["message"]
    assert list(first) == ["role", "content", "tool_calls"] and first["content"] is None
    assert list(first["tool_calls"][0]) == ["id", "type", "function"]
    first["tool_calls"].clear()  # a caller may change what it is given
    entry = cassette.lookup(keys[1])
    assert entry is not None
    assert cassette.response_of(entry) == bodies[1] and bodies[1]["choices"][0]["message"]["tool_calls"] == [TOOL_CALL]


@pytest.mark.parametrize(
    "text", ['{"a":1,"a":[2.5e-05,1e400,-0.0,123456789012345678901234567890]}', '"\\ud800 alone"', '"\\ud83d\\ude00"']
)
def test_json_value_is_what_json_loads_gives(text: str) -> None:
    value = json_value(text)
    assert repr(value) == repr(json.loads(text))
