"""A cassette offers git nothing but calls.jsonl: its lock and a rewrite's temp file live in its
private directory (.tauproxy-index/, which ignores itself), and what a killed rewrite left is
removed the next time the cassette is opened."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from test_git_merge import git, record_calls

from tauproxy.store.cassette import Cassette
from tauproxy.store.format import CALLS_FILE, LOCK_FILE, PRIVATE_DIR
from tauproxy.store.locking import locked, remove_leftovers, rewrite_leftovers
from tauproxy.store.maintenance import compact


def untracked(repo: Path) -> list[str]:
    return git(repo, "status", "--porcelain", "--untracked-files=all").split("\n")[:-1]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_is_offered_only_calls_jsonl_after_recording_and_compacting(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")  # no .gitignore of the user's own
    cassette_dir = repo / "cassettes" / "mine"
    record_calls(cassette_dir, "t1", 3)
    compact(cassette_dir)
    Cassette.open(cassette_dir).close()
    assert untracked(repo) == ["?? cassettes/mine/calls.jsonl"]
    assert (cassette_dir / PRIVATE_DIR / LOCK_FILE).exists() and not (cassette_dir / LOCK_FILE).exists()


def test_a_killed_compacts_temp_file_is_removed_on_the_next_open(tmp_path: Path) -> None:
    cassette_dir = tmp_path / "c"
    record_calls(cassette_dir, "t1", 2)
    # What `cassette compact` killed mid-write leaves (kill -9 runs no cleanup), where this version
    # writes it and where older versions did.
    dead = [cassette_dir / PRIVATE_DIR / ".calls.a1b2c3.tmp", cassette_dir / ".calls.d4e5f6.tmp"]
    for path in dead:
        path.write_text("half a rewrite")
    (cassette_dir / LOCK_FILE).touch()  # an older version's lock file, beside calls.jsonl
    cassette = Cassette.open(cassette_dir)
    assert not rewrite_leftovers(cassette_dir) and not (cassette_dir / LOCK_FILE).exists()
    assert len(cassette) == 2  # the cassette itself is untouched
    assert sorted(p.name for p in cassette_dir.iterdir()) == sorted([CALLS_FILE, PRIVATE_DIR])


def test_a_rewrite_in_progress_keeps_its_temp_file(tmp_path: Path) -> None:
    """A rewrite holds the lock from start to rename: while anyone holds it, open removes nothing."""
    cassette_dir = tmp_path / "c"
    record_calls(cassette_dir, "t1", 1)
    working = cassette_dir / PRIVATE_DIR / ".calls.inprogress.tmp"
    holding, release = threading.Event(), threading.Event()

    def rewrite_in_another_thread() -> None:  # FileLock is per thread, as it is per process
        with locked(cassette_dir):
            working.write_text("being written")
            holding.set()
            release.wait(30)

    worker = threading.Thread(target=rewrite_in_another_thread)
    worker.start()
    try:
        assert holding.wait(30)
        remove_leftovers(cassette_dir)  # what open does first (open then waits for the lock to read)
        assert working.exists()
    finally:
        release.set()
        worker.join()
    Cassette.open(cassette_dir)
    assert not working.exists()


def test_the_lock_is_in_the_private_directory(tmp_path: Path) -> None:
    cassette_dir = tmp_path / "c"
    Cassette.open(cassette_dir)
    with locked(cassette_dir):
        assert (cassette_dir / PRIVATE_DIR / LOCK_FILE).is_file()
    assert (cassette_dir / PRIVATE_DIR / ".gitignore").read_text().splitlines()[-1] == "*"
