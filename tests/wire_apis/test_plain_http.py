"""Serve's own HTTP/1.1 client for plain-http upstreams (wire_apis/plain_http.py): for every shape of
answer a server may give, what it returns is what httpx's client returns; connections are kept,
checked before reuse, and never shared by two calls at once. Against a scripted server on 127.0.0.1."""

from __future__ import annotations

import gzip
import socket
import socketserver
import threading
import time
from collections.abc import Iterator
from typing import ClassVar

import httpx
import pytest

from tauproxy.wire_apis.plain_http import PlainHttp

BODY = b'{"id": "resp_1", "output": []}'


def answer_for(path: str) -> bytes:
    """The raw answer the scripted server sends for a request to `path`."""
    json_head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    if path == "/length":
        return json_head + b"Content-Length: %d\r\n\r\n%s" % (len(BODY), BODY)
    if path == "/chunked":
        chunks = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(part), part) for part in (BODY[:7], BODY[7:]))
        return json_head + b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\nX-Trailer: 1\r\n\r\n"
    if path == "/gzip":
        packed = gzip.compress(BODY)
        return json_head + b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s" % (len(packed), packed)
    if path == "/close":
        return json_head + b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY)
    if path == "/http10":  # no length: the body ends where the connection does
        return b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY
    if path == "/continue":
        return b"HTTP/1.1 100 Continue\r\n\r\n" + answer_for("/length")
    if path == "/limit":
        body = b'{"error": {"message": "slow down"}}'
        return b"HTTP/1.1 429 Too Many\r\nRetry-After: 7\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    if path == "/empty":
        return b"HTTP/1.1 204 No Content\r\n\r\n"
    if path == "/garbage":
        return b"SMTP ready\r\n\r\n"
    if path == "/half-head":  # the connection closes after these bytes
        return b"HTTP/1.1 200 OK\r\nContent-Type: appl"
    if path == "/half-chunk":  # a chunk's size line never ends before the close
        return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1f"
    raise AssertionError(path)


class Scripted(socketserver.BaseRequestHandler):
    connections = 0
    heads: ClassVar[list[bytes]] = []

    def handle(self) -> None:
        Scripted.connections += 1
        sock: socket.socket = self.request
        buffer = b""
        while True:
            while b"\r\n\r\n" not in buffer:
                chunk = sock.recv(65536)
                if not chunk:
                    return
                buffer += chunk
            head, buffer = buffer.split(b"\r\n\r\n", 1)
            Scripted.heads.append(head)
            length = next(
                int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
            )
            while len(buffer) < length:
                buffer += sock.recv(65536)
            buffer = buffer[length:]
            path = head.split(b" ")[1].decode()
            if path == "/slow":
                time.sleep(1.0)
                path = "/length"
            if path == "/hangup":
                return  # closes without an answer
            sock.sendall(answer_for("/length" if path == "/idle-close" else path))
            if path in ("/close", "/http10", "/idle-close", "/half-head", "/half-chunk"):
                return


@pytest.fixture
def server() -> Iterator[str]:
    socketserver.ThreadingTCPServer.allow_reuse_address = True
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Scripted) as tcp:
        tcp.daemon_threads = True
        thread = threading.Thread(target=tcp.serve_forever, daemon=True)
        thread.start()
        Scripted.connections = 0
        Scripted.heads = []
        try:
            yield f"http://127.0.0.1:{tcp.server_address[1]}"
        finally:
            tcp.shutdown()


HEADERS = {"content-type": "application/json", "Authorization": "Bearer sk-test"}


def ours(client: PlainHttp, url: str, timeout: float = 10.0) -> tuple[object, ...]:
    return shape(client.post(url, b'{"input": "hi"}', HEADERS, timeout))


def httpx_s(url: str) -> tuple[object, ...]:
    with httpx.Client() as client:
        return shape(client.post(url, content=b'{"input": "hi"}', headers=HEADERS))


def shape(response: httpx.Response) -> tuple[object, ...]:
    headers = response.headers
    return (response.status_code, response.content, headers.get("content-type"), headers.get("retry-after"))


@pytest.mark.parametrize("path", ["/length", "/chunked", "/gzip", "/close", "/http10", "/continue", "/limit", "/empty"])
def test_every_answer_is_what_httpx_gives(server: str, path: str) -> None:
    plain = PlainHttp(httpx.Client())
    try:
        assert ours(plain, server + path) == httpx_s(server + path)
        assert Scripted.heads[0] == Scripted.heads[1]  # the very request head httpx's client sends
    finally:
        plain.close()


def test_a_connection_is_kept_unless_the_answer_ends_it(server: str) -> None:
    plain = PlainHttp(httpx.Client())
    for path in ("/length", "/chunked", "/gzip", "/continue", "/length"):
        ours(plain, server + path)
    assert Scripted.connections == 1
    ours(plain, server + "/close")  # answered with Connection: close
    ours(plain, server + "/http10")  # no length: read to the close
    ours(plain, server + "/length")
    assert Scripted.connections == 3
    plain.close()


def test_a_connection_the_upstream_closed_while_idle_is_not_used(server: str) -> None:
    plain = PlainHttp(httpx.Client())
    ours(plain, server + "/length")
    ours(plain, server + "/idle-close")  # kept (HTTP/1.1, no Connection: close), then closed by the server
    time.sleep(0.1)
    assert ours(plain, server + "/length")[0] == 200
    assert Scripted.connections == 2
    plain.close()


def test_failures_are_httpxs_errors(server: str) -> None:
    plain = PlainHttp(httpx.Client())
    with pytest.raises(httpx.ReadTimeout):
        ours(plain, server + "/slow", timeout=0.2)
    with pytest.raises(httpx.RemoteProtocolError, match="Server disconnected without sending a response"):
        ours(plain, server + "/hangup")
    with pytest.raises(httpx.RemoteProtocolError, match="status line"):
        ours(plain, server + "/garbage")
    with pytest.raises(httpx.RemoteProtocolError, match="without sending a complete answer head"):
        ours(plain, server + "/half-head")
    with pytest.raises(httpx.RemoteProtocolError, match="without sending complete message body"):
        ours(plain, server + "/half-chunk")
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{unused.getsockname()[1]}/length"
    with pytest.raises(httpx.ConnectError) as ours_error:
        ours(plain, closed)
    with pytest.raises(httpx.ConnectError) as httpx_error:
        httpx_s(closed)
    assert str(ours_error.value) == str(httpx_error.value)
    assert ours(plain, server + "/length")[0] == 200  # a failed call leaves no broken connection behind
    plain.close()


def test_concurrent_calls_each_take_a_connection_of_their_own_and_close_frees_them(server: str) -> None:
    plain = PlainHttp(httpx.Client())
    answers: list[tuple[object, ...]] = []
    threads = [threading.Thread(target=lambda: answers.append(ours(plain, server + "/slow"))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [answer[1] for answer in answers] == [BODY] * 4
    assert Scripted.connections == 4  # no two calls at once on one connection
    ours(plain, server + "/length")
    assert Scripted.connections == 4  # a free one is taken again, not a fifth made
    plain.close()
    assert ours(plain, server + "/length")[1] == BODY  # after close: a new one
    assert Scripted.connections == 5
    plain.close()
