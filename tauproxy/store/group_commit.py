"""Group commit: one fsync covers every append that arrived while the previous fsync ran.

An fsync costs milliseconds on a real disk, and a call must be on disk before its answer is used,
so one fsync per call caps a writer at a few hundred calls a second at any concurrency. Here the
callers that arrive while a commit runs queue up; when it is done, one of them (the leader) takes
the whole queue and commits it with one `commit(batch)` (the writer appends each call and fsyncs
once), and every caller in that batch returns only after that commit returned. A lone caller is
a batch of one, committed at once: nothing waits for company.

No thread of its own: the leader is whichever waiting caller wakes first, so a process that stops
leaves nothing behind, and a caller killed with the process was never answered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


class _Waiting(Generic[_Item, _Result]):
    """One caller's item, and what its commit gave it."""

    __slots__ = ("done", "error", "item", "result")

    def __init__(self, item: _Item) -> None:
        self.item = item
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
        self._changed = threading.Condition(threading.Lock())
        self._queue: list[_Waiting[_Item, _Result]] = []
        self._committing = False
        self.batches = 0  # commits made (a test and the bench read it: items per commit)

    def submit(self, item: _Item) -> _Result:
        return self.submit_all([item])[0]

    def submit_all(self, items: Sequence[_Item]) -> list[_Result]:
        """Commit `items` together (one batch, with whatever else is queued); their results in order."""
        waiting: list[_Waiting[_Item, _Result]] = [_Waiting(item) for item in items]
        with self._changed:
            self._queue.extend(waiting)
            while self._committing and not waiting[-1].done:
                self._changed.wait()
            if waiting[-1].done:  # a leader committed them (all in one batch) while this caller waited
                return [self._outcome(one) for one in waiting]
            batch, self._queue = self._queue, []
            self._committing = True
        try:
            self._run(batch)
        finally:
            with self._changed:
                self._committing = False
                self.batches += 1
                self._changed.notify_all()
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
