"""`--max-concurrency` under Ray: a cluster-wide limit on live model calls, held by one actor.

`LiveSlots` is a counting semaphore in a named async actor (`tauproxy-live-<run token>`, one per run,
on zero CPUs). Workers ask it for a slot around each live call (`proxy/gate.py`); replayed and
scripted calls never ask. Slots are held per trial ("holder" = the trial's run id): a trial makes one
call at a time, and when a worker dies holding a slot, the retried attempt of the same trial frees it
first (`forget`), so a dead worker cannot shrink the limit for the rest of the run.

Ray is imported only inside functions: this module is loaded before we know Ray is installed.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any


class LiveSlots:
    """The actor's class (the driver wraps it with `ray.remote`). All methods are async, so a waiting
    `acquire` does not block `release`: Ray runs an async actor's calls concurrently on one loop."""

    def __init__(self, limit: int) -> None:
        self._free = limit
        self._held: Counter[str] = Counter()
        self._changed = asyncio.Condition()
        self._peak = 0

    async def acquire(self, holder: str) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self._free > 0)
            self._free -= 1
            self._held[holder] += 1
            self._peak = max(self._peak, self._held.total())

    async def release(self, holder: str) -> None:
        await self._give_back(holder, 1)

    async def forget(self, holder: str) -> None:
        """Free every slot a holder still has: what a dead attempt of the same trial left behind."""
        await self._give_back(holder, self._held[holder])

    async def peak(self) -> int:
        """The most slots ever held at once (for tests and logs)."""
        return self._peak

    async def _give_back(self, holder: str, count: int) -> None:
        async with self._changed:
            count = min(count, self._held[holder])
            if count <= 0:
                return
            self._held[holder] -= count
            if not self._held[holder]:
                del self._held[holder]
            self._free += count
            self._changed.notify(count)


def start_live_slots(limit: int, token: str) -> Any:
    """Create the run's actor on the connected cluster; returns its handle (an ActorHandle)."""
    import ray

    actor = ray.remote(num_cpus=0)(LiveSlots)
    return actor.options(name=f"tauproxy-live-{token}").remote(limit)


class RaySlotGate:
    """A `LiveGate` (proxy/gate.py) on a worker: one trial's view of the run's `LiveSlots` actor."""

    def __init__(self, slots: Any, holder: str) -> None:
        self._slots = slots
        self._holder = holder

    def acquire(self) -> None:
        import ray

        ray.get(self._slots.acquire.remote(self._holder))

    def release(self) -> None:
        import ray

        ray.get(self._slots.release.remote(self._holder))

    def forget(self) -> None:
        import ray

        ray.get(self._slots.forget.remote(self._holder))
