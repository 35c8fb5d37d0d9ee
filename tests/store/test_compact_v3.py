"""Old cassettes stay readable, and `compact` upgrades them to the current format (v4: short references,
no stored key or sample key) without changing a single lookup: same entries, same requests (so the same
keys), same answers."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from tauproxy.data_model.key import request_key
from tauproxy.store.cassette import Cassette
from tauproxy.store.entry import ENTRY_VERSION
from tauproxy.store.format import FULL_LEN, REF_LEN
from tauproxy.store.maintenance import compact, verify

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(path.parent for path in (REPO_ROOT / "cassettes").glob("*/calls.jsonl"))


def lookups(cassette: Cassette) -> dict[str, tuple[object, ...]]:
    result = {}
    for entry in cassette.entries():
        request = cassette.request_of(entry)
        assert request_key(request) == entry.key
        fields = entry.model_dump(exclude={"v", "request", "response"})
        result[entry.sample_key] = (fields, request, cassette.response_of(entry), cassette.message_count(entry))
    return result


@pytest.mark.parametrize("shipped", SHIPPED, ids=lambda p: p.name)
def test_compact_upgrades_a_shipped_v2_cassette_without_changing_any_lookup(shipped: Path, tmp_path: Path) -> None:
    directory = tmp_path / shipped.name
    directory.mkdir()
    shutil.copy(shipped / "calls.jsonl", directory / "calls.jsonl")
    old = Cassette.open(directory, create=False)
    assert old.problems == [] and {e.v for e in old.entries()} <= {1, 2}  # shipped as written, never rewritten
    before = lookups(old)
    old_bytes = (directory / "calls.jsonl").read_bytes()

    result = compact(directory)

    new = Cassette.open(directory, create=False)
    assert result.entries == len(before) and verify(new) == []
    assert lookups(new) == before
    assert {e.v for e in new.entries()} == {ENTRY_VERSION}
    new_bytes = (directory / "calls.jsonl").read_bytes()
    for raw in new_bytes.splitlines():
        line = json.loads(raw)
        assert "sample_key" not in line and REF_LEN <= len(line.get("h", "x" * REF_LEN)) < FULL_LEN
    assert len(gzip.compress(new_bytes)) < len(gzip.compress(old_bytes))
    # compact of a current cassette is a fixed point
    compact(directory)
    assert (directory / "calls.jsonl").read_bytes() == new_bytes


def test_a_v2_cassette_appended_to_by_this_version_reads_both_forms(tmp_path: Path) -> None:
    from test_chain import conversation

    shipped = SHIPPED[0]
    directory = tmp_path / "mixed"
    directory.mkdir()
    shutil.copy(shipped / "calls.jsonl", directory / "calls.jsonl")
    before = lookups(Cassette.open(directory, create=False))
    _, added = conversation(directory, 3, task_id="new")
    mixed = Cassette.open(directory, create=False)
    assert verify(mixed) == [] and {e.v for e in mixed.entries()} == {2, ENTRY_VERSION}
    after = lookups(mixed)
    assert {key: after[key] for key in before} == before and all(e.sample_key in after for e in added)
    compact(directory)
    assert lookups(Cassette.open(directory, create=False)) == after


def test_compact_with_its_memory_spilled_to_disk_gives_the_same_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tauproxy.store import rewrite as maintenance

    for name in ("in_memory", "spilled"):
        directory = tmp_path / name
        directory.mkdir()
        shutil.copy(SHIPPED[0] / "calls.jsonl", directory / "calls.jsonl")
    compact(tmp_path / "in_memory")
    original = maintenance._SpillMap.__init__

    def tiny(self: maintenance._SpillMap, directory: Path, limit: int = 0) -> None:
        original(self, directory, limit=3)  # spills after every few references

    monkeypatch.setattr(maintenance._SpillMap, "__init__", tiny)
    compact(tmp_path / "spilled")
    spilled, in_memory = (tmp_path / name / "calls.jsonl" for name in ("spilled", "in_memory"))
    assert spilled.read_bytes() == in_memory.read_bytes()
