"""An OpenAI-compatible upstream on 127.0.0.1 that fails the way real ones do, on demand.

With `fault = None` it answers like the stub (`stub_upstream.build_completion`); otherwise every
chat-completion request meets the fault. `GET /v1/models` always answers (the preflight's probe).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from stub_upstream import build_completion

FAULTS = ("429", "500", "503", "hang", "garbage", "html", "no_choices", "empty_choice", "truncated")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _send(self, status: int, body: bytes, media: str = "application/json", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(200, b'{"object": "list", "data": []}')

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw)
        with self.server.lock:
            self.server.requests.append(body)
            fault = self.server.fault
        error = json.dumps({"error": {"message": f"injected {fault}", "type": "server_error"}}).encode()
        if fault == "echo_headers":  # some gateways quote the request back in their error
            quoted = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "x-team-token")}
            echoed = json.dumps({"error": {"message": f"bad request with headers {quoted}"}}).encode()
            self._send(400, echoed)
        elif fault in ("429", "500", "503"):
            extra = {"Retry_After": "0"} if fault == "429" else {}
            self._send(int(fault), error, **extra)
        elif fault == "hang":
            time.sleep(self.server.hang_s)
            self._send(200, json.dumps(build_completion(body)).encode())
        elif fault == "garbage":
            self._send(200, b"\x00\xffnot json at all")
        elif fault == "html":
            self._send(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
        elif fault == "no_choices":
            self._send(200, json.dumps({**build_completion(body), "choices": []}).encode())
        elif fault == "empty_choice":
            self._send(200, json.dumps({**build_completion(body), "choices": [{}]}).encode())
        elif fault == "truncated":
            full = json.dumps(build_completion(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(full)))
            self.end_headers()
            self.wfile.write(full[: len(full) // 2])
            self.close_connection = True
        else:
            self._send(200, json.dumps(build_completion(body)).encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fault: str | None = None
    hang_s = 3.0

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # a client hanging up on a fault is expected; its traceback is noise

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []


class FaultUpstream:
    def __init__(self) -> None:
        self._server = _Server()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> FaultUpstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def set_fault(self, fault: str | None) -> None:
        with self._server.lock:
            self._server.fault = fault

    @property
    def request_count(self) -> int:
        with self._server.lock:
            return len(self._server.requests)
