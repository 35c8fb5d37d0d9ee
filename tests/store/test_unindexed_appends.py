"""A writer's appends reach the index lazily (store/index_pending.py): what was appended and not yet
indexed is found by lookups and seen by every scan, another writer's lines in between are indexed and
deduped against, and a kill before the index caught up loses nothing."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from recordings import recording

from tauproxy.data_model.call import Usage
from tauproxy.data_model.completion import CallRecording
from tauproxy.store import index_pending
from tauproxy.store.cassette import Cassette
from tauproxy.store.format import CALLS_FILE
from tauproxy.store.index_build import IndexBuilder
from tauproxy.store.index_db import INDEX_DIR
from tauproxy.store.maintenance import verify

SYSTEM = {"role": "system", "content": "shared by every call"}


def call_of(writer: str, index: int) -> CallRecording:
    request = {"model": "m", "messages": [SYSTEM, {"role": "user", "content": f"{writer} {index}"}], "temperature": 0}
    response = {"choices": [{"message": {"role": "assistant", "content": f"re {writer} {index}"}}]}
    usage = Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2)
    return recording(request, response, task_id=writer, call_index=index, usage=usage)


def indexed_calls(cassette: Cassette) -> int:
    """Call rows in the index file itself (what another process opening it would find), read
    without asking the cassette (which would catch its index up first)."""
    (path,) = (cassette.directory / INDEX_DIR).glob("*.sqlite")
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
    finally:
        db.close()


def held(cassette: Cassette) -> int:
    return cassette.reader._file.index().query.unindexed.call_count


def test_a_call_just_recorded_is_looked_up_before_the_index_holds_it(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    first = call_of("w", 0)
    assert cassette.lookup(first.identity.sample_key) is None  # a miss the reader may keep in its cache
    entries = [cassette.record(call_of("w", index)) for index in range(3)]
    assert held(cassette) == 3 and indexed_calls(cassette) == 0
    for entry in entries:
        found = cassette.lookup(entry.sample_key)
        assert found is not None and found.sample_key == entry.sample_key
        assert cassette.response_of(found)["choices"][0]["message"]["content"] == f"re w {entry.call_index}"
        assert cassette.request_of(found)["messages"][0] == SYSTEM
        assert cassette.message_count(found) == 2
    assert held(cassette) == 3  # lookups read what is held, without catching up
    cassette.close()
    reopened = Cassette.open(tmp_path / "c", create=False)
    assert indexed_calls(reopened) == 3 and len(reopened) == 3 and reopened.problems == []
    assert [reopened.lookup(e.sample_key) for e in entries] == [cassette_entry for cassette_entry in entries]


def test_every_scan_sees_what_is_held(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    entries = [cassette.record(call_of("w", index)) for index in range(2)]
    assert len(cassette) == 2 and held(cassette) == 0  # counting caught the index up
    entries.append(cassette.record(call_of("w", 2)))
    assert [e.sample_key for e in cassette.entries()] == [e.sample_key for e in entries]
    entries.append(cassette.record(call_of("w", 3)))
    assert [e.sample_key for e in cassette.by_key(entries[3].key)] == [entries[3].sample_key]
    entries.append(cassette.record(call_of("w", 4)))
    assert len(cassette.history()) == 5
    entries.append(cassette.record(call_of("w", 5)))
    assert cassette.reader.has_calls_in("w", 0) and held(cassette) == 0
    entries.append(cassette.record(call_of("w", 6)))
    near = cassette.reader.near("agent", "w", 0, "m", [])
    assert entries[6].sample_key in {e.sample_key for e in near}
    assert verify(cassette) == []


def test_the_index_catches_up_every_so_many_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_pending, "MAX_CALLS", 3)
    cassette = Cassette.open(tmp_path / "c")
    for index in range(7):
        cassette.record(call_of("w", index))
    assert indexed_calls(cassette) == 6 and held(cassette) == 1


def test_another_writer_in_between_is_indexed_and_deduped_against(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    mine, other = Cassette.open(directory), Cassette.open(directory)
    recorded = [mine.record(call_of("mine", 0)), mine.record(call_of("mine", 1))]
    assert held(mine) == 2
    recorded.append(other.record(call_of("other", 0)))  # its catch-up indexes my held lines from the file
    recorded.append(mine.record(call_of("mine", 2)))  # the file changed: mine catches up first
    assert held(mine) == 1
    text = (directory / CALLS_FILE).read_text()
    assert text.count("shared by every call") == 1  # written once, by whoever was first
    for cassette in (mine, other):
        cassette.reload()
        assert [cassette.lookup(e.sample_key) for e in recorded] == recorded
    mine.close()
    other.close()
    reopened = Cassette.open(directory, create=False)
    assert indexed_calls(reopened) == 4 and len(reopened) == 4 and verify(reopened) == []


READER = """
import sys
from pathlib import Path
from tauproxy.store.cassette import Cassette
cassette = Cassette.open(Path(sys.argv[1]), create=False)
print(len(cassette), sum(cassette.lookup(key) is not None for key in sys.argv[2:]), flush=True)
"""


@pytest.mark.timeout(60)
def test_a_process_opening_the_cassette_meanwhile_indexes_the_held_lines_itself(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    cassette = Cassette.open(directory)
    keys = [cassette.record(call_of("w", index)).sample_key for index in range(3)]
    assert held(cassette) == 3
    out = subprocess.run([sys.executable, "-c", READER, str(directory), *keys], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "3"]
    assert indexed_calls(cassette) == 3  # it indexed them into the index file both share
    keys.append(cassette.record(call_of("w", 3)).sample_key)
    cassette.close()  # catching up finds the first three indexed already: each line is indexed once
    reopened = Cassette.open(directory, create=False)
    assert indexed_calls(reopened) == 4 and len(reopened) == 4
    assert all(reopened.lookup(key) is not None for key in keys) and verify(reopened) == []


KILLED = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from test_unindexed_appends import call_of
from tauproxy.store.cassette import Cassette
cassette = Cassette.open(Path(sys.argv[1]))
for index in range(5):
    print(cassette.record(call_of("k", index)).sample_key, flush=True)
print("held", cassette.reader._file.index().query.unindexed.call_count, flush=True)
time.sleep(60)
"""


