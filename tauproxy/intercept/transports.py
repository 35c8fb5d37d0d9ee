"""The httpx transports an intercept hands out: serve's app in-process, model API paths only.

Async clients get httpx's own `ASGITransport` (the app runs on the caller's loop, as a server's
would); sync clients get `SyncASGITransport` (the app on the intercept's loop thread). Both refuse
what no model API route takes (routes.py) before the app sees it.
"""

from __future__ import annotations

import httpx

from tauproxy.errors import ConfigError
from tauproxy.intercept.asgi_sync import LoopThread, SyncASGITransport
from tauproxy.intercept.routes import ApiRoutes

__all__ = ["AsyncInterceptTransport", "InterceptState", "InterceptTransport"]


class InterceptState:
    """Whether the intercept that made a transport is still open (one flag shared by its transports)."""

    def __init__(self) -> None:
        self.closed = False

    def check(self) -> None:
        if self.closed:
            raise ConfigError("tauproxy intercept is closed: its clients answer only inside its `with` block")


class InterceptTransport(httpx.BaseTransport):
    def __init__(self, asgi: httpx.ASGITransport, loop: LoopThread, routes: ApiRoutes, state: InterceptState) -> None:
        self._inner = SyncASGITransport(asgi, loop)
        self._routes = routes
        self._state = state

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self._state.check()
        return self._routes.refusal(request) or self._inner.handle_request(request)


class AsyncInterceptTransport(httpx.AsyncBaseTransport):
    def __init__(self, asgi: httpx.ASGITransport, routes: ApiRoutes, state: InterceptState) -> None:
        self._inner = asgi
        self._routes = routes
        self._state = state

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self._state.check()
        return self._routes.refusal(request) or await self._inner.handle_async_request(request)
