"""Cassette reading and writing: exact round trips, linear size, supersede, damage, secrets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from recordings import recording

from tauproxy.data_model.call import Usage
from tauproxy.data_model.key import canonical_request, message_hash, request_key
from tauproxy.errors import CassetteError
from tauproxy.store.cassette import Cassette
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.maintenance import prune, verify

TOOLS = [{"type": "function", "function": {"name": "get_order", "parameters": {"type": "object"}}}]


def wire(messages: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
    return {"model": "gpt-4.1", "messages": messages, "temperature": 0.0, **params}


def body(message: dict[str, Any], usage: dict[str, Any] | None = None, rid: str = "chatcmpl-1") -> dict[str, Any]:
    return {
        "id": rid,
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-4.1-2025-04-14",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }


def record(
    cassette: Cassette,
    request: dict[str, Any],
    response: dict[str, Any],
    *,
    task_id: str = "t1",
    trial: int = 0,
    occurrence: int = 0,
    call_index: int = 0,
    usage: Usage | None = None,
) -> CassetteEntry:
    return cassette.record(
        recording(
            request,
            response,
            task_id=task_id,
            trial=trial,
            occurrence=occurrence,
            call_index=call_index,
            usage=usage or Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12),
            cost_usd=0.001,
            price_source="test",
            latency_s=0.25,
        )
    )


def lines_of(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (directory / "calls.jsonl").read_text().split("\n") if line]


def test_round_trip_is_exact(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    request = wire(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Where is order #1?"}],
        tools=TOOLS,
        tool_choice="auto",
        seed=7,
    )
    reply = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_Xy9",
                "type": "function",
                "function": {"name": "get_order", "arguments": '{"id":"1"}'},
            },
            {
                "id": "call_Zq2",
                "type": "function",
                "function": {"name": "get_order", "arguments": '{"id":"2"}'},
            },
        ],
    }
    wire_usage = {
        "prompt_tokens": 120,
        "completion_tokens": 30,
        "total_tokens": 150,
        "prompt_tokens_details": {"cached_tokens": 64},
        "completion_tokens_details": {"reasoning_tokens": 12},
    }
    usage = Usage(prompt_tokens=120, completion_tokens=30, total_tokens=150, cached_tokens=64, reasoning_tokens=12)
    sent = body(reply, wire_usage, rid="chatcmpl-abc")
    sent["choices"][0]["finish_reason"] = "tool_calls"
    entry = record(cassette, request, sent, usage=usage)

    for reader in (cassette, Cassette.open(tmp_path / "c", create=False)):
        stored = reader.lookup(entry.sample_key)
        assert stored is not None
        assert reader.response_of(stored) == sent
        assert request_key(reader.request_of(stored)) == entry.key
        assert canonical_request(reader.request_of(stored)) == canonical_request(request)
        assert stored.usage == usage and stored.seed == 7


def test_content_with_unicode_line_separators_survives(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    text = "line one\u2028line two\u0085\r\nthird «naïve» 🚀\n"
    entry = record(cassette, wire([{"role": "user", "content": text}]), body({"role": "assistant", "content": text}))
    reopened = Cassette.open(tmp_path / "c", create=False)
    assert reopened.problems == []
    stored = reopened.lookup(entry.sample_key)
    assert stored is not None
    assert reopened.request_of(stored)["messages"][0]["content"] == text
    assert reopened.response_of(stored)["choices"][0]["message"]["content"] == text


def test_forty_turns_store_each_message_once(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a support agent. " * 80}]
    for turn in range(40):
        history.append({"role": "user", "content": f"question {turn} " + "details " * 30})
        reply = {"role": "assistant", "content": f"answer {turn} " + "explanation " * 30}
        record(cassette, wire(list(history)), body(reply), call_index=turn)
        history.append(reply)

    lines = lines_of(tmp_path / "c")
    msg_lines = [line for line in lines if line["t"] == "msg"]
    assert len(msg_lines) == len({message_hash(m) for m in history}) == 81
    assert sum(line["t"] == "call" for line in lines) == 40
    # Content is stored once; each call line only lists 64-char hashes. Written out in full, the 40
    # requests would be several times larger than the whole cassette.
    full_requests = sum(len(json.dumps(history[: 2 * i + 2])) for i in range(40))
    assert (tmp_path / "c" / "calls.jsonl").stat().st_size * 3 < full_requests


def _conversation_file(directory: Path, calls: int) -> tuple[Path, list[dict[str, Any]]]:
    """Record one trial of `calls` calls, each request the previous one plus two messages of ~80 bytes."""
    cassette = Cassette.open(directory)
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a support agent."}]
    for turn in range(calls):
        history.append({"role": "user", "content": f"question {turn:03d} " + "x" * 60})
        reply = {"role": "assistant", "content": f"answer {turn:03d} " + "y" * 62}
        record(cassette, wire(list(history)), body(reply), call_index=turn)
        history.append(reply)
    return directory / "calls.jsonl", history


def test_cassette_grows_linearly_with_the_conversation(tmp_path: Path) -> None:
    file_30, _ = _conversation_file(tmp_path / "c30", 30)
    file_60, history = _conversation_file(tmp_path / "c60", 60)
    size_30, size_60 = file_30.stat().st_size, file_60.stat().st_size
    # Twice the calls, twice the bytes (listing every message's hash on every call line made it 3.2x).
    assert size_60 / size_30 < 2.3
    lines = lines_of(tmp_path / "c60")
    messages = sum(len(raw) + 1 for raw in file_60.read_bytes().split(b"\n") if b'"t":"msg"' in raw)
    assert sum(line["t"] == "msg" for line in lines) == len(history) == 121
    # Each call adds one chain node per new message (two) and one call line of constant size.
    assert sum(line["t"] == "node" for line in lines) == 120
    assert max(len(json.dumps(line["request"])) for line in lines if line["t"] == "call") < 400
    assert size_60 < messages + 60 * 1500


def test_re_recording_a_sample_supersedes_it(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    request = wire([{"role": "user", "content": "hi"}])
    first = record(cassette, request, body({"role": "assistant", "content": "first"}))
    second = record(cassette, request, body({"role": "assistant", "content": "second"}))
    assert first.sample_key == second.sample_key
    for reader in (cassette, Cassette.open(tmp_path / "c", create=False)):
        assert len(reader) == 1
        winner = reader.lookup(first.sample_key)
        assert winner is not None
        assert reader.response_of(winner)["choices"][0]["message"]["content"] == "second"
        assert len(reader.by_key(first.key)) == 1
        assert len(reader.history()) == 2


def _three_calls(directory: Path) -> list[CassetteEntry]:
    cassette = Cassette.open(directory)
    return [
        record(
            cassette,
            wire([{"role": "user", "content": f"q{i}"}]),
            body({"role": "assistant", "content": f"a{i}"}),
        )
        for i in range(3)
    ]


def test_garbled_middle_line_is_reported_and_skipped(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    entries = _three_calls(directory)
    file = directory / "calls.jsonl"
    raw = file.read_text().splitlines(keepends=True)
    call_lines = [i for i, line in enumerate(raw) if '"t":"call"' in line]
    raw[call_lines[1]] = '{"t":"call","key": garbage\n'
    file.write_text("".join(raw))

    reopened = Cassette.open(directory, create=False)
    assert [str(p) for p in reopened.problems] == [
        f"{file}:{call_lines[1] + 1}: not JSON (Expecting value at column 20)"
    ]
    assert reopened.lookup(entries[0].sample_key) is not None
    assert reopened.lookup(entries[1].sample_key) is None
    assert reopened.lookup(entries[2].sample_key) is not None
    assert verify(reopened) == [str(reopened.problems[0])]


def test_truncated_last_line_then_new_record_starts_on_a_new_line(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    entries = _three_calls(directory)
    file = directory / "calls.jsonl"
    file.write_bytes(file.read_bytes()[:-25])  # a crash in the middle of the last call line
    last_line = len(file.read_bytes().split(b"\n"))

    reopened = Cassette.open(directory, create=False)
    assert len(reopened.problems) == 1
    assert str(reopened.problems[0]).startswith(f"{file}:{last_line}: truncated last line")
    assert reopened.lookup(entries[0].sample_key) is not None
    assert reopened.lookup(entries[2].sample_key) is None

    fresh = record(reopened, wire([{"role": "user", "content": "after crash"}]), body({"role": "assistant"}))
    again = Cassette.open(directory, create=False)
    assert again.lookup(fresh.sample_key) is not None
    assert [p.line for p in again.problems] == [last_line]
    assert verify(again) == [str(again.problems[0])]


def test_tampered_message_is_detected(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    entries = _three_calls(directory)
    file = directory / "calls.jsonl"
    file.write_text(file.read_text().replace('"content":"q1"', '"content":"q1 (edited)"'))

    reopened = Cassette.open(directory, create=False)
    reasons = [p.reason for p in reopened.problems]
    assert any("msg hash mismatch" in reason for reason in reasons)
    assert any("not stored" in reason for reason in reasons)  # the call using it is unusable too
    assert reopened.lookup(entries[1].sample_key) is None
    assert reopened.lookup(entries[0].sample_key) is not None
    assert any("hash mismatch" in problem for problem in verify(reopened))


def test_entry_from_a_newer_tauproxy_asks_for_an_upgrade(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    _three_calls(directory)
    file = directory / "calls.jsonl"
    newest = lines_of(directory)[-1] | {"v": 99}
    with file.open("a") as handle:
        handle.write(json.dumps(newest) + "\n")
    with pytest.raises(CassetteError, match=r"calls\.jsonl:\d+: .*newer tauproxy.*upgrade"):
        Cassette.open(directory, create=False)


def test_secrets_are_refused_and_never_written(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    request = wire([{"role": "user", "content": "hi"}])
    for leak in ({"api_key": "sk-secret"}, {"extra_headers": {"Authorization": "Bearer sk-secret"}}):
        with pytest.raises(CassetteError, match="refusing to record"):
            record(cassette, request | leak, body({"role": "assistant", "content": "ok"}))
    record(cassette, request, body({"role": "assistant", "content": "ok"}))
    text = (tmp_path / "c" / "calls.jsonl").read_text()
    assert "sk-" not in text and "Authorization" not in text
    assert len(Cassette.open(tmp_path / "c", create=False)) == 1


def test_key_must_match_the_request(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    request = wire([{"role": "user", "content": "hi"}])
    with pytest.raises(CassetteError, match="not the key of this request"):
        cassette.record(recording(request, body({"role": "assistant", "content": "ok"}), key="0" * 64, sample="1" * 64))
    assert cassette.is_empty()


def test_canonical_request_form_is_accepted(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    request = wire([{"role": "user", "content": "hi"}], top_p=0.5)
    entry = record(cassette, request, body({"role": "assistant", "content": "ok"}))
    again = cassette.record(
        recording(
            canonical_request(request),
            body({"role": "assistant", "content": "ok"}),
            key=entry.key,
            sample=entry.sample_key,
        )
    )
    assert again.request == entry.request


def test_open_without_create_needs_an_existing_cassette(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="no cassette"):
        Cassette.open(tmp_path / "missing", create=False)
    assert not (tmp_path / "missing").exists()
    assert Cassette.open(tmp_path / "new").is_empty()
    assert (tmp_path / "new" / "calls.jsonl").exists()


def test_writer_notices_a_rewritten_file_and_rewrites_messages(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    writer = Cassette.open(directory)
    system = {"role": "system", "content": "shared system prompt"}
    record(writer, wire([system, {"role": "user", "content": "one"}]), body({"role": "assistant"}))
    # Another process prunes everything: the system message is gone from disk, not from `writer`.
    assert prune(Cassette.open(directory, create=False), set()) == 1
    entry = record(writer, wire([system, {"role": "user", "content": "two"}]), body({"role": "assistant"}))
    reopened = Cassette.open(directory, create=False)
    assert verify(reopened) == []
    stored = reopened.lookup(entry.sample_key)
    assert stored is not None
    assert reopened.request_of(stored)["messages"][0] == system


def test_the_answer_is_kept_exactly_as_the_upstream_gave_it(tmp_path: Path) -> None:
    """Canonical forms are for keys: replaying returns the tool-call arguments byte for byte, and
    compact keeps that; an answer already canonical stores no second copy."""
    from tauproxy.store.maintenance import compact

    cassette = Cassette.open(tmp_path / "c")
    arguments = '{"b": 1,  "a": [2, 3]}'
    raw = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": arguments}}],
    }
    entry = record(cassette, wire([{"role": "user", "content": "go"}]), body(raw))
    assert entry.response.raw is not None
    for reader in (cassette, Cassette.open(tmp_path / "c")):
        message = reader.response_of(reader.entries()[0])["choices"][0]["message"]
        assert message == raw and message["tool_calls"][0]["function"]["arguments"] == arguments
    assert (
        cassette.reader.message(entry.response.message)["tool_calls"][0]["function"]["arguments"] == '{"a":[2,3],"b":1}'
    )
    compact(tmp_path / "c")
    again = Cassette.open(tmp_path / "c")
    assert again.response_of(again.entries()[0])["choices"][0]["message"] == raw
    plain = record(cassette, wire([{"role": "user", "content": "hi"}]), body({"role": "assistant", "content": "ok"}))
    assert plain.response.raw is None
    assert '"raw"' not in (tmp_path / "c" / "calls.jsonl").read_text().splitlines()[-1]