@pytest.mark.timeout(60)
def test_kill_9_before_the_index_caught_up_loses_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    first = Cassette.open(directory)
    answered = [first.record(call_of("p", 0)).sample_key]
    first.close()
    here = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here.parent), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(directory), str(here)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdout is not None
    for line in child.stdout:
        if line.startswith("held"):
            assert line.split() == ["held", "5"]  # none of them indexed when the kill comes
            break
        answered.append(line.strip())
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()

    # The index file the child left covers none of its calls; opening it indexes them from the file.
    assert indexed_calls(first) == 1
    cassette = Cassette.open(directory, create=False)
    assert len(answered) == 6 and [cassette.lookup(key) is not None for key in answered] == [True] * 6
    assert cassette.problems == [] and len(cassette) == 6 and indexed_calls(cassette) == 6
    assert verify(cassette) == []


def index_rows(directory: Path, index: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of an index file that says where lines are and what they hold."""
    db = sqlite3.connect(index)
    try:
        return {
            "content": sorted(db.execute("SELECT * FROM content").fetchall()),
            "calls": db.execute("SELECT * FROM calls ORDER BY seq").fetchall(),
            "meta": sorted(db.execute("SELECT * FROM meta").fetchall()),
        }
    finally:
        db.close()


def test_held_lines_are_indexed_from_memory_exactly_as_from_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_pending, "MAX_CALLS", 4)
    from_memory: list[bool] = []
    insert_held = IndexBuilder.insert_held

    def spy(self: IndexBuilder, held: index_pending.Unindexed) -> bool:
        from_memory.append(insert_held(self, held))
        return from_memory[-1]

    monkeypatch.setattr(IndexBuilder, "insert_held", spy)
    directory = tmp_path / "c"
    cassette = Cassette.open(directory)
    messages = [SYSTEM]
    for index in range(11):  # one conversation growing call by call: its chain nodes' parents indexed or held
        messages = [*messages, {"role": "user", "content": f"turn {index}"}]
        response = {"choices": [{"message": {"role": "assistant", "content": f"re {index}"}}]}
        cassette.record(recording({"model": "m", "messages": messages}, response, call_index=index))
        messages.append(response["choices"][0]["message"])
        cassette.record(call_of("other", index))  # and calls of another task between
    cassette.close()
    assert from_memory and all(from_memory[1:])  # the first run starts a new index: read from the file
    (caught_up,) = (directory / INDEX_DIR).glob("*.sqlite")
    fresh = Cassette.open(directory, create=False, fresh_index=True)
    built = fresh.index_path()
    assert built is not None and built != caught_up
    assert index_rows(directory, caught_up) == index_rows(directory, built)
