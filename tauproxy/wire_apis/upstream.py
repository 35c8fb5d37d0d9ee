"""Reaching the providers: a pass-through over httpx for every call whose wire API has an endpoint of
its own, and the one live transport serve (and in-process interception) hands the cache layer.

`PassThroughTransport` posts a call's body to the provider's own endpoint of its wire API
(base.UpstreamEndpoint says where, and where its key comes from: serve's environment or the upstream
map, never a client header): a native call's body as its client sent it (less `stream`; its very
bytes when nothing was left out and the model keeps its name, NativeRequest.sent), a chat
call's keyed body (the client's, less connection settings and the stream flag). The answer is kept
as text, byte for byte (Completion.raw_body), with its content type when that is not plain
application/json, beside its chat-shaped view. Failures become the same
ModelCallError litellm's do (proxy/live.py), so serve answers them alike: a timeout
(upstream_timeout), no connection (upstream_unreachable), an error status passed on with its
Retry-After, an answer that is not the API's JSON (upstream_malformed).

`ByWireApi` sends a native call through the pass-through, a chat call too when its route is
OpenAI-compatible (chat_route.py), and any other chat call to litellm.
"""

from __future__ import annotations

import os
import queue
import threading
import time
import urllib.request
from collections.abc import Mapping

import httpx

from tauproxy.data_model.call import ModelCall
from tauproxy.data_model.completion import Completion
from tauproxy.errors import ModelCallError
from tauproxy.proxy import own_servers
from tauproxy.proxy.transport import Transport
from tauproxy.redact import redact_text
from tauproxy.wire_apis.base import RequestRejected, UpstreamEndpoint, WireApi
from tauproxy.wire_apis.chat import JSON
from tauproxy.wire_apis.chat_route import passes_through
from tauproxy.wire_apis.json_body import compact_json, parse_json_body
from tauproxy.wire_apis.plain_http import PlainHttp

DEFAULT_TIMEOUT_S = 120.0
MAX_ERROR_CHARS = 400
MAX_CONTENT_TYPE_CHARS = 200
# Never passed on from a client, whatever an API lists: the upstream's key is serve's own.
KEY_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization"})


def upstream_url(endpoint: UpstreamEndpoint, api_base: str | None) -> str:
    from_environment = os.environ.get(endpoint.base_url_env)
    if own_servers.is_ours(from_environment):
        from_environment = None  # an intercept's own server, set for the client side (proxy/own_servers.py)
    base = api_base or from_environment or endpoint.default_base_url
    return base.rstrip("/") + endpoint.path


def upstream_headers(endpoint: UpstreamEndpoint, api_key: str | None) -> dict[str, str]:
    headers = {"content-type": "application/json", **endpoint.headers}
    key = api_key or os.environ.get(endpoint.key_env)
    if key:
        headers[endpoint.auth_header] = f"Bearer {key}" if endpoint.auth_header == "authorization" else key
    return headers


def upstream_model(endpoint: UpstreamEndpoint, routed: str) -> str:
    """A routed model name as the provider's endpoint knows it (without litellm's provider prefix)."""
    if endpoint.provider_prefix and routed.startswith(endpoint.provider_prefix):
        return routed[len(endpoint.provider_prefix) :]
    return routed


def kept_content_type(value: str | None) -> str | None:
    """The Content-Type to answer an upstream's bytes with again: None for plain application/json, what
    every answer has unless told otherwise, and for a value that is no header to send back."""
    if value is None or value == JSON or len(value) > MAX_CONTENT_TYPE_CHARS:
        return None
    return value if value.isascii() and value.isprintable() else None


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


