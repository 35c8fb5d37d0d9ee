"""Entry format v4: a call line leaves out what its reader derives (the request key above all), and the
reader derives it from the stored request, verified, whatever order a union merge leaves the lines in."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from recordings import recording
from test_cassette import TOOLS, body, lines_of, record, wire
from test_chain import conversation, write_lines

from tauproxy.data_model.call import Usage
from tauproxy.data_model.key import (
    KEY_VERSION,
    KeyHasher,
    SampleIdentity,
    TrialScope,
    canonical_json,
    canonical_request,
    request_key,
    sample_key,
)
from tauproxy.store import format as store_format
from tauproxy.store import index_build, index_db, index_query
from tauproxy.store.cassette import Cassette
from tauproxy.store.entry import ENTRY_VERSION, CassetteEntry
from tauproxy.store.maintenance import compact, verify

WIRES: list[dict[str, Any]] = [
    {"model": "m", "messages": []},
    {"model": None},
    {
        "model": "x",
        "messages": [{"role": "user", "content": 'h\u00e9llo \u2028 "quoted"\n'}],
        "tools": [],
        "tool_choice": None,
        "temperature": 0.0,
    },
    {
        "model": "openai/gpt-4.1",
        "seed": 3,
        "stop": ["x"],
        "response_format": {"type": "json_object"},
        "messages": [
            {"role": "system", "content": "s"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": '{"b": 1, "a": 2}'}}],
            },
        ],
        "tools": TOOLS,
        "tool_choice": {"type": "function", "function": {"name": "f"}},
        "api_key": "sk-never",
    },
]


@pytest.mark.parametrize("request_body", WIRES)
def test_the_key_hashed_message_by_message_is_the_documented_key(request_body: dict[str, Any]) -> None:
    # What the key hashes, written out: v4 cassettes derive keys with KeyHasher, so it must be this.
    documented = hashlib.sha256(
        canonical_json({"key_version": KEY_VERSION, **canonical_request(request_body)}).encode()
    ).hexdigest()
    assert request_key(request_body) == documented
    canonical = canonical_request(request_body)
    hasher = KeyHasher()
    for message in canonical["messages"]:
        hasher = hasher.then(canonical_json(message))
    tools = None if canonical["tools"] is None else canonical_json(canonical["tools"])
    assert hasher.key(canonical["model"], canonical["params"], canonical["tool_choice"], tools) == documented


def test_a_v4_call_line_leaves_out_what_it_derives_and_reads_back_the_same_entries(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    question = [{"role": "user", "content": "where is my order?"}]
    reply = body({"role": "assistant", "content": "on its way"})
    plain = cassette.record(
        recording(wire(question, seed=5), reply, usage=Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12))
    )
    odd_usage = Usage(prompt_tokens=10, completion_tokens=2, total_tokens=20, cached_tokens=3)
    odd = record(cassette, wire(question, seed=6), reply, usage=odd_usage)
    # A seed other than the request's (here none, while the request has one) is written, even null.
    unseeded = recording(wire(question, seed=7), reply, call_index=2)
    identity = unseeded.identity
    unseeded = unseeded.model_copy(
        update={
            "identity": SampleIdentity(
                key=identity.key,
                seed=None,
                scope=TrialScope(task_id="t1", trial=0),
                occurrence=0,
                sample_key=sample_key(identity.key, None, "t1", 0, 0),
            )
        }
    )
    no_seed = cassette.record(unseeded)

    calls = [line for line in lines_of(tmp_path / "c") if line["t"] == "call"]
    assert all(line["v"] == ENTRY_VERSION == 4 and "key" not in line and "sample_key" not in line for line in calls)
    assert "seed" not in calls[0] and calls[0]["usage"] == {"completion_tokens": 2, "prompt_tokens": 10}
    assert not {"cost_usd", "price_source", "latency_s"} & set(calls[0])  # null, null and 0: left out
    assert calls[1]["usage"] == {"cached_tokens": 3, "completion_tokens": 2, "prompt_tokens": 10, "total_tokens": 20}
    assert calls[1]["latency_s"] == 0.25 and calls[1]["cost_usd"] == 0.001 and "seed" not in calls[1]
    assert calls[2]["seed"] is None
    assert not any(
        value is None
        for line in calls[:2]
        for part in (line, line["request"], line["response"])
        for value in part.values()
    )

    reopened = Cassette.open(tmp_path / "c", create=False)
    assert reopened.problems == [] and verify(reopened) == []
    for entry in (plain, odd, no_seed):
        assert reopened.lookup(entry.sample_key) == entry
        assert request_key(reopened.request_of(entry)) == entry.key


def test_the_recording_time_is_kept_to_the_second_and_the_latency_to_10_ms(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    entry = cassette.record(
        recording(wire([{"role": "user", "content": "hi"}]), body({"role": "assistant"}), latency_s=0.4329027)
    )
    assert entry.latency_s == 0.43 and len(entry.recorded_at) == len("2026-12-01T21:09:43Z")
    assert Cassette.open(tmp_path / "c", create=False).lookup(entry.sample_key) == entry


@pytest.mark.parametrize("batch", [3, index_build.BATCH])
def test_keys_are_derived_when_a_union_merge_puts_calls_before_their_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    monkeypatch.setattr(index_build, "BATCH", batch)  # small: the calls are inserted before their content
    directory = tmp_path / "c"
    _, entries = conversation(directory, 4)
    lines = lines_of(directory)
    calls = [line for line in lines if line["t"] == "call"]
    write_lines(directory, [*reversed(calls), *reversed([line for line in lines if line["t"] != "call"])])

    reopened = Cassette.open(directory, create=False)
    assert reopened.problems == [] and verify(reopened) == []
    for entry in entries:
        found = reopened.lookup(entry.sample_key)
        assert found is not None and found.key == entry.key == request_key(reopened.request_of(found))


def test_an_edited_call_line_is_read_under_the_key_of_its_new_request(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    cassette = Cassette.open(directory)
    system = {"role": "system", "content": "Be exact."}
    first = record(cassette, wire([system, {"role": "user", "content": "a"}]), body({"role": "assistant"}))
    long_question = {"role": "user", "content": "b " * 3000}  # so the edit is far before the checked tail
    record(cassette, wire([system, long_question]), body({"role": "assistant"}))
    file = directory / "calls.jsonl"
    text = file.read_text()
    assert text.count('"temperature":0.0') == 2 and len(text.split('"temperature":0.0', 1)[1]) > 4096
    file.write_text(text.replace('"temperature":0.0', '"temperature":0.5', 1))  # same size, in place

    reopened = Cassette.open(directory, create=False)  # the index still covers the file as it was
    assert reopened.lookup(first.sample_key) is None  # never served under the key of the request it had
    edited = wire([system, {"role": "user", "content": "a"}]) | {"temperature": 0.5}
    found = reopened.by_key(request_key(edited))
    assert len(found) == 1 and reopened.request_of(found[0])["temperature"] == 0.5


def test_clashing_short_references_never_give_a_wrong_answer_and_heal_when_recorded_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two hex digits of reference: 256 names for some 60 contents, so many clash; and small batches,
    # so clashes are met within a batch and across batches when the index is built.
    monkeypatch.setattr(store_format, "REF_LEN", 2)
    for module in (index_db, index_query, index_build):
        monkeypatch.setattr(module, "REF_LEN", 2)
    monkeypatch.setattr(index_build, "BATCH", 3)
    directory = tmp_path / "c"
    recorded = [*conversation(directory, 8, task_id="a")[1], *conversation(directory, 8, task_id="b")[1]]
    refs = [line["request"]["chain"] for line in lines_of(directory) if line["t"] == "call"]
    assert any(len(ref) == 64 for ref in refs) and any(len(ref) == 2 for ref in refs)  # the writer saw clashes

    def check(cassette: Cassette) -> list[CassetteEntry]:
        """Every call is served with its own request and answer, or reported unusable: never guessed."""
        lost = []
        for entry in recorded:
            found = cassette.lookup(entry.sample_key)
            if found is None:
                lost.append(entry)
                continue
            assert request_key(cassette.request_of(found)) == entry.key
            assert (
                cassette.response_of(found)["choices"][0]["message"]
                == cassette.response_of(entry)["choices"][0]["message"]
            )
        assert len(cassette.problems) >= len(lost)
        assert all("ambiguous" in problem.reason or "two different" in problem.reason for problem in cassette.problems)
        return lost

    lost = check(Cassette.open(directory, create=False, fresh_index=True))
    assert 0 < len(lost) < len(recorded)
    for task in ("a", "b"):  # a call reported unusable is a miss: recorded again, it then resolves
        conversation(directory, 8, task_id=task)
    assert check(Cassette.open(directory, create=False, fresh_index=True)) == []
    compact(directory, drop_bad=True)  # the lines superseded by the new recordings go
    compacted = Cassette.open(directory, create=False, fresh_index=True)
    assert check(compacted) == [] and compacted.problems == [] and len(compacted) == len(recorded)


def test_entries_read_from_a_v3_line_and_its_v4_rewrite_are_equal(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    _, entries = conversation(directory, 2)
    v3 = []
    for line in lines_of(directory):
        if line["t"] == "call":
            entry = next(e for e in entries if e.call_index == line["call_index"])
            line = {"t": "call", **entry.model_dump(mode="json"), "v": 3}
            del line["sample_key"]
        elif line["t"] == "node":
            line["h"] = store_format.short_ref(store_format.node_hash(line["p"], line["m"]))
        v3.append(line)
    write_lines(directory, v3)
    old = Cassette.open(directory, create=False)
    assert {e.v for e in old.entries()} == {3}
    as_v3 = {e.sample_key: e.model_dump(exclude={"v"}) for e in old.entries()}
    compact(directory)
    new = Cassette.open(directory, create=False)
    assert {e.v for e in new.entries()} == {4}
    assert {e.sample_key: e.model_dump(exclude={"v"}) for e in new.entries()} == as_v3
    assert all(isinstance(e, CassetteEntry) for e in new.entries())


def test_an_index_of_the_previous_schema_is_rebuilt_not_misread(tmp_path: Path) -> None:
    import sqlite3

    directory = tmp_path / "c"
    _, entries = conversation(directory, 2)
    cassette = Cassette.open(directory, create=False)
    index_file = cassette.index_path()
    cassette.close()
    assert index_file is not None
    with sqlite3.connect(index_file) as db:  # what tauproxy before v4 left: calls without derived keys
        db.execute("UPDATE meta SET v = 'tauproxy-index-2' WHERE k = 'schema'")
    reopened = Cassette.open(directory, create=False)
    assert reopened.index_path() != index_file  # the next generation, built from the file
    assert all(reopened.lookup(entry.sample_key) == entry for entry in entries)
