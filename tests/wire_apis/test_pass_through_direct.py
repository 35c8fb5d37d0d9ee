"""Serve's own pass-through client sends a call straight through its transport (upstream._post): the
upstream sees the request the client would send, every failure is the error the client's path gives,
and a proxy in the environment is still used. Against a stub on 127.0.0.1, beside the client's path."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx
import pytest

from tauproxy.data_model.call import ConnectionSettings, ModelCall
from tauproxy.data_model.key import identify_unscoped
from tauproxy.errors import ModelCallError
from tauproxy.wire_apis.registry import BY_NAME, wire_api
from tauproxy.wire_apis.upstream import PassThroughTransport

RESPONSES = wire_api("responses")
ANSWER = {"id": "resp_1", "object": "response", "model": "gpt-x", "output": [], "usage": None}


class Upstream(BaseHTTPRequestHandler):
    """/ok answers, /limit is rate limited, /bad is not JSON, /slow answers too late; every request's
    path and headers are kept."""

    seen: ClassVar[list[tuple[str, dict[str, str]]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        Upstream.seen.append((self.path, {name.lower(): value for name, value in self.headers.items()}))
        if "/slow/" in self.path:
            time.sleep(1.0)
        status, body, extra = 200, json.dumps(ANSWER, indent=2).encode(), {}
        if "/limit/" in self.path:
            status, body, extra = 429, b'{"error": {"message": "slow down"}}', {"Retry-After": "7"}
        elif "/bad/" in self.path:
            body = b"not json"
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", "Content-Length": str(len(body)), **extra}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Upstream.seen = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def call_to(api_base: str, timeout: float = 10.0) -> ModelCall:
    request = RESPONSES.request({"model": "gpt-x", "input": "hi"})
    identity, index = identify_unscoped(request.keyed)
    connection = ConnectionSettings(api_base=api_base, api_key="sk-secret-value", timeout=timeout)
    return ModelCall(request.keyed, identity, "agent", index, connection=connection, native=request.native)


def outcome(transport: PassThroughTransport, call: ModelCall) -> tuple[object, ...]:
    try:
        completion = transport.complete(call)
    except ModelCallError as exc:
        return ("error", str(exc), exc.status_code, exc.code, exc.retry_after)
    finally:
        transport.close()
    return ("answer", completion.raw_body, completion.content_type, completion.body)


@pytest.mark.parametrize("plain_http", [True, False], ids=["own-http", "httpx-transport"])
@pytest.mark.parametrize("route", ["ok", "limit", "bad", "slow", "closed"])
def test_each_outcome_is_the_clients_own(upstream: str, route: str, plain_http: bool) -> None:
    if route == "closed":
        with socket.socket() as unused:
            unused.bind(("127.0.0.1", 0))
            base = f"http://127.0.0.1:{unused.getsockname()[1]}/v1"  # nobody listens there once closed
    else:
        base = f"{upstream}/{route}/v1"
    call = call_to(base, timeout=0.3 if route == "slow" else 10.0)
    direct = outcome(PassThroughTransport(BY_NAME, plain_http=plain_http), call)
    through_client = outcome(PassThroughTransport(BY_NAME, httpx.Client()), call)
    assert direct == through_client
    expected = {"ok": "answer", "limit": 429, "bad": "upstream_malformed", "slow": "upstream_timeout"}
    expected["closed"] = "upstream_unreachable"
    assert expected[route] in direct
    assert "sk-secret-value" not in str(direct)
    if route == "ok":
        assert direct[1] == json.dumps(ANSWER, indent=2)  # the upstream's bytes, as sent
        assert Upstream.seen[0][1] == Upstream.seen[1][1]  # the very headers the client sends
        assert Upstream.seen[0][1]["authorization"] == "Bearer sk-secret-value"


def test_a_proxy_in_the_environment_is_used(upstream: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", upstream)  # the stub answers as the proxy would
    answer = outcome(PassThroughTransport(BY_NAME), call_to("http://upstream.invalid/ok/v1"))
    assert answer[0] == "answer", answer
    assert Upstream.seen[0][0] == "http://upstream.invalid/ok/v1/responses"  # asked of the proxy


def test_a_plain_http_upstream_is_sent_its_calls_without_an_httpx_transport(upstream: str) -> None:
    transport = PassThroughTransport(BY_NAME)
    transport._free_transport = None  # type: ignore[assignment,method-assign]  # taking one would fail
    assert json.loads(transport.complete(call_to(f"{upstream}/ok/v1")).raw_body or "") == ANSWER
    transport.close()


def test_concurrent_calls_each_take_a_transport_of_their_own_and_close_frees_them(upstream: str) -> None:
    # The transports carry what is not plain http (TLS); the stub is plain http, so it is sent through
    # them only with serve's own plain-http client off (test_plain_http.py holds the same for that one).
    transport = PassThroughTransport(BY_NAME, plain_http=False)
    used: list[httpx.HTTPTransport] = []
    taken = transport._free_transport

    def recording() -> httpx.HTTPTransport:
        one = taken()
        used.append(one)
        return one

    transport._free_transport = recording  # type: ignore[method-assign]
    call = call_to(f"{upstream}/slow/v1")  # each answer takes a second: all four are in flight at once
    answers: list[object] = []
    threads = [
        threading.Thread(target=lambda: answers.append(json.loads(transport.complete(call).raw_body or "")))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [ANSWER] * 4
    assert len(set(map(id, used))) == 4  # no two calls at once on one transport
    transport.complete(call_to(f"{upstream}/ok/v1"))
    assert used[-1] in used[:4]  # a free one is taken again, not a fifth made
    transport.close()
    assert (
        json.loads(transport.complete(call_to(f"{upstream}/ok/v1")).raw_body or "") == ANSWER
    )  # after close: new ones
    assert used[-1] not in used[:4]
    transport.close()
