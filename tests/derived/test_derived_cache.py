"""The cross-process cache of derived artefacts (tauproxy/derived_cache.py): a value is built once per
set of inputs, read back by later processes, and rebuilt (never believed) when its entry is damaged,
of another type, or its inputs changed; concurrent processes fill one directory safely."""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
from pathlib import Path

import diskcache
import pytest

from tauproxy import derived_cache
from tauproxy.derived_cache import CACHE_DIR_ENV, cache_dir, cache_info, cached, clear_cache, files_digest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache directory of this test's own."""
    where = tmp_path / "cache"
    monkeypatch.setenv(CACHE_DIR_ENV, str(where))
    return where


class Builder:
    """A build function that counts its calls."""

    def __init__(self, value: object) -> None:
        self.value = value
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        return self.value


def test_built_once_then_read_back(directory: Path) -> None:
    build = Builder({"table": {"1": "record"}})
    first = cached("thing", {"seed": 0}, dict, build)
    second = cached("thing", {"seed": 0}, dict, build)
    assert first == second == {"table": {"1": "record"}}
    assert build.calls == 1
    assert cache_info().entries == 1
    cached("thing", {"seed": 1}, dict, build)  # another input: another entry
    assert build.calls == 2


def test_off_builds_every_time_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, "off")
    monkeypatch.chdir(tmp_path)
    assert cache_dir() is None
    build = Builder([1, 2])
    assert cached("thing", {}, list, build) == cached("thing", {}, list, build) == [1, 2]
    assert build.calls == 2
    assert cache_info().directory is None
    assert list(tmp_path.iterdir()) == []


def test_default_directory_is_under_the_users_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "tauproxy"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "tauproxy"


def test_a_changed_input_file_is_rebuilt(directory: Path, tmp_path: Path) -> None:
    source = tmp_path / "db.json"
    source.write_text('{"a": 1}')

    def build() -> str:
        return source.read_text()

    def load() -> str:
        return cached("from-file", {"files": files_digest([source])}, str, build)

    assert load() == '{"a": 1}'
    source.write_text('{"a": 2}')  # same size: the content hash, not the size, tells them apart
    assert load() == '{"a": 2}'
    assert files_digest([tmp_path / "absent"]) != files_digest([source])


def _big_file(path: Path, fill: bytes) -> Path:
    """A file just big enough to keep its digest in the cache."""
    path.write_bytes(fill * derived_cache.KEPT_DIGEST_BYTES)
    return path


def _forget_digests(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a new process: no digest known in memory."""
    monkeypatch.setattr(derived_cache, "_file_digests", {})


@pytest.fixture
def settled_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock moved past the racy window: every existing file counts as settled."""
    real = derived_cache.time.time_ns
    monkeypatch.setattr(derived_cache.time, "time_ns", lambda: real() + 10 * derived_cache._SETTLED_NS)


def test_a_big_files_digest_is_read_back_by_a_later_process(
    directory: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settled_now: None
) -> None:
    source = _big_file(tmp_path / "db.json", b"a")
    first = files_digest([source])
    assert cache_info().entries == 1  # the digest, kept
    _forget_digests(monkeypatch)
    read: list[Path] = []
    real_read = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self) or real_read(self))
    assert files_digest([source]) == first
    assert read == []  # not read again: its digest came from the cache


def test_a_rewritten_big_file_is_hashed_again(
    directory: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settled_now: None
) -> None:
    source = _big_file(tmp_path / "db.json", b"a")
    first = files_digest([source])
    stat = source.stat()
    _big_file(source, b"b")  # same size, and its modification time set back as it was
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    _forget_digests(monkeypatch)
    rehashed = files_digest([source])
    assert rehashed != first  # its change time moved: the kept digest is not believed
    monkeypatch.setenv(CACHE_DIR_ENV, "off")
    _forget_digests(monkeypatch)
    assert files_digest([source]) == rehashed  # what hashing the bytes gives


def test_a_file_changed_moments_ago_keeps_no_digest(directory: Path, tmp_path: Path) -> None:
    files_digest([_big_file(tmp_path / "db.json", b"a")])
    assert cache_info().entries == 0


def test_a_small_file_keeps_no_digest(directory: Path, tmp_path: Path, settled_now: None) -> None:
    source = tmp_path / "small.json"
    source.write_bytes(b"a" * (derived_cache.KEPT_DIGEST_BYTES - 1))
    files_digest([source])
    assert cache_info().entries == 0


