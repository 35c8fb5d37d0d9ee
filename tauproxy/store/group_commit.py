"""Group commit: one fsync covers every append that arrived while the previous fsync ran.

An fsync costs milliseconds on a real disk, and a call must be on disk before its answer is used,
so one fsync per call caps a writer at a few hundred calls a second at any concurrency. Here the
callers that arrive while a commit runs queue up; when it is done, one of them (the leader) takes
the whole queue and commits it with one `commit(batch)` (the writer appends each call and fsyncs
once), and every caller in that batch returns only after that commit returned. A lone caller is
a batch of one, committed at once: nothing waits for company.

No thread of its own: the leader is a caller, the first of those queued when a commit ends (or one
that arrives while none runs), so a process that stops leaves nothing behind, and a caller killed
with the process was never answered. Each caller sleeps on a lock of its own, and a commit wakes only
the callers it covered and the next leader.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


class _Caller:
    """One caller of submit_all, asleep on its own lock while its items wait: a commit wakes only the
    callers it committed and the next leader, not every waiting thread (a notify_all woke them all at
    each commit, to find most still waiting: at 32 callers, a GIL round trip each)."""

    __slots__ = ("asleep", "wake")

    def __init__(self) -> None:
        self.wake = threading.Lock()
        self.wake.acquire()  # held: acquiring it again sleeps until _wake releases it
        self.asleep = False


class _Waiting(Generic[_Item, _Result]):
    """One caller's item, and what its commit gave it."""

    __slots__ = ("caller", "done", "error", "item", "result")

    def __init__(self, item: _Item, caller: _Caller) -> None:
        self.item = item
        self.caller = caller
        self.done = False
        self.result: _Result | None = None
        self.error: BaseException | None = None


class GroupCommit(Generic[_Item, _Result]):
    """Commits items in batches; `submit` returns an item's result once its batch is committed.

    `commit(batch)` returns one result per item, in order, or raises: then every item of that batch
    raises the same error (none of them may be taken as durable). Thread-safe.
    """

    def __init__(self, commit: Callable[[Sequence[_Item]], Sequence[_Result]]) -> None:
        self._commit = commit
        self._mutex = threading.Lock()  # guards the queue, the flag and every caller's `asleep`
        self._queue: list[_Waiting[_Item, _Result]] = []
        self._committing = False
        self.batches = 0  # commits made (a test and the bench read it: items per commit)

    def submit(self, item: _Item) -> _Result:
        return self.submit_all([item])[0]

    def submit_all(self, items: Sequence[_Item]) -> list[_Result]:
        """Commit `items` together (one batch, with whatever else is queued); their results in order."""
        caller = _Caller()
        waiting: list[_Waiting[_Item, _Result]] = [_Waiting(item, caller) for item in items]
        last = waiting[-1]
        with self._mutex:
            self._queue.extend(waiting)
            while self._committing and not last.done:
                caller.asleep = True
                self._mutex.release()
                try:
                    caller.wake.acquire()  # until a commit of them, or the end of one (to lead the next)
                except BaseException:  # interrupted: its items leave the queue, and it leads nothing
                    self._mutex.acquire()
                    self._queue = [one for one in self._queue if one.caller is not caller]
                    if self._queue and not self._committing:
                        _wake(self._queue[0].caller)
                    raise
                self._mutex.acquire()
            if last.done:  # a leader committed them (all in one batch) while this caller waited
                return [self._outcome(one) for one in waiting]
            batch, self._queue = self._queue, []
            self._committing = True
        try:
            self._run(batch)
        finally:
            with self._mutex:
                self._committing = False
                self.batches += 1
                for one in batch:
                    _wake(one.caller)
                if self._queue:
                    _wake(self._queue[0].caller)  # to lead the next commit, of everything queued by then
        return [self._outcome(one) for one in waiting]

    def _run(self, batch: list[_Waiting[_Item, _Result]]) -> None:
        try:
            results = self._commit([waiting.item for waiting in batch])
        except BaseException as exc:
            for waiting in batch:
                waiting.error, waiting.done = exc, True
            return
        if len(results) != len(batch):
            error = RuntimeError(f"a commit of {len(batch)} items gave {len(results)} results")
            for waiting in batch:
                waiting.error, waiting.done = error, True
            return
        for waiting, result in zip(batch, results, strict=True):
            waiting.result, waiting.done = result, True

    @staticmethod
    def _outcome(waiting: _Waiting[_Item, _Result]) -> _Result:
        if waiting.error is not None:
            raise waiting.error
        return waiting.result  # type: ignore[return-value]  # done without error: the commit's result


def _wake(caller: _Caller) -> None:
    """Wake `caller` if it sleeps (the GroupCommit's mutex is held)."""
    if caller.asleep:
        caller.asleep = False
        caller.wake.release()
