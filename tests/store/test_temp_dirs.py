"""Private temp directories (snapshots on Ray workers, `cassette verify`'s fresh index) do not outlive
their process: removed on close, or swept by the next one made once their process is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from recordings import recording

from tauproxy.store import temp_dirs
from tauproxy.store.cassette import Cassette
from tauproxy.store.maintenance import check
from tauproxy.store.temp_dirs import owned_temp_dir, release, sweep


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def child_argv(temp_root: Path, *lines: str) -> list[str]:
    """A Python child whose temp dir is `temp_root`, running `lines` after importing temp_dirs."""
    setup = [
        "import sys, tempfile",
        "tempfile.tempdir = sys.argv[1]",
        "from tauproxy.store.temp_dirs import owned_temp_dir, release",
    ]
    return [sys.executable, "-c", "\n".join([*setup, *lines]), str(temp_root)]


def test_a_directory_whose_owner_let_go_is_swept_and_a_held_one_is_not(temp_root: Path) -> None:
    held = owned_temp_dir("tp-test-")
    fd = temp_dirs._held.pop(held)  # as if another process held it: this process no longer knows it
    try:
        assert sweep("tp-test-") == []  # its owner's lock is still held
        assert held.is_dir()
    finally:
        os.close(fd)  # the owner is gone: the kernel drops its lock
    assert sweep("tp-test-") == [held]
    assert not held.exists()


def test_a_process_killed_with_9_leaves_a_directory_the_next_one_removes(temp_root: Path) -> None:
    child = subprocess.Popen(
        child_argv(temp_root, "print(owned_temp_dir('tp-test-'), flush=True)", "sys.stdin.read()"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    left = Path(child.stdout.readline().strip())
    assert left.is_dir()
    assert sweep("tp-test-") == []  # alive: kept
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert left.is_dir()  # no exit handler ran
    mine = owned_temp_dir("tp-test-")
    assert not left.exists()
    assert [p.name for p in temp_root.iterdir()] == [mine.name]
    release(mine)
    assert not mine.exists()


def test_other_names_and_directories_without_an_owner_are_left_alone(temp_root: Path) -> None:
    (temp_root / "tp-test-old").mkdir()  # made by an older version, or being made
    (temp_root / "other-x").mkdir()
    (temp_root / "other-x" / temp_dirs.OWNER_FILE).touch()
    release(owned_temp_dir("tp-test-"))
    assert sorted(p.name for p in temp_root.iterdir()) == ["other-x", "tp-test-old"]


def test_a_closed_snapshot_and_a_verify_leave_no_directory(temp_root: Path, tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    cassette.record(recording(request, {"choices": [{"message": {"role": "assistant", "content": "ok"}}]}))
    snapshot = Cassette.snapshot(cassette.directory, cassette.read_bytes())
    assert snapshot.lookup(cassette.entries()[0].sample_key) is not None
    assert [p.name.startswith("tauproxy-snapshot-") for p in temp_root.iterdir()] == [True]
    snapshot.close()
    assert check(cassette).problems == []
    assert list(temp_root.iterdir()) == []


def test_a_process_that_exits_removes_the_directories_it_still_holds(temp_root: Path) -> None:
    made = subprocess.run(
        child_argv(temp_root, "release(owned_temp_dir('tp-test-'))", "print(owned_temp_dir('tp-test-'))"),
        capture_output=True,
        text=True,
        check=True,
    )
    assert not Path(made.stdout.strip()).exists()
    assert list(temp_root.iterdir()) == []