def test_a_kept_digest_of_another_shape_is_not_believed(
    directory: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settled_now: None
) -> None:
    source = _big_file(tmp_path / "db.json", b"a")
    first = files_digest([source])
    store = diskcache.Cache(str(directory))
    try:
        (key,) = list(store)
        identity, _ = store.get(key)
        for damaged in [(identity, b"short"), (identity,), "text", (identity, "a" * 32)]:
            store.set(key, damaged)
            _forget_digests(monkeypatch)
            assert files_digest([source]) == first
    finally:
        store.close()


def _tamper(directory: Path, change: bytes) -> None:
    """Overwrite the tail of every stored value in place: inline ones in SQLite, large ones in files."""
    store = diskcache.Cache(str(directory))
    try:
        for key in list(store):
            blob = store.get(key)
            store.set(key, blob[: -len(change)] + change)
    finally:
        store.close()


@pytest.mark.parametrize("size", [10, 100_000], ids=["inline", "file"])
def test_a_corrupt_entry_is_rebuilt_not_believed(directory: Path, size: int) -> None:
    build = Builder("x" * size)
    assert cached("big", {}, str, build) == "x" * size
    _tamper(directory, b"y")
    assert cached("big", {}, str, build) == "x" * size
    assert build.calls == 2
    assert cached("big", {}, str, build) == "x" * size  # the rebuilt entry is good again
    assert build.calls == 2


def test_a_value_file_cut_short_is_rebuilt(directory: Path) -> None:
    build = Builder("z" * 200_000)
    cached("big", {}, str, build)
    (value_file,) = directory.rglob("*.val")
    value_file.write_bytes(value_file.read_bytes()[:1000])
    assert cached("big", {}, str, build) == "z" * 200_000
    assert build.calls == 2


def test_an_entry_of_another_type_is_rebuilt(directory: Path) -> None:
    cached("typed", {}, list, Builder([1]))
    build = Builder({"a": 1})
    # Same key, asked for as a dict: the list stored there checks out but is not believed.
    key_text = derived_cache._key_text("typed", {})
    payload = pickle.dumps([1])
    assert (
        derived_cache._unpack(
            derived_cache._MAGIC + derived_cache._checksum(key_text, payload) + payload, key_text, dict
        )
        is None
    )
    assert derived_cache._unpack(b"not ours", key_text, list) is None
    assert cached("typed", {}, dict, build) == {"a": 1}


def test_an_unusable_directory_builds_and_warns_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(CACHE_DIR_ENV, str(blocker))
    build = Builder(3)
    with caplog.at_level(logging.WARNING, logger="tauproxy.derived_cache"):
        assert cached("n", {}, int, build) == cached("n", {}, int, build) == 3
    assert build.calls == 2
    assert [r.getMessage() for r in caplog.records if "not used" in r.getMessage()] == [
        f"tauproxy cache at {blocker} not used: {blocker} is not a directory (set {CACHE_DIR_ENV}=off to silence)"
    ]


def test_clear_empties_it(directory: Path) -> None:
    cached("a", {}, str, Builder("a" * 100_000))
    cached("b", {}, str, Builder("b"))
    before = clear_cache()
    assert before.entries == 2 and before.size_bytes >= 100_000
    after = cache_info()
    assert after.entries == 0 and after.size_bytes < 100_000  # the SQLite index stays, empty


FILLER = """
import sys
from tauproxy.derived_cache import cached

name = sys.argv[1]
for i in range(60):
    # Half the keys are shared with the other process, half its own.
    key = {"i": i} if i % 2 else {"i": i, "by": name}
    value = cached("fill", key, dict, lambda: {"i": i, "payload": "p" * (i * 1000)})
    assert value == {"i": i, "payload": "p" * (i * 1000)}, (name, i)
print("ok")
"""


def test_two_processes_fill_one_directory(directory: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", FILLER, name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for name in ("first", "second")
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and out.strip() == "ok", err
    assert cache_info().entries == 30 + 2 * 30

    def never() -> dict[str, object]:
        raise AssertionError("every entry was stored by the two processes")

    for i in range(60):
        for name in ("first", "second"):
            key = {"i": i} if i % 2 else {"i": i, "by": name}
            assert cached("fill", key, dict, never) == {"i": i, "payload": "p" * (i * 1000)}
