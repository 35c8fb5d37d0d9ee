"""The writer's shortcuts say what the slow path would: the content lines it hands the index parse
to what it says, its one query per kind answers as `find` does, and the key it checks is request_key;
and the reader's one query for a hit's reply and raw body reads what one query each would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from recordings import recording

from tauproxy.data_model.key import canonical_json, canonical_request, request_key
from tauproxy.errors import CassetteError
from tauproxy.store.cassette import Cassette
from tauproxy.store.format import CallLine, encode_node, parse_line, short_ref
from tauproxy.store.index_build import IndexBuilder
from tauproxy.store.index_db import BLOB, MSG
from tauproxy.store.index_pending import AppendedLine, KeyedCall
from tauproxy.store.wire_form import stored_parts

TOOLS = [{"type": "function", "function": {"name": "look", "description": None, "parameters": {"b": 1, "a": [2.5]}}}]


def awkward_request(index: int) -> dict[str, Any]:
    """Unicode, floats, nulls to drop, tool-call arguments as text and unsorted keys."""
    return {
        "model": "m",
        "tools": TOOLS,
        "temperature": 0.7,
        "messages": [
            {"role": "system", "content": "politique: répondre «exactement» ☃", "name": None},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{index}", "function": {"name": "look", "arguments": '{"z": 1e-7, "a": 1}'}}],
            },
            {"role": "tool", "tool_call_id": f"c{index}", "content": '{"x": [1, 2.0, null]}'},
            {"role": "user", "content": f'turn {index} \u2028 \\ " end'},
        ],
    }


def answer(index: int) -> dict[str, Any]:
    message = {"content": f"réponse {index}", "role": "assistant", "refusal": None, "extra": {"b": 1.10, "a": None}}
    return {"id": f"r{index}", "model": "m-1", "choices": [{"message": message, "finish_reason": "stop"}]}


def test_lines_handed_to_the_index_are_what_parsing_them_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    handed: list[dict[bytes, AppendedLine]] = []
    sync = IndexBuilder.sync

    def spy(self: IndexBuilder, size: int, written: Any = None) -> None:
        handed.append(dict(written or {}))
        sync(self, size, written)

    monkeypatch.setattr(IndexBuilder, "sync", spy)
    cassette = Cassette.open(tmp_path / "c")
    for index in range(3):
        cassette.record(recording(awkward_request(index), answer(index), call_index=index))
    cassette.close()  # the index catches up with what was appended (index_pending.py)
    assert sum(len(lines) for lines in handed) >= 9
    calls = 0
    for lines in handed:
        for raw, line in lines.items():
            parsed = parse_line(raw)
            if isinstance(line, KeyedCall):  # a call line: with the key it was recorded under
                assert isinstance(parsed, CallLine) and parsed.keyed(line.entry.key) == line.entry
                calls += 1
            else:
                assert parsed == line
    assert calls == 3
    reopened = Cassette.open(tmp_path / "c", fresh_index=True)  # built from the file alone
    assert reopened.problems == [] and len(reopened) == 3
    assert [e.sample_key for e in reopened.entries()] == [e.sample_key for e in Cassette.open(tmp_path / "c").entries()]


def test_stored_parts_key_is_request_key() -> None:
    for index in range(3):
        wire = awkward_request(index)
        assert stored_parts(canonical_request(wire), answer(index)).key == request_key(wire)


def test_a_wrong_key_is_still_refused(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    with pytest.raises(CassetteError, match="is not the key of this request"):
        cassette.record(recording(awkward_request(0), answer(0), key="0" * 64))


def test_find_many_answers_as_find(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    cassette.record(recording(awkward_request(0), answer(0)))
    query = cassette.reader._file.index().query
    parts = stored_parts(canonical_request(awkward_request(1)), answer(1))
    refs = {short_ref(digest) for digest in parts.messages} | {"0" * 16}
    query.recent.clear()
    many = query.find_many(MSG, refs)
    query.recent.clear()
    assert many == {ref: query.find(MSG, ref) for ref in refs}
    assert any(found is not None for found in many.values()) and any(found is None for found in many.values())


def test_a_hits_reply_and_raw_body_are_read_in_one_query_as_each_alone(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    raw = '{"id": "r0", "object": "chat.completion", "choices": []}'
    cassette.record(recording(awkward_request(0), answer(0)).model_copy(update={"raw_body": raw}))
    (entry,) = cassette.entries()
    reply, body = (MSG, entry.response.message), (BLOB, entry.response.body or "")
    query = cassette.reader._file.index().query
    query.recent.clear()
    together = query.texts_of([reply, body, reply])
    assert together == [query.texts_of([want])[0] for want in (reply, body, reply)]
    with pytest.raises(CassetteError, match="is not stored"):
        query.texts_of([reply, (BLOB, "0" * 16)])
    fresh = Cassette.open(tmp_path / "c")  # a reader that has cached nothing
    assert fresh.response_of(entry) == cassette.response_of(entry)
    assert fresh.raw_body_of(entry) == raw


def test_node_lines_written_directly_are_canonical_json() -> None:
    for parent, message in [(None, "ab" * 8), ("cd" * 8, "ab" * 32), ("not hex", "ab" * 8), (None, "é")]:
        assert encode_node(parent, message) == canonical_json({"t": "node", "p": parent, "m": message}) + "\n"
