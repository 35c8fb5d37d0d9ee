"""Many writers, one cassette: processes and threads appending at once lose and corrupt nothing."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest
from recordings import recording

from tauproxy.data_model.call import Usage
from tauproxy.store.cassette import Cassette
from tauproxy.store.maintenance import verify

PROCESSES = 8
RECORDS = 200
SYSTEM = {"role": "system", "content": "shared by every writer"}


def write_calls(directory: str, writer: str, count: int, cassette: Cassette | None = None) -> None:
    """Record `count` small calls; each writer has its own task id, all share the system message."""
    if cassette is None:
        cassette = Cassette.open(Path(directory))
    for index in range(count):
        request = {
            "model": "m",
            "messages": [SYSTEM, {"role": "user", "content": f"{writer} {index}"}],
            "temperature": 0,
        }
        response = {"choices": [{"message": {"role": "assistant", "content": f"re {writer} {index}"}}]}
        usage = Usage(prompt_tokens=1, completion_tokens=1, total_tokens=2)
        cassette.record(recording(request, response, task_id=writer, call_index=index, usage=usage))


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_processes_append_concurrently(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    Cassette.open(directory)
    # Each writer is its own process (own file handles, own locks), forked from a server that imported
    # this module once: a spawned writer would import pytest and tauproxy again, eight times over.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    workers = [context.Process(target=write_calls, args=(str(directory), f"p{n}", RECORDS)) for n in range(PROCESSES)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=90)
    assert [worker.exitcode for worker in workers] == [0] * PROCESSES

    cassette = Cassette.open(directory, create=False)
    assert len(cassette) == PROCESSES * RECORDS
    assert cassette.problems == []
    assert verify(cassette) == []
    for n in range(PROCESSES):
        assert sorted(e.call_index for e in cassette.entries() if e.task_id == f"p{n}") == list(range(RECORDS))


def test_threads_append_concurrently_through_one_and_several_objects(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    shared = Cassette.open(directory)
    other = Cassette.open(directory)
    threads = [
        threading.Thread(target=write_calls, args=(str(directory), f"t{n}", 50, shared if n % 2 else other))
        for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    cassette = Cassette.open(directory, create=False)
    assert len(cassette) == 400
    assert verify(cassette) == []
    # Each object's index catches up with every append it makes (at the latest when counted), so it
    # sees its own calls and every call appended before its last one.
    assert len(shared) >= 200 and len(other) >= 200 and max(len(shared), len(other)) == 400
