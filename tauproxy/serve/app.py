"""The HTTP surface of `tauproxy serve` (a Starlette app).

    POST /v1/chat/completions   OpenAI chat completions, record/replay (see completions); `stream:
                                true` answers as SSE
    POST /v1/responses          the OpenAI Responses API, likewise (its event sequence when streamed)
    GET  /v1/responses/{id}     a response this server answered or the cassette holds (404 otherwise);
                                `?stream=true[&starting_after=N]` gives its events (a resumed stream)
    POST /v1/messages           Anthropic's Messages API, likewise; its errors in Anthropic's shape
    GET  /v1/models             the upstream map's names plus every model in the cassette
    GET  /healthz               liveness; never needs the token
    GET  /stats                 hits, misses, live calls, errors, live and saved cost, per model
    POST /v1/tauproxy/session   begin a new session: unseeded requests count from 0 again (identity.py)

Every wire API's POST routes (with and without /v1) are made from the registry
(tauproxy/wire_apis/registry.py) and answered by one handler: the body's JSON is checked alike
(wire_apis/json_body.py), the API checks its request and renders its answer, and everything between
(identity, role, the cassette layer, run log, stats) is the same code for all.

With an auth token every route but /healthz needs `Authorization: Bearer <token>` (401 without).
No client header is forwarded upstream, logged or stored, except those a wire API keys as part of
the request (the Messages API's anthropic-version and anthropic-beta): the upstream key comes from
the server's environment only, so a client's Authorization or x-api-key header goes nowhere.

Stopping (`stop_soon`, on SIGTERM/SIGINT): a model request that arrives after it is answered 503 at
once; one in flight gets `drain_s` seconds to finish, and is then answered 503 too, whatever its
upstream is doing, so a hung upstream never holds the server (its thread is left behind, see
threads.py). The 503 says the server is shutting down; a client retries it against a running server.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import json
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from tauproxy.serve.body import check_content_type, read_capped
from tauproxy.serve.completions import CompletionService
from tauproxy.serve.errors import HttpError
from tauproxy.serve.identity import ROLE_HEADER, SCOPE_HEADER, SESSION_PATH, parse_role, parse_scope
from tauproxy.wire_apis.base import RequestRejected, WireApi
from tauproxy.wire_apis.json_body import parse_json_object
from tauproxy.wire_apis.registry import WIRE_APIS
from tauproxy.wire_apis.responses import NAME as RESPONSES
from tauproxy.wire_apis.responses import stored_answer


def json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return Response(data, status_code=status, media_type="application/json", headers=headers)


def error_response(error: HttpError, api: WireApi | None = None) -> Response:
    """`error` as JSON: in the wire API's own error shape where it has one (its SDK reads it), else OpenAI's."""
    own = api.error_body(error.status, error.message) if api is not None else None
    return json_response(error.status, own if own is not None else error.body(), error.headers or None)


SHUTTING_DOWN_CODE = "tauproxy_shutting_down"
# How long a call in flight when the server is told to stop may still take before it is answered 503:
# long enough for a replay or a quick live call, short enough that SIGTERM ends serve within 5 s.
DEFAULT_DRAIN_S = 3.0

T = TypeVar("T")


def shutting_down() -> HttpError:
    return HttpError(
        503,
        "tauproxy serve is shutting down: this call was not answered; send it again to a running server",
        "server_error",
        SHUTTING_DOWN_CODE,
    )


class ServeApp:
    """Routes bound to one CompletionService and one server's settings."""

    def __init__(
        self,
        service: CompletionService,
        *,
        auth_token: str | None,
        max_body_bytes: int,
        read_timeout_s: float,
        model_names: Callable[[], list[str]],
        describe: dict[str, Any],
        on_shutdown: Callable[[], None] | None = None,
        drain_s: float = DEFAULT_DRAIN_S,
    ) -> None:
        self.service = service
        self._token = auth_token.encode() if auth_token else None
        self._max_body_bytes = max_body_bytes
        self._read_timeout_s = read_timeout_s
        self._model_names = model_names
        self._describe = describe
        self._on_shutdown = on_shutdown
        self._drain_s = drain_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False
        # The requests inside _unless_drained, and those of them the drain's end cancelled (answered 503).
        self._in_flight: set[asyncio.Task[Any]] = set()
        self._cut_off: set[asyncio.Task[Any]] = set()

    def starlette(self) -> Starlette:
        model_routes = {
            path: _answering_errors(functools.partial(self.model_call, api), api)
            for api in WIRE_APIS
            for path in api.paths
        }
        routes = [Route(path, handler, methods=["POST"]) for path, handler in model_routes.items()]
        stored = _answering_errors(self.stored_response)
        routes += [
            Route("/v1/responses/{response_id}", stored, methods=["GET"]),
            Route("/responses/{response_id}", stored, methods=["GET"]),
            Route("/v1/models", _answering_errors(self.models), methods=["GET"]),
            Route("/healthz", _answering_errors(self.healthz), methods=["GET"]),
            Route("/stats", _answering_errors(self.stats), methods=["GET"]),
            Route(SESSION_PATH, _answering_errors(self.new_session), methods=["POST"]),
        ]
        # Unknown paths and wrong methods are raised by Starlette's router; answer them in JSON too.
        handlers: dict[Any, Callable[..., Any]] = {HTTPException: self._on_starlette_error}
        return _ModelCallsFirst(model_routes, routes=routes, exception_handlers=handlers, lifespan=self._lifespan)

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        self._on_loop()
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

    def _on_loop(self) -> None:
        """Remember the serving loop, which stop_soon is called from outside of."""
        self._loop = asyncio.get_running_loop()  # a test may serve from several loops: the latest

    def stop_soon(self) -> None:
        """Begin stopping: safe to call from a signal handler or another thread."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._begin_drain)

    def _begin_drain(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        asyncio.get_running_loop().call_later(self._drain_s, self._end_drain)

    def _end_drain(self) -> None:
        """The drain is over: every call still in flight is cancelled where it waits, and answered 503."""
        for task in self._in_flight:
            self._cut_off.add(task)
            task.cancel()

    async def _unless_drained(self, work: Callable[[], Awaitable[T]]) -> T:
        """`work()`'s outcome, or HttpError 503 if the server stops before it has one (or has stopped).

        `work` runs in the request's own task, which the drain's end cancels: no task or wait of its
        own per call (a replay never waits at all). A cancellation that is not the drain's (the
        client went away, uvicorn's own shutdown limit) goes on up as it came.
        """
        if self._stopping:
            raise shutting_down()
        task = asyncio.current_task()
        assert task is not None  # an ASGI app always runs in a task
        if self._loop is not task.get_loop():
            self._loop = task.get_loop()
        self._in_flight.add(task)
        try:
            return await work()
        except asyncio.CancelledError:
            if task not in self._cut_off:
                raise
            task.uncancel()
            raise shutting_down() from None  # a live call's daemon thread, if any, runs on unwatched (threads.py)
        finally:
            self._in_flight.discard(task)
            self._cut_off.discard(task)

    async def model_call(self, api: WireApi, request: Request) -> Response:
        """The one handler of every wire API's POST routes."""
        self._authorize(request)
        return await self._unless_drained(functools.partial(self._model_call, api, request))

    async def _model_call(self, api: WireApi, request: Request) -> Response:
        check_content_type(request.headers.get("content-type"))
        raw = await self._read_body(request)
        try:
            asked = api.request(parse_json_object(raw), request.headers).sent_as(raw)
        except RequestRejected as rejected:
            raise HttpError(rejected.status, rejected.message) from None
        scope = parse_scope(request.headers.get(SCOPE_HEADER))
        role = parse_role(request.headers.get(ROLE_HEADER))
        completion = await self.service.answer(asked, scope, role)
        answer = api.answer(asked, completion)
        return Response(answer.content, media_type=answer.media_type, headers=answer.headers or None)

    async def stored_response(self, request: Request) -> Response:
        """GET /v1/responses/{id}: a Responses API answer by its id, as the upstream sent it."""
        self._authorize(request)
        response_id = request.path_params["response_id"]
        body = self.service.recorded_answer(RESPONSES, response_id)
        if body is None:
            raise HttpError(404, f"no response {response_id!r} was answered by this server or is in its cassette")
        query = request.query_params
        after = query.get("starting_after")
        if after is not None and not after.lstrip("-").isdigit():
            raise HttpError(400, f"'starting_after' must be an integer, got {after!r}")
        answer = stored_answer(body, query.get("stream") == "true", int(after) if after is not None else None)
        return Response(answer.content, media_type=answer.media_type, headers=answer.headers or None)

    async def _read_body(self, request: Request) -> bytes:
        """The body within the size limit (413) and the read timeout (408; the headers had theirs)."""
        try:
            async with asyncio.timeout(self._read_timeout_s):
                return await read_capped(request.headers.get("content-length"), request.stream(), self._max_body_bytes)
        except TimeoutError:
            message = f"request body not received within {self._read_timeout_s:g} s (--read-timeout)"
            raise HttpError(408, message, headers={"Connection": "close"}) from None

    async def models(self, request: Request) -> Response:
        self._authorize(request)
        data = [{"id": name, "object": "model", "created": 0, "owned_by": "tauproxy"} for name in self._model_names()]
        return json_response(200, {"object": "list", "data": data})

    async def healthz(self, request: Request) -> Response:
        return json_response(200, {"ok": True})

    async def stats(self, request: Request) -> Response:
        self._authorize(request)
        snapshot = self.service.stats.snapshot()
        return json_response(200, {**self._describe, **snapshot, "session": self.service.sessions.number})

    async def new_session(self, request: Request) -> Response:
        self._authorize(request)
        return json_response(200, {"session": self.service.sessions.begin()})

    async def _on_starlette_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return error_response(HttpError(exc.status_code, f"{exc.detail}: {request.method} {request.url.path}"))


