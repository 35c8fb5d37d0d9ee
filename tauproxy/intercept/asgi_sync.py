"""A synchronous httpx transport that answers from an ASGI app run on a private event-loop thread.

httpx ships `ASGITransport` for async clients only. A sync client (`openai.OpenAI`, `anthropic.Anthropic`)
gets this one: each request is read whole, handed to httpx's own `ASGITransport` on a loop that one
daemon thread runs for the whole intercept, and its answer is read whole before it is returned (the
app answers a stream as one body too, so nothing is lost by buffering). The caller's thread only
waits; no global is patched and no event loop of the caller's is touched.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx

__all__ = ["LoopThread", "SyncASGITransport"]

T = TypeVar("T")


class LoopThread:
    """An event loop of its own in a daemon thread; coroutines are run on it from any other thread."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """`work`'s result, run on the loop; the calling thread waits for it."""
        if threading.current_thread() is self._thread:
            work.close()
            raise RuntimeError("LoopThread.run called from its own loop: it would wait for itself")
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


class SyncASGITransport(httpx.BaseTransport):
    """`httpx.ASGITransport` for sync clients: the app runs on `loop`."""

    def __init__(self, asgi: httpx.ASGITransport, loop: LoopThread) -> None:
        self._asgi = asgi
        self._loop = loop

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        inner = httpx.Request(request.method, request.url, headers=request.headers, content=request.read())
        status, headers, content = self._loop.run(self._answer(inner))
        return httpx.Response(status, headers=headers, stream=httpx.ByteStream(content), request=request)

    async def _answer(self, request: httpx.Request) -> tuple[int, httpx.Headers, bytes]:
        response = await self._asgi.handle_async_request(request)
        try:
            return response.status_code, response.headers, await response.aread()
        finally:
            await response.aclose()
