"""Message chains: shared prefixes, version-1 entries, broken chains, and a cheap replay path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_cassette import TOOLS, body, lines_of, record, wire

from tauproxy.data_model.key import canonical_json, canonical_request, message_hash, request_key, sample_key
from tauproxy.store.cassette import Cassette
from tauproxy.store.entry import ENTRY_VERSION, CassetteEntry, StoredRequest
from tauproxy.store.format import chain_refs, encode_msg, node_hash, short_ref
from tauproxy.store.maintenance import compact, merge, stats, verify
from tauproxy.store.miss import miss_message, nearest_entry

SYSTEM = {"role": "system", "content": "You are a support agent."}


def conversation(directory: Path, calls: int, task_id: str = "t1") -> tuple[Cassette, list[CassetteEntry]]:
    cassette = Cassette.open(directory)
    history: list[dict[str, Any]] = [SYSTEM]
    entries = []
    for turn in range(calls):
        history.append({"role": "user", "content": f"question {turn}"})
        reply = {"role": "assistant", "content": f"answer {turn}"}
        entries.append(
            record(cassette, wire(list(history), tools=TOOLS), body(reply), task_id=task_id, call_index=turn)
        )
        history.append(reply)
    return cassette, entries


def address(line: dict[str, Any]) -> str | None:
    """The reference a content line is named by: its `h`, or for a v4 node the hash of its `p` and `m`."""
    if line["t"] == "node":
        return line.get("h") or short_ref(node_hash(line["p"], line["m"]))
    return line.get("h")


def write_lines(directory: Path, lines: list[dict[str, Any]]) -> None:
    (directory / "calls.jsonl").write_text("".join(canonical_json(line) + "\n" for line in lines))


def as_version_1(directory: Path) -> None:
    """Rewrite a cassette as tauproxy wrote it before chains: no nodes, every call lists its messages."""
    cassette = Cassette.open(directory, create=False)
    by_line = dict(cassette.history())
    lines = []
    for number, line in enumerate(lines_of(directory), start=1):
        if line["t"] == "node":
            continue
        if line["t"] == "call":
            entry = by_line[number]
            line = {"t": "call", **entry.model_dump(mode="json"), "v": 1}  # v1 wrote every field
            request = line["request"]
            chain = request.pop("chain")
            request["messages"] = [message for _, _, message in cassette.reader.chain(chain)]
            assert line["sample_key"] == sample_key(entry.key, entry.seed, entry.task_id, entry.trial, entry.occurrence)
        lines.append(line)
    write_lines(directory, lines)


def test_each_call_writes_only_its_new_messages_and_nodes(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    conversation(directory, 1)
    before = len(lines_of(directory))
    conversation(directory, 2)  # the same first call again, then one more
    added = lines_of(directory)[before:]
    # Call 0 again: its call line only. Call 1: its question, its reply, two nodes, its call line.
    assert [line["t"] for line in added] == ["call", "msg", "msg", "node", "node", "call"]
    first, second = (line for line in added if line["t"] == "call")
    nodes = [line for line in added if line["t"] == "node"]
    assert nodes[0]["p"] == first["request"]["chain"]  # the new chain continues the old one
    assert "h" not in nodes[0] and "h" not in nodes[1]  # v4: a node is named by the hash of its p and m
    assert nodes[1]["p"] == short_ref(node_hash(nodes[0]["p"], nodes[0]["m"]))
    assert second["request"]["chain"] == short_ref(node_hash(nodes[1]["p"], nodes[1]["m"]))
    assert "messages" not in second["request"] and second["v"] == ENTRY_VERSION == 4
    assert "sample_key" not in second and "key" not in second  # both derived on read


def test_chain_hashes_are_the_documented_ones(tmp_path: Path) -> None:
    cassette, entries = conversation(tmp_path / "c", 2)
    request = cassette.request_of(entries[1])
    refs = [short_ref(message_hash(m)) for m in request["messages"]]
    parent = None
    for ref in refs:
        parent = short_ref(node_hash(parent, ref))
    assert entries[1].request.chain == parent == chain_refs(refs)[-1][0]
    assert cassette.reader.message_hashes(entries[1]) == refs
    assert cassette.message_count(entries[1]) == 4
    nodes = [line for line in lines_of(tmp_path / "c") if line["t"] == "node"]
    assert [short_ref(node_hash(node["p"], node["m"])) for node in nodes] == [ref for ref, _, _ in chain_refs(refs)]
    for line in lines_of(tmp_path / "c"):
        if line["t"] == "msg":
            assert line["h"] == short_ref(message_hash(line["m"]))


def test_a_request_without_messages_has_no_chain(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    entry = record(cassette, wire([]), body({"role": "assistant", "content": "hello?"}))
    assert entry.request.chain is None
    reopened = Cassette.open(tmp_path / "c", create=False)
    assert reopened.problems == [] and verify(reopened) == []
    stored = reopened.lookup(entry.sample_key)
    assert stored is not None and reopened.request_of(stored)["messages"] == []


def test_version_1_cassette_is_read_extended_and_compacted_to_version_4(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    cassette, entries = conversation(directory, 3)
    before = {e.sample_key: (cassette.request_of(e), cassette.response_of(e)) for e in entries}
    as_version_1(directory)
    assert not any(line["t"] == "node" for line in lines_of(directory))

    old = Cassette.open(directory, create=False)
    assert old.problems == [] and verify(old) == []
    assert {e.sample_key: (old.request_of(e), old.response_of(e)) for e in old.entries()} == before
    assert all(e.v == 1 and e.request.messages is not None for e in old.entries())
    wanted = before[entries[2].sample_key][0]
    assert nearest_entry(old, wanted, "t1", 0, "agent", 9) == old.lookup(entries[2].sample_key)

    # A new call in a v1 cassette is written as v4, reusing the messages the v1 lines stored.
    more = wanted["messages"] + [
        {"role": "assistant", "content": "answer 2"},
        {"role": "user", "content": "question 3"},
    ]
    lines_before = len(lines_of(directory))
    entry = record(old, wire(more, tools=TOOLS), body({"role": "assistant", "content": "answer 3"}), call_index=3)
    added = [line["t"] for line in lines_of(directory)[lines_before:]]
    assert added == ["msg", "msg"] + ["node"] * 8 + ["call"]  # question 3, answer 3; the whole chain
    mixed = Cassette.open(directory, create=False)
    assert verify(mixed) == [] and len(mixed) == 4
    stored = mixed.lookup(entry.sample_key)
    assert stored is not None and request_key(mixed.request_of(stored)) == entry.key

    compact(directory)
    compacted = Cassette.open(directory, create=False)
    assert verify(compacted) == []
    assert all(e.v == ENTRY_VERSION and e.request.messages is None for e in compacted.entries())
    assert {e.sample_key: (compacted.request_of(e), compacted.response_of(e)) for e in entries} == before
    assert sum(line["t"] == "node" for line in lines_of(directory)) == 8  # shared by all four calls


def test_an_entry_built_with_a_message_list_is_rebuilt(tmp_path: Path) -> None:
    cassette, entries = conversation(tmp_path / "c", 2)
    hashes = cassette.reader.message_hashes(entries[1])
    fields = entries[1].request.model_dump() | {"chain": None, "messages": hashes}
    listed = entries[1].model_copy(update={"v": 1, "request": StoredRequest(**fields)})
    assert cassette.request_of(listed) == cassette.request_of(entries[1])
    assert cassette.message_count(listed) == 4


def test_merge_of_version_1_and_version_2_cassettes(tmp_path: Path) -> None:
    conversation(tmp_path / "old", 3, task_id="old")
    as_version_1(tmp_path / "old")
    conversation(tmp_path / "new", 3, task_id="new")
    result = merge(tmp_path / "target", [tmp_path / "old", tmp_path / "new"])
    merged = Cassette.open(tmp_path / "target", create=False)
    assert result.entries == 6 and verify(merged) == []
    # Both trials hold the same conversation: one chain of six nodes serves both.
    assert stats(merged)["nodes_stored"] == 6 and stats(merged)["messages_stored"] == 7


def test_a_missing_node_makes_only_the_calls_through_it_unusable(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    _, entries = conversation(directory, 3)
    lines = lines_of(directory)
    second = next(line for line in lines if line["t"] == "call" and line["call_index"] == entries[1].call_index)
    gone = second["request"]["chain"]
    write_lines(directory, [line for line in lines if address(line) != gone])

    reopened = Cassette.open(directory, create=False)
    assert reopened.lookup(entries[0].sample_key) is not None
    assert reopened.lookup(entries[1].sample_key) is None
    assert reopened.lookup(entries[2].sample_key) is None
    reasons = [problem.reason for problem in reopened.problems]
    assert len(reasons) == 3  # where the chain breaks, and the two calls through it
    assert any(f"refers to parent node {gone[:12]}, which is not stored" in reason for reason in reasons)
    assert any(f"refers to message chain node {gone[:12]}, which is not stored" in reason for reason in reasons)
    assert any("which does not resolve" in reason for reason in reasons)
    assert len(verify(reopened)) == 3

    # Re-recording the lost call writes the missing node again, and the later call resolves again.
    request = reopened.request_of(reopened.lookup(entries[0].sample_key))  # type: ignore[arg-type]
    request["messages"] += [{"role": "assistant", "content": "answer 0"}, {"role": "user", "content": "question 1"}]
    lines_before = len(lines_of(directory))
    record(reopened, request, body({"role": "assistant", "content": "answer 1"}), call_index=1)
    added = lines_of(directory)[lines_before:]
    assert [line["t"] for line in added] == ["node", "call"] and address(added[0]) == gone
    healed = Cassette.open(directory, create=False)
    assert healed.problems == [] and healed.lookup(entries[2].sample_key) is not None


def test_a_message_missing_under_a_node_is_written_again(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    _, entries = conversation(directory, 1)
    writer = Cassette.open(directory)
    lines = lines_of(directory)
    write_lines(directory, [line for line in lines if line.get("m") != SYSTEM])  # drop the system message
    writer.reload()
    assert any("which is not stored" in problem.reason for problem in writer.problems)
    entry = record(writer, wire([SYSTEM, {"role": "user", "content": "again"}]), body({"role": "assistant"}))
    again = Cassette.open(directory, create=False)
    stored = again.lookup(entry.sample_key)
    assert stored is not None and again.request_of(stored)["messages"][0] == SYSTEM
    assert again.lookup(entries[0].sample_key) is not None  # the old node resolves again too


def test_tampered_node_line_is_detected(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    _, entries = conversation(directory, 2)
    file = directory / "calls.jsonl"
    lines = file.read_text().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if '"t":"node"' in line and '"p":null' not in line)
    node = json.loads(lines[index])
    # v4 names a node by the hash of its p and m: an edited node is another node, and the chain
    # through the old one breaks right after it.
    lines[index] = canonical_json(node | {"m": "0" * 64}) + "\n"
    file.write_text("".join(lines))
    reopened = Cassette.open(directory, create=False)
    problems = "\n".join(verify(reopened))
    assert f"refers to message {'0' * 12}, which is not stored" in problems
    assert f"refers to parent node {address(node)[:12]}, which is not stored" in problems  # type: ignore[index]
    assert reopened.lookup(entries[1].sample_key) is None
    # A v3 node line names itself (`h`): an edit that leaves `h` is a hash mismatch on that line.
    lines[index] = canonical_json(node | {"h": address(node), "m": "0" * 64}) + "\n"
    file.write_text("".join(lines))
    reopened = Cassette.open(directory, create=False)
    assert f"{file}:{index + 1}: node hash mismatch" in "\n".join(verify(reopened))
    assert reopened.lookup(entries[1].sample_key) is None


def test_nearest_entry_and_miss_message_follow_chains(tmp_path: Path) -> None:
    cassette, entries = conversation(tmp_path / "c", 4)
    wanted = cassette.request_of(entries[2])
    wanted["messages"][2]["content"] = "answer 0, reworded"
    nearest = nearest_entry(cassette, wanted, "t1", 0, "agent", 7)
    # Every call shares the first two messages; call 2 has as many messages as this request.
    assert nearest is not None and nearest.sample_key == entries[2].sample_key
    wanted["messages"][2]["content"] = "answer 0"
    wanted["messages"][4]["content"] = "answer 1, reworded"
    # Out of scope the longest shared prefix (four messages, calls 1 to 3) beats the same call index.
    assert nearest_entry(cassette, wanted, "t9", 0, "agent", 0) == cassette.lookup(entries[2].sample_key)
    text = miss_message(cassette, wanted, task_id="t1", trial=0, role="agent", call_index=7)
    assert "message #4 (assistant) differs" in text


def test_replay_returns_fresh_objects_and_is_fast(tmp_path: Path) -> None:
    _, entries = conversation(tmp_path / "c", 40)
    reopened = Cassette.open(tmp_path / "c", create=False)
    entry = reopened.lookup(entries[5].sample_key)
    assert entry is not None
    response = reopened.response_of(entry)
    response["choices"][0]["message"]["content"] = "mutated"
    request = reopened.request_of(entry)
    request["messages"][0]["content"] = "mutated"
    request["tools"][0]["function"]["name"] = "mutated"
    assert reopened.response_of(entry)["choices"][0]["message"]["content"] == "answer 5"
    assert reopened.request_of(entry)["messages"][0] == SYSTEM
    assert canonical_request(reopened.request_of(entry))["tools"] == TOOLS

    keys = [e.sample_key for e in entries]
    for index in range(10_000):  # how long this takes is bench/replay_speed.py's to measure
        found = reopened.lookup(keys[index % len(keys)])
        assert found is not None
        reopened.response_of(found)


def test_message_lines_round_trip_byte_for_byte(tmp_path: Path) -> None:
    cassette, _ = conversation(tmp_path / "c", 2)
    for raw in (tmp_path / "c" / "calls.jsonl").read_text().splitlines():
        line = json.loads(raw)
        if line["t"] == "msg":
            assert encode_msg(line["h"], cassette.reader.message(line["h"])) == raw + "\n"