Handler = Callable[[Request], Awaitable[Response]]


class _ModelCallsFirst(Starlette):
    """Starlette, with the wire APIs' POST routes found first by their exact path and answered
    directly: a model call, the hot path, passes no middleware, router or exception-handler layer
    (its handler answers every error itself, _answering_errors). Every other request, and these
    under a root path, Starlette routes as before (the same routes are registered with it).
    """

    def __init__(self, model_routes: dict[str, Handler], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._model_routes = model_routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and not scope.get("root_path"):
            handler = self._model_routes.get(scope["path"])
            if handler is not None:
                scope["app"] = self
                response = await handler(Request(scope, receive, send))
                await response(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


def _answering_errors(handler: Handler, api: WireApi | None = None) -> Handler:
    """Turn HttpError into its answer and a bug into a 500, inside the route.

    Letting a bug escape to Starlette's error middleware would re-raise it to uvicorn, which then
    drops the connection under the client; a clean 500 keeps the client's keep-alive pool healthy.
    """

    @functools.wraps(handler)
    async def answer(request: Request) -> Response:
        try:
            return await handler(request)
        except HttpError as error:
            return error_response(error, api)
        except Exception as exc:
            traceback.print_exception(exc)  # a bug: keep its traceback on stderr, answer loudly
            return error_response(HttpError(500, f"tauproxy serve internal error: {type(exc).__name__}"), api)

    return answer
