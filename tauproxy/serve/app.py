"""The HTTP surface of `tauproxy serve` (a Starlette app).

    POST /v1/chat/completions   record/replay (see completions); `stream: true` answers as SSE
    GET  /v1/models             the upstream map's names plus every model in the cassette
    GET  /healthz               liveness; never needs the token
    GET  /stats                 hits, misses, live calls, errors, live and saved cost, per model

With an auth token every route but /healthz needs `Authorization: Bearer <token>` (401 without).
No client header is ever forwarded upstream, logged or stored: the upstream key comes from the
server's environment only, so a client's Authorization header goes nowhere.
"""

from __future__ import annotations

import functools
import hmac
import json
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tauproxy.serve.body import check_content_type, parse_chat_request, read_capped, wants_usage_chunk
from tauproxy.serve.completions import CompletionService
from tauproxy.serve.errors import HttpError
from tauproxy.serve.identity import ROLE_HEADER, SCOPE_HEADER, parse_role, parse_scope
from tauproxy.serve.sse import sse_body


def json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return Response(data, status_code=status, media_type="application/json", headers=headers)


def error_response(error: HttpError) -> Response:
    return json_response(error.status, error.body(), error.headers or None)


class ServeApp:
    """Routes bound to one CompletionService and one server's settings."""

    def __init__(
        self,
        service: CompletionService,
        *,
        auth_token: str | None,
        max_body_bytes: int,
        model_names: Callable[[], list[str]],
        describe: dict[str, Any],
        on_shutdown: Callable[[], None] | None = None,
    ) -> None:
        self.service = service
        self._token = auth_token.encode() if auth_token else None
        self._max_body_bytes = max_body_bytes
        self._model_names = model_names
        self._describe = describe
        self._on_shutdown = on_shutdown

    def starlette(self) -> Starlette:
        chat = _answering_errors(self.chat)
        routes = [
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/chat/completions", chat, methods=["POST"]),  # clients whose base lacks /v1
            Route("/v1/models", _answering_errors(self.models), methods=["GET"]),
            Route("/healthz", _answering_errors(self.healthz), methods=["GET"]),
            Route("/stats", _answering_errors(self.stats), methods=["GET"]),
        ]
        # Unknown paths and wrong methods are raised by Starlette's router; answer them in JSON too.
        handlers: dict[Any, Callable[..., Any]] = {HTTPException: self._on_starlette_error}
        return Starlette(routes=routes, exception_handlers=handlers, lifespan=self._lifespan)

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        yield
        # Runs after uvicorn drained in-flight requests; every recorded call is fsynced already.
        if self._on_shutdown is not None:
            self._on_shutdown()

    def _authorize(self, request: Request) -> None:
        if self._token is None:
            return
        # RFC 9110: the auth scheme is case-insensitive ("bearer" and "Bearer" are the same).
        scheme, _, given = request.headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self._token):
            raise HttpError(401, "missing or wrong bearer token", "authentication_error", "invalid_api_key")

    async def chat(self, request: Request) -> Response:
        self._authorize(request)
        check_content_type(request.headers.get("content-type"))
        raw = await read_capped(request.headers.get("content-length"), request.stream(), self._max_body_bytes)
        body = parse_chat_request(raw)
        scope = parse_scope(request.headers.get(SCOPE_HEADER))
        role = parse_role(request.headers.get(ROLE_HEADER))
        completion = await self.service.complete(body, scope, role)
        if body.get("stream") is True:
            data = sse_body(completion, wants_usage_chunk(body))
            return Response(data, media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
        return json_response(200, completion)

    async def models(self, request: Request) -> Response:
        self._authorize(request)
        data = [{"id": name, "object": "model", "created": 0, "owned_by": "tauproxy"} for name in self._model_names()]
        return json_response(200, {"object": "list", "data": data})

    async def healthz(self, request: Request) -> Response:
        return json_response(200, {"ok": True})

    async def stats(self, request: Request) -> Response:
        self._authorize(request)
        return json_response(200, {**self._describe, **self.service.stats.snapshot()})

    async def _on_starlette_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return error_response(HttpError(exc.status_code, f"{exc.detail}: {request.method} {request.url.path}"))


Handler = Callable[[Request], Awaitable[Response]]


def _answering_errors(handler: Handler) -> Handler:
    """Turn HttpError into its answer and a bug into a 500, inside the route.

    Letting a bug escape to Starlette's error middleware would re-raise it to uvicorn, which then
    drops the connection under the client; a clean 500 keeps the client's keep-alive pool healthy.
    """

    @functools.wraps(handler)
    async def answer(request: Request) -> Response:
        try:
            return await handler(request)
        except HttpError as error:
            return error_response(error)
        except Exception as exc:
            traceback.print_exception(exc)  # a bug: keep its traceback on stderr, answer loudly
            return error_response(HttpError(500, f"tauproxy serve internal error: {type(exc).__name__}"))

    return answer
