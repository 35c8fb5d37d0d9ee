"""The threads serve and intercept make live calls and cassette writes in (tauproxy/serve/threads.py):
closed, none is left waiting; a call handed over before the close still gets its answer."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from stub_upstream import StubUpstream

from tauproxy.interception import intercept
from tauproxy.serve.threads import OffLoop

THREAD = "tauproxy-serve-call"


def call_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == THREAD]


def settled(before: int, timeout: float = 10.0) -> int:
    """The number of call threads once the count stops exceeding `before` (threads end asynchronously)."""
    deadline = time.monotonic() + timeout
    while len(call_threads()) > before and time.monotonic() < deadline:
        time.sleep(0.01)
    return len(call_threads())


def test_closed_its_waiting_workers_end_and_a_later_call_is_refused() -> None:
    before = len(call_threads())
    off_loop = OffLoop(8)

    async def calls() -> list[int]:
        return list(await asyncio.gather(*(off_loop.run(lambda n=n: n * n) for n in range(5))))

    assert asyncio.run(calls()) == [0, 1, 4, 9, 16]
    assert len(call_threads()) > before  # the workers wait for the next call
    off_loop.close()
    off_loop.close()  # idempotent
    assert settled(before) == before
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(off_loop.run(lambda: 1))


def test_a_call_in_progress_at_the_close_is_answered_and_its_worker_ends_after() -> None:
    before = len(call_threads())
    off_loop = OffLoop(8)
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(timeout=30)
        return "answered"

    async def scenario() -> str:
        pending = asyncio.ensure_future(off_loop.run(slow))
        await asyncio.to_thread(started.wait, 30)
        off_loop.close()  # while the call holds its worker
        release.set()
        return await pending

    assert asyncio.run(scenario()) == "answered"
    assert settled(before) == before


def test_intercepts_opened_and_closed_one_after_another_leave_no_call_thread(
    tmp_path: Path, stub: StubUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    import openai

    monkeypatch.setenv("STUB_KEY", "sk-stub")
    upstream = {"gpt-stub": {"model": "openai/stub", "api_base": stub.url, "api_key_env": "STUB_KEY"}}
    before = len(call_threads())
    for n in range(5):
        with intercept(tmp_path / "cassette", "auto", upstream=upstream) as tp:
            client = openai.OpenAI(api_key="unused", http_client=tp.http_client(), max_retries=0)
            reply = client.chat.completions.create(model="gpt-stub", messages=[{"role": "user", "content": f"hi {n}"}])
            assert reply.choices[0].message.content
    assert stub.request_count == 5  # every call went live, through a call thread
    assert settled(before) == before
