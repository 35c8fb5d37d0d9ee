"""A deterministic, stdlib-only upstream that speaks Anthropic's Messages API, for tests.

It is a real HTTP server on 127.0.0.1, so `tauproxy serve`'s pass-through meets a genuine socket.
It answers `POST /v1/messages` non-streamed (a proxy that records asks for whole answers; a request
with `stream: true` is refused), and like the real API it refuses a request without the
`anthropic-version` header or, when a key is set, without the right `x-api-key`, with Anthropic's
error shape. The answer is a pure function of the request body unless `noise` is on, which is how
a test tells a replayed answer from a fresh one:

- the last user turn holds a tool_result: a text answer that quotes the result (`end_turn`)
- tools are offered and no tool was called yet: a tool_use of the first tool (`tool_use`), with
  its `input` written with extra spaces, so a proxy that re-serialises the body is caught
- otherwise: a text answer echoing the last user text

`fail_status` answers every request with that status (Anthropic's error shape) until cleared.
The body is written with `indent=1`: byte-identity tests compare exactly these bytes.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["StubMessages", "build_reply"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _last_user_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    return []


def build_reply(body: dict[str, Any], salt: str = "") -> dict[str, Any]:
    """The answer to `body` (module docstring); `salt` is mixed into the text and ids (noise)."""
    digest = hashlib.sha256((json.dumps(body, sort_keys=True) + salt).encode()).hexdigest()
    blocks = _last_user_blocks(body)
    results = [b for b in blocks if b.get("type") == "tool_result"]
    tools = body.get("tools") or []
    content: list[dict[str, Any]]
    if results:
        result = results[-1].get("content")
        text = result if isinstance(result, str) else "".join(b.get("text", "") for b in result or [])
        content, stop = [{"type": "text", "text": f"The tool said: {text}{salt}"}], "end_turn"
    elif tools:
        said = "".join(b.get("text", "") for b in blocks)
        content = [
            {"type": "text", "text": f"Let me check{salt}."},
            {
                "type": "tool_use",
                "id": f"toolu_{digest[:12]}",
                "name": tools[0]["name"],
                "input": {"query": said, "limit": 3},
            },
        ]
        stop = "tool_use"
    else:
        said = "".join(b.get("text", "") for b in blocks)
        content, stop = [{"type": "text", "text": f"You said: {said}{salt}"}], "end_turn"
    words = sum(len(json.dumps(m).split()) for m in body.get("messages") or [])
    return {
        "id": f"msg_{digest[:16]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10 + words,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 4,
            "output_tokens": 5 + len(json.dumps(content).split()),
        },
    }


@dataclass
class _State:
    api_key: str | None = None
    noise: bool = False
    fail_status: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    _counter: itertools.count[int] = field(default_factory=itertools.count)

    def salt(self) -> str:
        return f" #{next(self._counter)}" if self.noise else ""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _answer(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, indent=1).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        kind = _ERROR_TYPES.get(status, "api_error")
        self._answer(status, {"type": "error", "error": {"type": kind, "message": message}})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        state = self.server.state
        if self.path.rstrip("/") != "/v1/messages":
            self._error(404, f"no route {self.path}")
            return
        body = json.loads(raw)
        with state.lock:
            state.requests.append(body)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            fail, salt = state.fail_status, state.salt()
        if not self.headers.get("anthropic-version"):
            self._error(400, "anthropic-version: header is required")
        elif state.api_key is not None and self.headers.get("x-api-key") != state.api_key:
            self._error(401, "invalid x-api-key")
        elif fail is not None:
            self._error(fail, f"injected failure {fail}")
        elif body.get("stream"):
            self._error(400, "this stub answers whole messages only")
        else:
            self._answer(200, build_reply(body, salt))


class StubMessages:
    """The stub serving from a background thread; `base_url` is known before `start()`."""

    def __init__(self, api_key: str | None = None, noise: bool = False) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = _State(api_key=api_key, noise=noise)
        self.port: int = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._thread: threading.Thread | None = None

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self._server.state.requests

    @property
    def headers(self) -> list[dict[str, str]]:
        """Each request's headers, lower-cased names, parallel to `requests`."""
        return self._server.state.headers

    def fail_with(self, status: int | None) -> None:
        self._server.state.fail_status = status

    def start(self) -> StubMessages:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> StubMessages:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
