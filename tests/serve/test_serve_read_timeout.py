"""serve's header-read timeout and its HTTP-level refusals, on a real socket: uvicorn with serve's
protocol runs in a thread of this process (no signal is involved, so no process is needed)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tauproxy.proxy.modes import RecordMode
from tauproxy.serve.config import ServeConfig
from tauproxy.serve.protocol import MAX_HEAD_BYTES
from tauproxy.serve.server import bind, build, make_server

READ_TIMEOUT_S = 0.3
WAIT_S = 30  # a bound for a hung test, never a measurement


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    cassette = tmp_path_factory.mktemp("read_timeout") / "cassette"
    config = ServeConfig(cassette=cassette, mode=RecordMode.AUTO, port=0, read_timeout_s=READ_TIMEOUT_S)
    lines: list[str] = []
    built = build(config, lines.append)
    sock = bind("127.0.0.1", 0)
    server = make_server(built, "ready", lines.append)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT_S
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=WAIT_S)
        sock.close()


def exchange(port: int, sent: bytes) -> bytes:
    """Send `sent`, then read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as conn:
        conn.sendall(sent)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
        return received


def split(response: bytes) -> tuple[str, dict[str, str], bytes]:
    head, _, body = response.partition(b"\r\n\r\n")
    status, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in header_lines)}
    return status, headers, body


def test_a_head_sent_too_slowly_gets_a_json_408_and_the_connection_closes(port: int) -> None:
    status, headers, body = split(exchange(port, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"))
    assert status.startswith("HTTP/1.1 408")
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"
    error = json.loads(body)["error"]
    assert "--read-timeout" in error["message"] and error["type"] == "timeout_error"


def test_a_connection_that_sends_nothing_is_closed(port: int) -> None:
    assert exchange(port, b"") == b""


def test_a_request_that_is_not_http_gets_a_json_400(port: int) -> None:
    status, headers, body = split(exchange(port, b"NOT HTTP AT ALL\r\n\r\n"))
    assert status.startswith("HTTP/1.1 400") and headers["content-type"] == "application/json"
    assert json.loads(body)["error"]["type"] == "invalid_request_error"


def test_a_head_longer_than_the_limit_gets_a_json_431_and_the_connection_closes(port: int) -> None:
    padding = b"X-Padding: " + b"p" * 1000 + b"\r\n"
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + padding * (MAX_HEAD_BYTES // len(padding) + 1)
    status, headers, body = split(exchange(port, head))
    assert status.startswith("HTTP/1.1 431") and headers["connection"] == "close"
    assert json.loads(body)["error"]["message"] == f"request headers exceed {MAX_HEAD_BYTES} bytes"


def test_a_body_longer_than_the_head_limit_is_read_as_a_body(port: int) -> None:
    body = b'{"model": "m", "pad": "' + b"p" * (4 * MAX_HEAD_BYTES)  # not JSON: the app's 400 says so
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
    )
    status, _, answer = split(exchange(port, head + body))
    assert status.startswith("HTTP/1.1 400")
    assert "not valid JSON" in json.loads(answer)["error"]["message"]


def test_a_prompt_request_is_answered_and_the_connection_kept(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as conn:
        for _ in range(2):  # two requests on one connection: the head timer does not cut keep-alive
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            received = b""
            while not received.endswith(b'{"ok":true}'):
                chunk = conn.recv(65536)
                assert chunk, received
                received += chunk
            assert received.startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_a_read_timeout_that_is_not_a_positive_number_is_one_line_and_exit_2(value: str) -> None:
    from conftest import invoke_cli

    result = invoke_cli("serve", "--record-mode", "off", "--read-timeout", value, check=False)
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: --read-timeout must be a positive number of seconds, got {float(value)}"
