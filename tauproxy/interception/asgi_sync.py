"""A synchronous transport that answers from an ASGI app run on a private event-loop thread.

httpx (and httpx2) ship an `ASGITransport` for async clients only. A sync client (`openai.OpenAI`,
`anthropic.Anthropic`) gets this one: each request is read whole, handed to the library's own
`ASGITransport` on a loop that one daemon thread runs for the whole intercept, and its answer is read
whole before it is returned (the app answers a stream as one body too, so nothing is lost by
buffering). The caller's thread only waits; no global is patched and no loop of the caller's is touched.

Written against the API httpx and httpx2 share, for the library module it is given (libraries.py).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from types import ModuleType, TracebackType
from typing import Any, TypeVar

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


class SyncASGITransport:
    """The library's `ASGITransport`, for its sync clients: the app runs on `loop`."""

    def __init__(self, http: ModuleType, app: Any, loop: LoopThread) -> None:
        self._http = http
        self._asgi = http.ASGITransport(app=app)
        self._loop = loop

    def handle_request(self, request: Any) -> Any:
        http = self._http
        inner = http.Request(request.method, request.url, headers=request.headers, content=request.read())
        status, headers, content = self._loop.run(self._answer(inner))
        return http.Response(status, headers=headers, stream=http.ByteStream(content), request=request)

    async def _answer(self, request: Any) -> tuple[int, Any, bytes]:
        response = await self._asgi.handle_async_request(request)
        try:
            return response.status_code, response.headers, await response.aread()
        finally:
            await response.aclose()

    def close(self) -> None:
        return None

    def __enter__(self) -> SyncASGITransport:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
