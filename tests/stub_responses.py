"""A deterministic, stdlib-only upstream that speaks the OpenAI Responses API, for tests.

A real HTTP server on 127.0.0.1, so serve's pass-through and the openai SDK run over a genuine
transport. `POST /v1/responses` answers a Response object that is a pure function of the request
body (and of the response a `previous_response_id` names), unless `noise` is on, which adds a
counter so a replayed answer can be told from a fresh one:

- the request's tools hold a function and its last user text holds an email address, with no
  function_call_output yet: a function_call of the first tool with {"email": ...}; its arguments
  are written as a model might (indented, with a trailing space), to check they arrive byte for byte
- a function_call_output in the input: a message "found: <output>"
- otherwise a message "echo: <last user text>", plus " (after <previous text>)" when chained

A `previous_response_id` this stub never answered is a 400, as the real API answers it. `stream`
is refused (400): serve must ask non-streamed. Every request's body and headers are kept.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

CREATED = 1_700_000_000
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")


@dataclass
class Seen:
    body: dict[str, Any]
    headers: dict[str, str]


@dataclass
class _State:
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: list[Seen] = field(default_factory=list)
    answered: dict[str, dict[str, Any]] = field(default_factory=dict)
    noise: bool = False
    counter: int = 0


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _items(body: dict[str, Any]) -> list[dict[str, Any]]:
    value = body.get("input")
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return [item for item in value or [] if isinstance(item, dict)]


def _usage(body: dict[str, Any], output_tokens: int) -> dict[str, Any]:
    input_tokens = max(1, len(json.dumps(body)) // 4)
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


def build_response(body: dict[str, Any], previous: dict[str, Any] | None, salt: str = "") -> dict[str, Any]:
    digest = hashlib.sha256((json.dumps(body, sort_keys=True) + salt).encode()).hexdigest()
    items = _items(body)
    outputs = [item for item in items if item.get("type") == "function_call_output"]
    user_texts = [_texts(item.get("content")) for item in items if item.get("role") == "user"]
    last_user = user_texts[-1] if user_texts else ""
    functions = [tool for tool in body.get("tools") or [] if tool.get("type") == "function"]
    email = _EMAIL.search(last_user)
    output: list[dict[str, Any]]
    if functions and email and not outputs:
        arguments = '{\n  "email": "' + email.group(0) + '" \n}'
        output = [
            {
                "type": "function_call",
                "id": f"fc_{digest[:16]}",
                "call_id": f"call_{digest[16:28]}",
                "name": functions[0]["name"],
                "arguments": arguments,
                "status": "completed",
            }
        ]
    else:
        if outputs:
            text = f"found: {outputs[-1].get('output')}"
        else:
            text = f"echo: {last_user}"
            if previous is not None:
                text += f" (after {output_text(previous)})"
        if salt:
            text += f" #{salt}"
        output = [
            {
                "type": "message",
                "id": f"msg_{digest[:16]}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ]
    text_out = "".join(_texts(item.get("content")) for item in output if item["type"] == "message")
    return {
        "id": f"resp_{digest[:24]}",
        "object": "response",
        "created_at": CREATED,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": body["model"],
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": body.get("temperature", 1.0),
        "text": {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": _usage(body, max(1, len(text_out) // 4 + len(output))),
        "user": None,
        "metadata": {},
        "stub_note": "a field only this stub sends: replays keep it too",
    }


def output_text(response: dict[str, Any]) -> str:
    return "".join(_texts(item.get("content")) for item in response["output"] if item.get("type") == "message")


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, indent=1).encode()  # not compact: replays must keep these bytes
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        with state.lock:
            state.requests.append(Seen(body, {k.lower(): v for k, v in self.headers.items()}))
        if self.path.rstrip("/") not in ("/v1/responses", "/responses"):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
            return
        if body.get("stream"):
            self._send(400, {"error": {"message": "this stub answers only non-streamed", "type": "invalid_request"}})
            return
        previous_id = body.get("previous_response_id")
        with state.lock:
            previous = state.answered.get(previous_id) if previous_id else None
            state.counter += 1
            salt = str(state.counter) if state.noise else ""
        if previous_id and previous is None:
            message = f"Previous response with id '{previous_id}' not found."
            self._send(400, {"error": {"message": message, "type": "invalid_request_error", "code": None}})
            return
        response = build_response(body, previous, salt)
        with state.lock:
            state.answered[response["id"]] = response
        self._send(200, response)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = _State()


class ResponsesStub:
    """The stub on a free port of 127.0.0.1; `url` ends in /v1, as an api_base does."""

    def __init__(self, noise: bool = False) -> None:
        self._server = _Server()
        self._server.state.noise = noise
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def requests(self) -> list[Seen]:
        return self._server.state.requests

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ResponsesStub:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
