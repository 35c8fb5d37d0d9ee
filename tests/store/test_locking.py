"""The cassette's file lock as `locked` holds it (a lock file kept open, one flock per hold): it excludes
filelock's lock on the same file both ways, orders this process's threads, is re-entrant within one,
survives its file being removed, and a forked child never shares its parent's hold."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import threading
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

from tauproxy.errors import CassetteError
from tauproxy.store import locking
from tauproxy.store.format import LOCK_FILE, PRIVATE_DIR
from tauproxy.store.locking import locked, remove_leftovers


def free_for_filelock(directory: Path) -> bool:
    """Whether another holder (filelock's, on its own descriptor) could take the lock now."""
    other = FileLock(str(directory / PRIVATE_DIR / LOCK_FILE), timeout=0)
    try:
        other.acquire()
    except Timeout:
        return False
    other.release()
    return True


def test_it_excludes_filelocks_lock_both_ways(tmp_path: Path) -> None:
    with locked(tmp_path):
        assert not free_for_filelock(tmp_path)
    assert free_for_filelock(tmp_path)
    held, release = threading.Event(), threading.Event()

    def hold_filelock() -> None:  # filelock's lock, held (and released) by a thread of its own
        other = FileLock(str(tmp_path.resolve() / PRIVATE_DIR / LOCK_FILE))  # as older versions hold it
        with other:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold_filelock)
    holder.start()
    assert held.wait(30)
    waited = threading.Event()

    def lock_it() -> None:
        with locked(tmp_path):
            waited.set()

    taker = threading.Thread(target=lock_it)
    taker.start()
    assert not waited.wait(0.3)  # locked waits while filelock's is held
    release.set()
    assert waited.wait(30)
    taker.join()
    holder.join()


def test_one_thread_at_a_time_and_reentrant_within_one(tmp_path: Path) -> None:
    inside: list[str] = []
    entered, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with locked(tmp_path), locked(tmp_path):  # re-entrant
            inside.append("first")
            entered.set()
            leave.wait(30)
            inside.append("first out")

    first = threading.Thread(target=hold)
    first.start()
    assert entered.wait(30)

    def hold_too() -> None:
        with locked(tmp_path):
            inside.append("second")

    second = threading.Thread(target=hold_too)
    second.start()
    second.join(0.3)
    assert inside == ["first"]  # the second thread waits
    leave.set()
    first.join()
    second.join(30)
    assert inside == ["first", "first out", "second"]


def test_a_lock_file_removed_between_holds_is_made_and_locked_again(tmp_path: Path) -> None:
    with locked(tmp_path):
        pass
    shutil.rmtree(tmp_path / PRIVATE_DIR)
    with locked(tmp_path):
        assert (tmp_path / PRIVATE_DIR / LOCK_FILE).exists()
        assert not free_for_filelock(tmp_path)  # the file there now is the one held
    assert (tmp_path / PRIVATE_DIR / ".gitignore").exists()
    (tmp_path / PRIVATE_DIR / LOCK_FILE).unlink()  # removed while the descriptor stays open
    with locked(tmp_path):
        assert not free_for_filelock(tmp_path)


def _child_tries(directory: str, result: multiprocessing.Queue[str]) -> None:
    locking.LOCK_TIMEOUT_S = 0.3
    try:
        with locked(Path(directory)):
            result.put("acquired")
    except CassetteError:
        result.put("excluded")


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_a_forked_child_does_not_share_its_parents_hold(tmp_path: Path) -> None:
    result: multiprocessing.Queue[str] = multiprocessing.get_context("fork").Queue()
    with locked(tmp_path):
        child = multiprocessing.get_context("fork").Process(target=_child_tries, args=(str(tmp_path), result))
        child.start()
        child.join(30)
        assert result.get(timeout=10) == "excluded"
    child = multiprocessing.get_context("fork").Process(target=_child_tries, args=(str(tmp_path), result))
    child.start()
    child.join(30)
    assert result.get(timeout=10) == "acquired"


def open_lock_files() -> int:
    """How many descriptors this process holds open on cassette lock files."""
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            count += Path(os.readlink(fd)).name == LOCK_FILE
        except OSError:
            continue
    return count


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors through /proc")
def test_a_process_that_goes_through_many_cassettes_keeps_few_lock_files_open(tmp_path: Path) -> None:
    for index in range(3 * locking.MAX_HELD_FILES):
        (tmp_path / str(index)).mkdir()
        with locked(tmp_path / str(index)):
            pass
        assert open_lock_files() <= locking.MAX_HELD_FILES
    with locked(tmp_path / "0"):  # closed, opened again: still the lock
        assert not free_for_filelock(tmp_path / "0")


def test_a_thread_that_holds_it_takes_it_again_by_another_name(tmp_path: Path) -> None:
    cassette = tmp_path / "cassette"
    cassette.mkdir()
    (tmp_path / "link").symlink_to(cassette)
    with locked(cassette), locked(tmp_path / "link"), locked(tmp_path / ".." / tmp_path.name / "cassette"):
        assert not free_for_filelock(cassette)
    assert free_for_filelock(cassette)


def test_a_thread_that_holds_it_clears_a_killed_rewrites_leftovers(tmp_path: Path) -> None:
    (tmp_path / PRIVATE_DIR).mkdir()
    leftover = tmp_path / PRIVATE_DIR / ".calls.dead.tmp"
    leftover.write_text("half a rewrite")
    with locked(tmp_path):  # as a merge holds its target's lock while it opens it
        remove_leftovers(tmp_path)
        assert not leftover.exists()


def descriptors_in(directory: Path) -> list[str]:
    """What this process holds open under `directory`."""
    inside = str(directory.resolve())
    found = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith(inside + os.sep):
            found.append(target)
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors through /proc")
def test_a_closed_cassette_keeps_no_file_of_its_directory_open(tmp_path: Path) -> None:
    """Closed, a cassette lets go of its lock file too (a directory on a mount can then be unmounted);
    another open on the same directory locks it again."""
    from recordings import recording

    from tauproxy.store.cassette import Cassette

    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    answer = {"choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}
    first = Cassette.open(tmp_path / "cassette")
    first.record(recording(request, answer))
    assert descriptors_in(tmp_path)  # its index, its file, its lock file
    second = Cassette.open(tmp_path / "cassette")
    first.close()
    second.record(recording(request, answer, trial=1))
    with locked(tmp_path / "cassette"):
        assert not free_for_filelock(tmp_path / "cassette")
    second.close()
    assert descriptors_in(tmp_path) == []
    reopened = Cassette.open(tmp_path / "cassette", create=False)
    assert len(reopened.entries()) == 2
    reopened.close()
    assert descriptors_in(tmp_path) == []
