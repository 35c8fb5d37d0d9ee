"""A lookup reads the call lines after the one asked for (store/read_ahead.py): the next lookups in
file order cost no index query, and a line read ahead is never answered once it stopped being the
winner (a re-recording by this process or another one, a rebuilt index, bytes that are not the line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from recordings import recording

from tauproxy.data_model.completion import CallRecording
from tauproxy.store import reader as reader_module
from tauproxy.store.cassette import Cassette
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.format import CALLS_FILE, CallLine, parse_keyed_call, parse_line
from tauproxy.store.read_ahead import FOLLOWING, AheadLine, ReadAhead, entry_ahead, lookup_ahead

SYSTEM = {"role": "system", "content": "shared by every call"}


def call_of(index: int, answer: str = "re") -> CallRecording:
    request = {"model": "m", "messages": [SYSTEM, {"role": "user", "content": f"turn {index}"}], "temperature": 0}
    response = {"choices": [{"message": {"role": "assistant", "content": f"{answer} {index}"}}]}
    return recording(request, response, call_index=index)


def recorded(directory: Path, calls: int) -> list[str]:
    """A cassette of `calls` calls, closed (so indexed), and their sample keys in file order."""
    cassette = Cassette.open(directory)
    keys = [cassette.record(call_of(index)).sample_key for index in range(calls)]
    cassette.close()
    return keys


def answer(cassette: Cassette, sample_key: str) -> str:
    entry = cassette.lookup(sample_key)
    assert entry is not None
    content: str = cassette.response_of(entry)["choices"][0]["message"]["content"]
    return content


def counted_queries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sample keys the reader looks up with an index query (the others were read ahead)."""
    asked: list[str] = []

    def counting(query: object, sample_key: str) -> object:
        asked.append(sample_key)
        return lookup_ahead(query, sample_key)  # type: ignore[arg-type]

    monkeypatch.setattr(reader_module, "lookup_ahead", counting)
    return asked


def test_lookups_in_file_order_take_one_query_per_read_ahead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = recorded(tmp_path / "c", 2 * (FOLLOWING + 1))
    asked = counted_queries(monkeypatch)
    cassette = Cassette.open(tmp_path / "c")
    assert [answer(cassette, key) for key in keys] == [f"re {index}" for index in range(len(keys))]
    assert asked == [keys[0], keys[FOLLOWING + 1]]


def test_read_ahead_entries_equal_those_looked_up_one_by_one(tmp_path: Path) -> None:
    keys = recorded(tmp_path / "c", 5)
    in_order = Cassette.open(tmp_path / "c")
    found = [in_order.lookup(key) for key in keys]
    backwards = Cassette.open(tmp_path / "c")  # each lookup reads ahead lines already asked for
    assert [backwards.lookup(key) for key in reversed(keys)] == list(reversed(found))
    assert all(isinstance(entry, CassetteEntry) for entry in found)


def test_a_call_re_recorded_after_it_was_read_ahead_answers_the_new_recording(tmp_path: Path) -> None:
    keys = recorded(tmp_path / "c", 4)
    cassette = Cassette.open(tmp_path / "c")
    assert answer(cassette, keys[0]) == "re 0"  # reads 1..3 ahead
    assert cassette.record(call_of(2, answer="again")).sample_key == keys[2]
    assert answer(cassette, keys[2]) == "again 2"
    assert answer(cassette, keys[1]) == "re 1"


def test_a_call_another_process_re_recorded_is_answered_once_the_file_is_reloaded(tmp_path: Path) -> None:
    keys = recorded(tmp_path / "c", 4)
    reader = Cassette.open(tmp_path / "c")
    assert answer(reader, keys[0]) == "re 0"
    writer = Cassette.open(tmp_path / "c")
    writer.record(call_of(3, answer="other"))
    writer.close()
    reader.reload()
    assert answer(reader, keys[3]) == "other 3"


def test_lines_this_process_holds_unindexed_are_not_read_ahead(tmp_path: Path) -> None:
    keys = recorded(tmp_path / "c", 4)
    cassette = Cassette.open(tmp_path / "c")
    cassette.record(call_of(2, answer="again"))  # held unindexed (index_pending.py)
    query = cassette.reader._file.index().query
    entry, following = lookup_ahead(query, keys[0])
    assert entry is not None and entry.sample_key == keys[0]
    assert [key for key, _ in following] == [keys[1], keys[3]]


def test_a_line_read_ahead_that_is_not_the_indexed_one_is_looked_up_again(tmp_path: Path) -> None:
    keys = recorded(tmp_path / "c", 3)
    cassette = Cassette.open(tmp_path / "c")
    query = cassette.reader._file.index().query
    _, following = lookup_ahead(query, keys[0])
    real = dict(following)[keys[1]]
    garbled = AheadLine(real.off, real.raw + b" ", real.kf, real.lh)  # not the bytes its key was derived from
    other = AheadLine(real.off, dict(following)[keys[2]].raw, real.kf, real.lh)
    assert entry_ahead(query, keys[1], garbled) == entry_ahead(query, keys[1], real)
    assert entry_ahead(query, keys[1], other) == cassette.lookup(keys[1])


def test_read_ahead_keeps_a_bounded_number_of_lines_each_taken_once() -> None:
    ahead = ReadAhead(limit=2)
    lines = [(f"k{index}", AheadLine(index, b"{}", None, None)) for index in range(3)]
    ahead.keep(lines)
    assert len(ahead) == 2 and ahead.take("k0") is None
    assert ahead.take("k2") == lines[2][1] and ahead.take("k2") is None


def call_line(directory: Path) -> bytes:
    (raw,) = [line for line in (directory / CALLS_FILE).read_bytes().splitlines() if b'"t":"call"' in line]
    return raw


@pytest.mark.parametrize("change", [{}, {"trial": "0"}, {"usage": {"prompt_tokens": 3}}, {"seed": None}])
def test_a_v4_line_is_read_with_its_keys_as_parse_line_reads_it(tmp_path: Path, change: dict[str, object]) -> None:
    recorded(tmp_path / "c", 1)
    raw = json.dumps({**json.loads(call_line(tmp_path / "c")), **change}).encode()
    line = parse_line(raw)
    assert isinstance(line, CallLine)
    expected = line.keyed("ab" * 32)
    assert parse_keyed_call(raw, "ab" * 32, expected.sample_key) == expected


@pytest.mark.parametrize(
    "change",
    [
        {"v": 3},  # another version: parse_line's path
        {"request": {"chain": "00" * 8, "messages": ["00" * 8]}},  # both request forms: refused there
        {"trial": "first"},  # not a trial: parse_line says what is wrong
    ],
)
def test_a_call_line_read_with_its_keys_leaves_any_other_line_to_parse_line(
    tmp_path: Path, change: dict[str, object]
) -> None:
    recorded(tmp_path / "c", 1)
    fields = {**json.loads(call_line(tmp_path / "c")), **change}
    assert parse_keyed_call(json.dumps(fields).encode(), "ab" * 32, "cd" * 32) is None
    assert parse_keyed_call(b'{"t":"call","v":4,"task_id":"x"', "ab" * 32, "cd" * 32) is None  # not JSON
    assert parse_keyed_call(b"[4]", "ab" * 32, "cd" * 32) is None