class PassThroughTransport:
    """Native calls (ModelCall.native) to their provider's own endpoint (module docstring)."""

    def __init__(
        self, apis: Mapping[str, WireApi], client: httpx.Client | None = None, plain_http: bool = True
    ) -> None:
        self._apis = dict(apis)
        self._client = client
        self._direct = False  # False: the client sends every call; True: _post sends through a transport
        self._plain_http = plain_http  # whether serve's own client sends plain-http calls itself (plain_http.py)
        self._plain: PlainHttp | None = None
        self._lock = threading.Lock()
        # Transports that carry no call now, one call at a time each (_post); every one made, to close.
        self._idle: queue.SimpleQueue[httpx.HTTPTransport] = queue.SimpleQueue()
        self._made: set[httpx.HTTPTransport] = set()

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                # With a proxy in the environment (read once, as the client reads it when it is made),
                # the client alone knows where each call goes. Else its transport is made as the client
                # would make its own (a client given one reads no proxy), and is the first of _post's.
                if urllib.request.getproxies():
                    self._client = httpx.Client()
                else:
                    first = httpx.HTTPTransport()
                    self._made.add(first)
                    self._idle.put(first)
                    self._client = httpx.Client(transport=first)
                    self._direct = True
                    if self._plain_http:
                        self._plain = PlainHttp(self._client)
            return self._client

    def _post(self, url: str, content: bytes, headers: dict[str, str], timeout: float) -> httpx.Response:
        """The upstream's answer, read whole; httpx's errors as the client raises them.

        Serve's own client (none given) sends a call straight through its transport, its request
        built by the client itself (`build_request`: the same URL, headers and timeout), so the
        connection pool, TLS settings and errors are the client's. What `Client.send` adds around the
        transport (auth and redirect handling, event hooks, a cookie jar carried from one answer to
        the next request) serve has no use for, and cost about a quarter of the call's CPU (0.64
        against 0.43-0.53 ms, measured alone). With a proxy in the environment, which the client
        routes through a transport of its own, the client sends it.

        Each call takes a transport no other call is using (`_free_transport`), made as the client's own
        was: one transport's connection pool keeps its bookkeeping under one lock, on which 32
        concurrent calls queued (a tenth of serve's CPU per miss at concurrency 32); as many transports
        as calls ever ran at once, each with its keep-alive connection, have nothing to share.

        A plain-http upstream (a local model server) is sent its calls over kept-alive sockets of
        serve's own (plain_http.py: the same request head, answer and errors as the client's, at a
        fraction of the CPU), unless `plain_http` was False; TLS stays with httpx.
        """
        client = self._http()
        if not self._direct:
            return client.post(url, content=content, headers=headers, timeout=timeout)
        plain = self._plain
        if plain is not None and url.startswith("http://"):
            return plain.post(url, content, headers, timeout)
        request = client.build_request("POST", url, content=content, headers=headers, timeout=timeout)
        transport = self._free_transport()
        try:
            response = transport.handle_request(request)
            try:
                response.read()
            finally:
                response.close()
        finally:
            if transport in self._made:
                self._idle.put(transport)
            else:  # closed meanwhile (close): never handed to another call
                transport.close()
        return response

    def _free_transport(self) -> httpx.HTTPTransport:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            transport = httpx.HTTPTransport()
            with self._lock:
                self._made.add(transport)
            return transport

    def complete(self, call: ModelCall) -> Completion:
        api = self._apis.get(call.api)
        endpoint = api.upstream if api is not None else None
        if api is None or endpoint is None:
            raise ValueError(f"no pass-through upstream for a {call.api} call")
        native = call.native
        connection = call.connection
        # A chat call has no native request: its keyed body is the client's less connection settings.
        body = dict(native.body) if native is not None else dict(call.wire)
        if call.upstream_model is not None:
            body["model"] = upstream_model(endpoint, call.upstream_model)
        # The client's bytes as they came, when they say what is sent (no model routed to another name).
        sent = native.sent if native is not None and body.get("model") == native.body.get("model") else None
        url = upstream_url(endpoint, connection.api_base)
        client_headers = native.headers if native is not None else {}
        passed_on = {name: value for name, value in client_headers.items() if name.lower() not in KEY_HEADERS}
        headers = {**passed_on, **upstream_headers(endpoint, connection.api_key)}
        secrets = tuple(value for value in (connection.api_key, headers.get(endpoint.auth_header)) if value)
        timeout = connection.timeout if connection.timeout is not None else DEFAULT_TIMEOUT_S
        started = time.perf_counter()
        try:
            response = self._post(url, sent if sent is not None else compact_json(body), headers, timeout)
        except httpx.TimeoutException:
            message = f"{call.model}: no answer from {url} within {timeout:g} s"
            raise ModelCallError(message, code="upstream_timeout") from None
        except httpx.HTTPError as exc:
            message = redact_text(f"{call.model}: {type(exc).__name__}: {_one_line(str(exc))}", secrets)
            raise ModelCallError(message, code="upstream_unreachable") from None
        latency = time.perf_counter() - started
        if response.status_code >= 400:
            message = redact_text(f"{call.model}: HTTP {response.status_code}: {_one_line(response.text)}", secrets)
            raise ModelCallError(
                message, status_code=response.status_code, retry_after=response.headers.get("retry-after")
            )
        try:
            # Read as a request body is (json_body.py): an answer the cassette could not hold (a lone
            # surrogate, NaN, bytes that are not UTF-8) is malformed, never recorded or answered.
            view = api.view(parse_json_body(response.content, "the upstream's answer"))
        except RequestRejected as exc:
            raise ModelCallError(
                f"{call.model}: malformed response: {exc.message}", code="upstream_malformed"
            ) from None
        except (ValueError, AttributeError, TypeError) as exc:
            raise ModelCallError(f"{call.model}: malformed response: {exc}", code="upstream_malformed") from None
        text = response.content.decode("utf-8")  # checked above: the bytes as sent, exactly
        content_type = kept_content_type(response.headers.get("content-type"))
        return Completion(body=view, source="live", latency_s=latency, raw_body=text, content_type=content_type)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
                self._direct = False
            if self._plain is not None:
                self._plain.close()
                self._plain = None
            for transport in self._made:
                transport.close()
            self._made.clear()
            self._idle = queue.SimpleQueue()


class ByWireApi:
    """The live transport for calls of every wire API: the others to `native` (the pass-through),
    chat to `native` too where its route is OpenAI-compatible (chat_route.py), else to `chat`."""

    def __init__(self, chat: Transport, native: Transport) -> None:
        self._chat = chat
        self._native = native

    def complete(self, call: ModelCall) -> Completion:
        passed = call.native is not None or passes_through(call)
        return (self._native if passed else self._chat).complete(call)

    def close(self) -> None:
        self._chat.close()
        self._native.close()
