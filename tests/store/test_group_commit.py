"""Group commit: calls recorded while an fsync runs share the next one, and nobody is answered early."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from recordings import recording

from tauproxy.data_model.call import Usage
from tauproxy.data_model.completion import CallRecording
from tauproxy.errors import CassetteError
from tauproxy.store.cassette import Cassette
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.group_commit import GroupCommit
from tauproxy.store.maintenance import verify

THREADS = 8
SYSTEM = {"role": "system", "content": "shared by every writer"}


def call_of(writer: str, index: int, *extra: dict[str, str]) -> CallRecording:
    messages = [SYSTEM, *extra, {"role": "user", "content": f"{writer} {index}"}]
    request = {"model": "m", "messages": messages, "temperature": 0}
    response = {"choices": [{"message": {"role": "assistant", "content": f"re {writer} {index}"}}]}
    usage = Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2)
    return recording(request, response, task_id=writer, call_index=index, usage=usage)


def wait_until(condition: Callable[[], object]) -> None:
    """Wait (polling) until `condition()` holds; the test's own timeout bounds it."""
    event = threading.Event()
    while not condition():
        event.wait(0.001)


def test_items_queued_during_a_commit_share_the_next_one_and_return_after_it() -> None:
    release_first = threading.Event()
    committed: list[list[int]] = []
    finished: set[int] = set()  # items whose commit has returned

    def commit(batch: Sequence[int]) -> list[int]:
        if not committed:
            committed.append(list(batch))
            release_first.wait()
        else:
            committed.append(list(batch))
        finished.update(batch)
        return [item * 10 for item in batch]

    group: GroupCommit[int, int] = GroupCommit(commit)
    results: dict[int, int] = {}
    early: list[int] = []

    def submit(item: int) -> None:
        result = group.submit(item)
        if item not in finished:
            early.append(item)  # answered before the commit covering it returned: never allowed
        results[item] = result

    first = threading.Thread(target=submit, args=(0,))
    first.start()
    wait_until(lambda: committed)
    others = [threading.Thread(target=submit, args=(n,)) for n in range(1, THREADS)]
    for thread in others:
        thread.start()
    wait_until(lambda: len(group._queue) == THREADS - 1)
    assert results == {}  # nobody is answered while the commit covering them has not run
    release_first.set()
    for thread in [first, *others]:
        thread.join()

    assert committed[0] == [0]
    assert sorted(committed[1]) == list(range(1, THREADS))  # one commit for all that queued meanwhile
    assert group.batches == 2
    assert results == {n: n * 10 for n in range(THREADS)}
    assert early == []


def test_a_failed_commit_fails_every_item_of_its_batch_and_the_next_batch_still_commits() -> None:
    calls: list[list[str]] = []

    def commit(batch: Sequence[str]) -> list[str]:
        calls.append(list(batch))
        if "bad" in batch:
            raise CassetteError("disk full")
        return list(batch)

    group: GroupCommit[str, str] = GroupCommit(commit)
    with pytest.raises(CassetteError, match="disk full"):
        group.submit("bad")
    assert group.submit("good") == "good"
    assert calls == [["bad"], ["good"]]


