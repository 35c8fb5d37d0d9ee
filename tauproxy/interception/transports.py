"""The transports an intercept's clients are built on: serve's app in-process, model API paths only.

Async clients get the library's own `ASGITransport` (the app runs on the caller's loop, as a
server's would); sync clients get `SyncASGITransport` (the app on the intercept's loop thread). Both
refuse what no model API route takes (routes.py) before the app sees it, and refuse to answer once
the intercept has closed. They are written against the API httpx and httpx2 share (libraries.py) and
duck-type the library's transport interface (handle_request, close, the context manager), which is
all its Client asks of a transport.
"""

from __future__ import annotations

from types import ModuleType, TracebackType
from typing import Any

from tauproxy.errors import ConfigError
from tauproxy.interception.asgi_sync import LoopThread, SyncASGITransport
from tauproxy.interception.routes import ApiRoutes

__all__ = ["AsyncInterceptTransport", "InterceptState", "InterceptTransport"]


class InterceptState:
    """Whether the intercept that made a transport is still open (one flag shared by its transports)."""

    def __init__(self) -> None:
        self.closed = False

    def check(self) -> None:
        if self.closed:
            raise ConfigError("tauproxy intercept is closed: its clients answer only inside its `with` block")


class InterceptTransport:
    def __init__(self, http: ModuleType, app: Any, loop: LoopThread, routes: ApiRoutes, state: InterceptState) -> None:
        self._http = http
        self._inner = SyncASGITransport(http, app, loop)
        self._routes = routes
        self._state = state

    def handle_request(self, request: Any) -> Any:
        self._state.check()
        return self._routes.refusal(self._http, request) or self._inner.handle_request(request)

    def close(self) -> None:
        return None

    def __enter__(self) -> InterceptTransport:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


class AsyncInterceptTransport:
    def __init__(self, http: ModuleType, app: Any, routes: ApiRoutes, state: InterceptState) -> None:
        self._http = http
        self._inner = http.ASGITransport(app=app)
        self._routes = routes
        self._state = state

    async def handle_async_request(self, request: Any) -> Any:
        self._state.check()
        return self._routes.refusal(self._http, request) or await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        return None

    async def __aenter__(self) -> AsyncInterceptTransport:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()
