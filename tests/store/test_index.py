"""The on-disk index of calls.jsonl: built once, used, caught up on appends, rebuilt when it no longer
describes the file (truncation, a rewrite, a git merge, a corrupt index), never trusted blindly."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from recordings import recording
from test_cassette import TOOLS, body, record, wire

from tauproxy.data_model.key import request_key
from tauproxy.errors import CassetteError
from tauproxy.store.cassette import Cassette
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.index import INDEX_DIR, CassetteIndex
from tauproxy.store.maintenance import verify

REPO_ROOT = Path(__file__).resolve().parents[2]


def calls(directory: Path, task_id: str, count: int) -> list[CassetteEntry]:
    cassette = Cassette.open(directory)
    history = [{"role": "system", "content": "You are a support agent."}]
    entries = []
    for turn in range(count):
        history.append({"role": "user", "content": f"{task_id} question {turn}"})
        reply = {"role": "assistant", "content": f"{task_id} answer {turn}"}
        entries.append(
            record(cassette, wire(list(history), tools=TOOLS), body(reply), task_id=task_id, call_index=turn)
        )
        history.append(reply)
    return entries


def answers(cassette: Cassette) -> dict[str, tuple[dict[str, object], dict[str, object]]]:
    return {e.sample_key: (cassette.request_of(e), cassette.response_of(e)) for e in cassette.entries()}


@pytest.fixture
def no_rebuild(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every index rebuild instead of forbidding it, so a test can say how many it expects."""
    rebuilt: list[str] = []
    original = CassetteIndex.rebuild.__func__  # type: ignore[attr-defined]

    def counting(cls: type[CassetteIndex], *args: object, **kwargs: object) -> CassetteIndex:
        rebuilt.append(str(args[0]))
        return original(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(CassetteIndex, "rebuild", classmethod(counting))
    return rebuilt


def test_the_index_is_built_once_beside_the_file_ignored_by_git_and_used(tmp_path: Path, no_rebuild: list[str]) -> None:
    directory = tmp_path / "c"
    entries = calls(directory, "t1", 3)
    assert len(no_rebuild) == 1  # created with the cassette, caught up on every append since
    index_dir = directory / INDEX_DIR
    assert (index_dir / ".gitignore").read_text().splitlines()[-1] == "*"
    reopened = Cassette.open(directory, create=False)
    assert len(no_rebuild) == 1 and reopened.index_path() is not None
    assert reopened.index_path().parent == index_dir  # type: ignore[union-attr]
    assert [e.sample_key for e in reopened.entries()] == [e.sample_key for e in entries]
    # A lookup reads its line from the file at the offset the index gives: proof it uses the index.
    with sqlite3.connect(reopened.index_path()) as db:  # type: ignore[arg-type]
        assert db.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 3
    found = reopened.lookup(entries[1].sample_key)
    assert found is not None and request_key(reopened.request_of(found)) == entries[1].key


def test_an_append_by_another_writer_is_indexed_incrementally(tmp_path: Path, no_rebuild: list[str]) -> None:
    directory = tmp_path / "c"
    first = calls(directory, "a", 2)
    reader = Cassette.open(directory, create=False)
    path = reader.index_path()
    more = calls(directory, "b", 2)  # another Cassette object: another writer
    reader.reload()
    assert reader.index_path() == path and len(no_rebuild) == 1  # caught up, not rebuilt
    assert len(reader) == 4 and reader.problems == []
    assert {e.sample_key for e in reader.entries()} == {e.sample_key for e in first + more}


def test_a_truncated_file_rebuilds_the_index(tmp_path: Path, no_rebuild: list[str]) -> None:
    directory = tmp_path / "c"
    entries = calls(directory, "t1", 3)
    file = directory / "calls.jsonl"
    reader = Cassette.open(directory, create=False)
    data = file.read_bytes()
    cut = data.rstrip(b"\n").rfind(b"\n") + 1  # drop the last call line, in place (same inode)
    with file.open("r+b") as handle:
        handle.truncate(cut)
    reader.reload()
    assert len(no_rebuild) == 2
    assert reader.lookup(entries[2].sample_key) is None and len(reader) == 2 and reader.problems == []
    appended = calls(directory, "t2", 1)  # and writing after it works on the rebuilt index
    assert Cassette.open(directory, create=False).lookup(appended[0].sample_key) is not None


def test_a_rewrite_in_place_with_the_same_size_is_caught_by_the_tail_checksum(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    calls(directory, "t1", 2)
    file = directory / "calls.jsonl"
    reader = Cassette.open(directory, create=False)
    data = file.read_bytes()
    swapped = data.replace(b'"t1 answer 1"', b'"t1 answer X"')
    assert len(swapped) == len(data)
    with file.open("r+b") as handle:  # same inode, same size, different tail
        handle.write(swapped)
    reader.reload()
    # The edited message no longer matches its hash: reported, and the call using it is not replayed.
    assert any("hash mismatch" in problem.reason for problem in reader.problems)
    assert len(reader) == 1


def test_a_stale_offset_is_never_served(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    entries = calls(directory, "t1", 3)
    reader = Cassette.open(directory, create=False)
    path = reader.index_path()
    assert path is not None
    with sqlite3.connect(path) as db:  # an index that lies about where lines are
        db.execute("UPDATE calls SET off = (SELECT MIN(off) FROM calls)")
        db.execute("UPDATE content SET off = 0")
    fresh = Cassette.open(directory, create=False)
    found = fresh.lookup(entries[2].sample_key)
    assert found is not None and found.sample_key == entries[2].sample_key
    assert answers(fresh) == answers(Cassette.open(directory, create=False, fresh_index=True))


def test_a_git_merge_like_rewrite_gets_a_new_index(tmp_path: Path) -> None:
    directory, other = tmp_path / "c", tmp_path / "other"
    calls(directory, "a", 2)
    theirs = calls(other, "b", 2)
    reader = Cassette.open(directory, create=False)
    old_index = reader.index_path()
    # What `git merge` with merge=union leaves: base and both sides' lines in a new file (new inode).
    merged = (directory / "calls.jsonl").read_bytes() + (other / "calls.jsonl").read_bytes()
    temp = directory / "merge.tmp"
    temp.write_bytes(merged)
    os.replace(temp, directory / "calls.jsonl")
    reader.reload()
    assert reader.index_path() != old_index and reader.problems == []
    assert len(reader) == 4 and reader.lookup(theirs[1].sample_key) is not None
    assert not old_index.exists()  # type: ignore[union-attr]  # the stale index file is removed
    assert verify(reader) == []


def test_a_corrupt_index_file_is_rebuilt(tmp_path: Path, no_rebuild: list[str]) -> None:
    directory = tmp_path / "c"
    entries = calls(directory, "t1", 3)
    path = Cassette.open(directory, create=False).index_path()
    assert path is not None
    path.write_bytes(b"this is not an SQLite database" * 100)
    reopened = Cassette.open(directory, create=False)
    assert len(no_rebuild) == 2 and reopened.problems == []
    assert [e.sample_key for e in reopened.entries()] == [e.sample_key for e in entries]


def test_a_read_only_cassette_gets_its_index_elsewhere(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    entries = calls(directory, "t1", 2)
    shutil.rmtree(directory / INDEX_DIR)
    directory.chmod(0o555)
    try:
        if os.access(directory, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        reader = Cassette.open(directory, create=False)
        assert reader.index_path() is not None and directory not in reader.index_path().parents  # type: ignore[union-attr]
        assert reader.lookup(entries[1].sample_key) is not None
    finally:
        directory.chmod(0o755)


def test_a_partly_written_last_line_is_reported_not_indexed_then_healed(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    calls(directory, "t1", 1)
    with (directory / "calls.jsonl").open("ab") as handle:
        handle.write(b'{"t":"msg","h":"abc')  # a write cut off by kill -9
    reader = Cassette.open(directory, create=False)
    reasons = [problem.reason.split(":")[0] for problem in reader.problems]
    assert reasons == ["truncated last line (a write was cut off)"]
    more = calls(directory, "t2", 1)  # the next append starts on a new line
    healed = Cassette.open(directory, create=False)
    assert healed.lookup(more[0].sample_key) is not None and len(healed) == 2
    assert len(healed.problems) == 1 and "not JSON" in healed.problems[0].reason


def test_a_snapshot_from_bytes_has_its_own_private_index(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    entries = calls(directory, "t1", 3)
    origin = Cassette.open(directory, create=False)
    snapshot = Cassette.snapshot(directory, origin.read_bytes())
    assert snapshot.index_path() is not None and directory not in snapshot.index_path().parents  # type: ignore[union-attr]
    assert answers(snapshot) == answers(origin) and len(snapshot) == 3
    with pytest.raises(CassetteError, match="read-only in-memory snapshot"):
        snapshot.record(recording(wire([{"role": "user", "content": "hi"}]), body({"role": "assistant"})))
    assert snapshot.lookup(entries[0].sample_key) is not None


def test_an_index_that_cannot_be_written_is_kept_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "c"
    entries = calls(directory, "t1", 2)
    shutil.rmtree(directory / INDEX_DIR)

    def full_disk(*args: object, **kwargs: object) -> CassetteIndex:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(CassetteIndex, "rebuild", classmethod(full_disk))
    reader = Cassette.open(directory, create=False)  # a cache never makes a cassette unreadable
    assert str(reader.index_path()) == ":memory:"
    assert reader.lookup(entries[1].sample_key) is not None and len(reader) == 2
    more = calls(directory, "t2", 1)  # nor unwritable
    reader.reload()
    assert reader.lookup(more[0].sample_key) is not None