def test_threads_recording_at_once_share_fsyncs_and_every_call_is_indexed_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = Cassette.open(tmp_path / "c")
    real_fsync = os.fsync
    gate = threading.Event()

    def first_fsync_waits_for_the_others(fd: int) -> None:
        if not gate.is_set():  # hold the first commit until every other thread has queued its call
            wait_until(lambda: len(cassette.writer._group._queue) == THREADS)
            gate.set()
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", first_fsync_waits_for_the_others)  # the writer calls os.fsync
    entries: dict[str, CassetteEntry] = {}
    new_to_the_batch = {"role": "user", "content": "a message every call of the second batch brings"}

    def record(writer: str) -> None:
        extra = [new_to_the_batch] if writer != "first" else []
        entries[writer] = cassette.record(call_of(writer, 0, *extra))

    first = threading.Thread(target=record, args=("first",))
    first.start()
    wait_until(lambda: cassette.writer._group._committing)
    threads = [threading.Thread(target=record, args=(f"t{n}",)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in [first, *threads]:
        thread.join()

    assert cassette.writer.commits == 2  # the first call alone, then every call that came meanwhile
    reopened = Cassette.open(tmp_path / "c", create=False, fresh_index=True)
    assert len(reopened) == len(cassette) == THREADS + 1
    assert reopened.problems == [] and verify(reopened) == []
    for writer, entry in entries.items():
        found = reopened.lookup(entry.sample_key)
        assert found is not None and found.task_id == writer
        assert reopened.response_of(found)["choices"][0]["message"]["content"] == f"re {writer} 0"
        assert cassette.lookup(entry.sample_key) == found
        assert reopened.request_of(found)["messages"][-1]["content"] == f"{writer} 0"
    # Content is written once: the system message by the first call, the message new to the second
    # batch by the first of its calls (the others dedup against the batch, not only the file).
    text = (tmp_path / "c" / "calls.jsonl").read_text()
    assert text.count("shared by every writer") == 1
    assert text.count("a message every call of the second batch brings") == 1


def write_calls(directory: str, writer: str, count: int) -> None:
    cassette = Cassette.open(Path(directory))
    for index in range(count):
        cassette.record(call_of(writer, index))


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_threads_in_group_commit_and_another_process_lose_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    Cassette.open(directory)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    other = context.Process(target=write_calls, args=(str(directory), "process", 150))
    other.start()
    shared = Cassette.open(directory)
    per_thread = 40

    def record_all(writer: str) -> None:
        for index in range(per_thread):
            shared.record(call_of(writer, index))

    threads = [threading.Thread(target=record_all, args=(f"t{n}",)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    other.join(timeout=90)
    assert other.exitcode == 0

    cassette = Cassette.open(directory, create=False, fresh_index=True)
    assert len(cassette) == THREADS * per_thread + 150
    assert cassette.problems == [] and verify(cassette) == []
    for writer, count in [*((f"t{n}", per_thread) for n in range(THREADS)), ("process", 150)]:
        # each writer's calls are in the file in the order it recorded them
        assert [e.call_index for e in cassette.entries() if e.task_id == writer] == list(range(count))


KILLED_WRITER = """
import sys, threading
sys.path.insert(0, sys.argv[2])
from test_group_commit import call_of
from tauproxy.store.cassette import Cassette
cassette = Cassette.open(__import__("pathlib").Path(sys.argv[1]))
lock = threading.Lock()
def run(writer):
    for index in range(100_000):
        entry = cassette.record(call_of(writer, index))
        with lock:  # a call is reported only once record returned: it was fsynced by then
            print(entry.sample_key, flush=True)
threads = [threading.Thread(target=run, args=(f"k{n}",)) for n in range(8)]
for thread in threads:
    thread.start()
"""


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_kill_9_during_group_commits_loses_no_call_that_was_answered(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    Cassette.open(directory)
    here = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here.parent), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(directory), str(here)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdout is not None
    answered = []
    for line in child.stdout:
        answered.append(line.strip())
        if len(answered) == 150:  # well into the run, with commits in flight
            child.send_signal(signal.SIGKILL)
            break
    child.wait(timeout=30)
    child.stdout.close()

    cassette = Cassette.open(directory, create=False, fresh_index=True)
    missing = [key for key in answered if cassette.lookup(key) is None]
    assert missing == []
    # at most the line being written when the kill came is cut, and readers skip it
    assert len(cassette.problems) <= 1


def test_record_all_appends_calls_in_one_commit_in_order(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    calls = [call_of("trial", index) for index in range(5)]
    entries = cassette.writer.record_all(calls)
    assert cassette.writer.commits == 1
    assert cassette.writer.record_all([]) == [] and cassette.writer.commits == 1
    reopened = Cassette.open(tmp_path / "c", create=False, fresh_index=True)
    assert [e.sample_key for e in reopened.entries()] == [e.sample_key for e in entries]
    assert [e.call_index for e in reopened.entries()] == list(range(5))
    assert verify(reopened) == []
