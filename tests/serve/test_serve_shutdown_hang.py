"""SIGTERM while an upstream call hangs: the server exits 0 without waiting for the upstream (whose
route allows it 10 minutes), the waiting client gets a JSON 503 saying the server is shutting down,
and nothing is logged as a traceback. A process, because the promise is about a signal."""

from __future__ import annotations

import signal
import socket
import threading
from pathlib import Path

import httpx
import pytest
from serve_process import start_serve, write_upstream_map

pytestmark = pytest.mark.slow

HUNG_ROUTE_TIMEOUT_S = 600  # far beyond any wait below: exiting at all proves the upstream was not waited for
WAIT_S = 120  # a bound for a hung test, never a measurement


class BlackHole:
    """An upstream that accepts connections and never answers."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.reached = threading.Event()
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            self.reached.set()

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def test_sigterm_with_a_hung_upstream_exits_and_answers_503(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    hole = BlackHole()
    routes = {"gpt-hang": {"model": "openai/hang", "api_base": hole.url, "timeout": HUNG_ROUTE_TIMEOUT_S}}
    upstream_map = write_upstream_map(tmp_path / "u.json", routes)
    server = start_serve("--cassette", str(tmp_path / "cassette"), "--upstream-map", str(upstream_map))
    answers: list[httpx.Response | BaseException] = []

    def call() -> None:
        body = {"model": "gpt-hang", "messages": [{"role": "user", "content": "anyone there?"}]}
        try:
            answers.append(httpx.post(server.url + "/chat/completions", json=body, timeout=WAIT_S))
        except BaseException as exc:  # reported by the assertions below
            answers.append(exc)

    client = threading.Thread(target=call)
    try:
        client.start()
        assert hole.reached.wait(WAIT_S)  # the call is in the upstream's hands
        server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(timeout=WAIT_S)
        client.join(timeout=WAIT_S)
    finally:
        server.stop()
        hole.close()
    assert code == 0, server.stdout_text()
    (answer,) = answers
    assert isinstance(answer, httpx.Response), answer
    assert answer.status_code == 503 and answer.headers["content-type"] == "application/json", answer.text
    error = answer.json()["error"]
    assert error["code"] == "tauproxy_shutting_down" and "shutting down" in error["message"]
    assert "stopped after 1 requests" in server.stdout_text()
    logged = capfd.readouterr().err
    assert "Traceback" not in logged and "CancelledError" not in logged, logged
