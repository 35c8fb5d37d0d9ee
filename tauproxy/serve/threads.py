"""Blocking work (live calls, cassette writes) run off the event loop, in threads a shutdown can leave.

Why not anyio's (or asyncio's) worker pool: their threads are joined when the process exits, and a
thread blocked on an upstream that never answers can only end when the route's timeout does, so one
hung upstream would keep a SIGTERM'd server alive for as long as that timeout (minutes). Here the
workers are daemon threads: the coroutine awaiting a call can be cancelled (the server answers its
client 503 and stops), and the process exits without waiting for the thread. What such a thread was
doing is lost exactly as after a kill: an answer not yet recorded was never answered, so a rerun
asks again.

A worker that finishes a call waits for the next one rather than ending, so a miss does not start a
thread (a round trip through a new thread took about 0.11 ms p50, through a waiting one 0.07 ms). A
call gets an idle worker if there is one, else a new one; a worker held by a hung upstream is simply
never idle again. `close` ends every worker once the calls handed to it are done: a process that opens
and closes many intercepts (a test session) would otherwise keep each one's waiting workers for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple[Callable[[], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class OffLoop:
    """Runs blocking functions in daemon threads, at most `max_threads` at a time."""

    def __init__(self, max_threads: int) -> None:
        self._max_threads = max_threads
        self._limiter: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # workers waiting for a job and not yet promised one
        self._workers = 0  # workers started: `close` queues one end for each
        self._closed = False

    async def run(self, func: Callable[[], T]) -> T:
        """`func()`'s result or exception; cancelling the caller abandons the thread, not the loop."""
        loop = asyncio.get_running_loop()
        if self._limiter is None or self._limiter[0] is not loop:  # a semaphore waits on one loop only
            self._limiter = (loop, asyncio.Semaphore(self._max_threads))
        async with self._limiter[1]:
            future: asyncio.Future[T] = loop.create_future()
            with self._lock:
                if self._closed:
                    raise RuntimeError("the server's call threads are closed")
                start = self._idle == 0
                if start:
                    self._workers += 1
                else:
                    self._idle -= 1  # promised this job (or one queued with it: jobs are alike)
                self._jobs.put((func, loop, future))  # under the lock: never behind the ends `close` queues
            if start:
                threading.Thread(target=self._work, name="tauproxy-serve-call", daemon=True).start()
            return await future

    def close(self) -> None:
        """End every worker after the calls already handed over (a hung one ends when its call does);
        a later `run` raises. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for _ in range(self._workers):
                self._jobs.put(None)  # behind every job (first in, first out): the worker that takes it ends

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:  # queued by `close`
                return
            _run(job)  # in a function of its own: nothing of a finished call stays held
            with self._lock:
                self._idle += 1


def _run(job: _Job) -> None:
    func, loop, future = job
    try:
        result = func()
    except BaseException as exc:  # handed to the awaiting coroutine, raised there
        _deliver(loop, future, functools.partial(future.set_exception, exc))
    else:
        _deliver(loop, future, functools.partial(future.set_result, result))


def _deliver(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], settle: Callable[[], None]) -> None:
    def on_loop() -> None:
        if not future.done():  # done: the awaiting request was cancelled, nobody wants the outcome
            settle()

    with contextlib.suppress(RuntimeError):  # the loop has closed: the server stopped while this call ran
        loop.call_soon_threadsafe(on_loop)
