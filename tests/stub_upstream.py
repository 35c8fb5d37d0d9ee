"""A deterministic, stdlib-only OpenAI-compatible upstream for tests and benchmarks.

It is a real HTTP server, so the code under test exercises its genuine transport (httpx, the
openai SDK, litellm) rather than a mock. Every response body is a pure function of the request
body, unless ``noise`` is switched on, which is what lets cassette record/replay tests tell a
replayed answer from a fresh one. Two more switches, off by default, shape answers the way real
models do: ``loose_json`` writes tool-call arguments as non-canonical JSON (indented, keys in
reverse order), so a test can check that a proxy hands them on byte for byte; ``user_tools`` lets
the user simulator call one of its own tools first (a read-only one where the name says so, as in
τ²-bench's telecom phone) and then say what it saw, so conversations that start alike part ways
at a tool result of their own.

Run standalone with ``python tests/stub_upstream.py --port N [--host 127.0.0.1]``; it prints
``READY http://HOST:PORT/v1`` once listening.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import queue
import re
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

__all__ = ["StubConfigError", "StubUpstream", "build_completion", "free_port", "start_stub_process"]

CREATED = 1_700_000_000
_FIXED_DATE = "Tue, 14 Nov 2023 22:13:20 GMT"  # CREATED as an HTTP date
DEFAULT_EMAIL = "ada@example.com"
USER_OPENING = "Hi, I need help with my account. My email is ada@example.com."
USER_CONFIRM = "Yes, please go ahead."
USER_DONE = "Thanks, that is all. ###STOP###"
AGENT_FALLBACK = "How can I help you further?"

# Transport-only keys: leaving them out of the hash gives a streamed and a non-streamed call the
# same ids, so the assembled stream can equal the non-streamed message exactly.
_TRANSPORT_KEYS = frozenset({"stream", "stream_options"})
_EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_CONFIG_KEYS = frozenset({"fail_status", "fail_count", "delay_s", "noise", "loose_json", "user_tools"})
_ERROR_KINDS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("invalid_request_error", "unknown_url"),
    405: ("invalid_request_error", "method_not_allowed"),
    408: ("timeout_error", "timeout"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
    500: ("server_error", "internal_error"),
    502: ("server_error", "bad_gateway"),
    503: ("server_error", "service_unavailable"),
    504: ("server_error", "gateway_timeout"),
}


class StubConfigError(ValueError):
    """An admin config the stub cannot honour (unknown key or wrong type)."""


@dataclass
class _Config:
    fail_status: int = 0
    fail_count: int = 0
    delay_s: float = 0.0
    noise: bool = False
    loose_json: bool = False
    user_tools: bool = False


@dataclass
class _State:
    """Everything the handler threads share; one lock guards it all because contention is trivial."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    config: _Config = field(default_factory=_Config)
    request_count: int = 0
    by_model: dict[str, int] = field(default_factory=dict)
    noise_counter: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    request_headers: list[dict[str, str]] = field(default_factory=list)
    responses: list[dict[str, Any]] = field(default_factory=list)

    def configure(self, config: dict[str, Any]) -> None:
        update = _validate_config(config)
        with self.lock:
            for key, value in update.items():
                setattr(self.config, key, value)
            # A bare fail_status means "fail the next request", not "fail never".
            if "fail_status" in update and "fail_count" not in update:
                self.config.fail_count = 1 if update["fail_status"] else 0

    def reset(self) -> None:
        with self.lock:
            self.config = _Config()
            self.request_count = 0
            self.by_model.clear()
            self.noise_counter = 0
            self.requests.clear()
            self.request_headers.clear()
            self.responses.clear()

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {"requests": self.request_count, "by_model": dict(self.by_model)}


def _validate_config(config: dict[str, Any]) -> dict[str, Any]:
    unknown = set(config) - _CONFIG_KEYS
    if unknown:
        raise StubConfigError(f"unknown config keys: {sorted(unknown)}; allowed: {sorted(_CONFIG_KEYS)}")
    out: dict[str, Any] = {}
    for key in ("fail_status", "fail_count"):
        if key in config:
            value = config[key]
            # bool is an int subclass; `True` as a status is surely a mistake.
            if value is None:
                value = 0
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise StubConfigError(f"{key} must be a non-negative integer, got {value!r}")
            out[key] = value
    if "fail_status" in out and out["fail_status"] and not 400 <= out["fail_status"] <= 599:
        raise StubConfigError(f"fail_status must be an HTTP error status (400-599), got {out['fail_status']}")
    if "delay_s" in config:
        delay = config["delay_s"]
        if delay is None:
            delay = 0.0
        if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
            raise StubConfigError(f"delay_s must be a non-negative number, got {delay!r}")
        out["delay_s"] = float(delay)
    for key in ("noise", "loose_json", "user_tools"):
        if key in config:
            if not isinstance(config[key], bool):
                raise StubConfigError(f"{key} must be a boolean, got {config[key]!r}")
            out[key] = config[key]
    return out


# ---------------------------------------------------------------------------------------------
# Deterministic answers
# ---------------------------------------------------------------------------------------------


def _canonical(body: dict[str, Any]) -> str:
    kept = {k: v for k, v in body.items() if k not in _TRANSPORT_KEYS}
    return json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _text_of(content: Any) -> str:
    """Flattens string or content-part-list message content to its text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    return ""


def _tool_call_arguments(message: dict[str, Any]) -> list[str]:
    calls = message.get("tool_calls") or []
    out: list[str] = []
    for call in calls:
        if isinstance(call, dict):
            args = (call.get("function") or {}).get("arguments")
            if isinstance(args, str):
                out.append(args)
    return out


def _prompt_tokens(body: dict[str, Any]) -> int:
    chars = 0
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            chars += len(_text_of(message.get("content")))
            chars += sum(len(a) for a in _tool_call_arguments(message))
    tools = body.get("tools")
    if tools:
        chars += len(json.dumps(tools, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    return max(1, chars // 4)


def _route(model: str) -> str:
    # litellm strips "openai/" itself, but other clients or proxies may forward it verbatim.
    name = model.rsplit("/", 1)[-1].lower()
    if "judge" in name:
        return "judge"
    if "user" in name:
        return "user"
    return "agent"


def _judge_content(messages: list[dict[str, Any]], noise: int | None) -> str:
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    assertions: list[str] = []
    inside = False
    for raw in _text_of(last_user.get("content") if last_user else None).splitlines():
        line = raw.strip()
        if line == "<assertions>":
            inside = True
        elif line == "</assertions>":
            inside = False
        elif inside and line.startswith("- "):
            assertions.append(line[2:].strip())
    # Noise goes into the justification because appending to the content would break the JSON.
    justification = "stub" if noise is None else f"stub #{noise}"
    results = [{"assertion": a, "met": True, "justification": justification} for a in assertions]
    return json.dumps({"results": results})


def _user_content(messages: list[dict[str, Any]], user_tools: bool = False) -> str:
    # With user_tools its own tool calls are not turns, and its first words say what its tool showed.
    own_turns = sum(1 for m in messages if m.get("role") == "assistant" and not (user_tools and m.get("tool_calls")))
    if own_turns == 0:
        last = messages[-1] if messages else {}
        if user_tools and last.get("role") == "tool":
            return f"{USER_OPENING} My phone shows: {_text_of(last.get('content'))[:80]}"
        return USER_OPENING
    if own_turns <= 2:
        return USER_CONFIRM
    return USER_DONE


def _pick_tool(tools: list[dict[str, Any]], tool_choice: Any) -> dict[str, Any]:
    functions = [t.get("function") or {} for t in tools if isinstance(t, dict)]
    if isinstance(tool_choice, dict):
        forced = (tool_choice.get("function") or {}).get("name")
        for fn in functions:
            if fn.get("name") == forced:
                return fn
    for fn in functions:
        name = str(fn.get("name", ""))
        if "find_user" in name or "get_user" in name:
            return fn
    return functions[0]


def _first_email(messages: list[dict[str, Any]]) -> str:
    # System prompts often quote support addresses; the customer's address is in the dialogue.
    for message in messages:
        if message.get("role") == "system":
            continue
        texts = [_text_of(message.get("content")), *_tool_call_arguments(message)]
        for text in texts:
            found = _EMAIL_RE.search(text)
            if found:
                return found.group(0)
    return DEFAULT_EMAIL


def _fill_param(name: str, schema: dict[str, Any], email: str) -> Any:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    enum = schema.get("enum")
    if kind is None and enum:
        return enum[0]
    if kind == "string" or kind is None:
        if "email" in name.lower():
            return email
        if enum:
            return enum[0]
        return "x"
    defaults: dict[str, Any] = {
        "integer": 1,
        "number": 1.0,
        "boolean": True,
        "array": [],
        "object": {},
        "null": None,
    }
    return defaults.get(kind, "x")


def _user_tool_call(body: dict[str, Any], digest: str) -> dict[str, Any] | None:
    """The user simulator's one call of its own tools (``user_tools``): before its first words, once."""
    messages = body["messages"]
    tools = body.get("tools")
    if not tools or body.get("tool_choice") == "none" or any(m.get("tool_calls") for m in messages):
        return None
    if not messages or messages[-1].get("role") != "user":
        return None
    functions = [t.get("function") or {} for t in tools if isinstance(t, dict)]
    free = [fn for fn in functions if not (fn.get("parameters") or {}).get("required")]
    if not free:
        return None
    fn = next((fn for fn in free if "status" in str(fn.get("name", ""))), free[0])
    return {"id": f"call_{digest[:8]}", "type": "function", "function": {"name": fn.get("name", ""), "arguments": "{}"}}


def _arguments_json(args: dict[str, Any], loose: bool) -> str:
    if loose:  # as some models write them: indented, keys in an order of their own, a trailing newline
        return json.dumps(dict(reversed(list(args.items()))), indent=2, ensure_ascii=False) + "\n"
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _tool_call(body: dict[str, Any], digest: str, loose_json: bool = False) -> dict[str, Any]:
    messages = body["messages"]
    fn = _pick_tool(body["tools"], body.get("tool_choice"))
    params = fn.get("parameters") or {}
    properties = params.get("properties") or {}
    email = _first_email(messages)
    args = {name: _fill_param(name, properties.get(name) or {}, email) for name in params.get("required") or []}
    return {
        "id": f"call_{digest[:8]}",
        "type": "function",
        "function": {
            "name": fn.get("name", ""),
            "arguments": _arguments_json(args, loose_json),
        },
    }


def _agent_message(body: dict[str, Any], digest: str, loose_json: bool = False) -> dict[str, Any]:
    messages = body["messages"]
    last = messages[-1] if messages else {}
    role = last.get("role")
    tools = body.get("tools")
    if tools and body.get("tool_choice") != "none" and role == "user":
        return {"role": "assistant", "content": None, "tool_calls": [_tool_call(body, digest, loose_json)]}
    if role == "tool":
        seen = _text_of(last.get("content"))[:60]
        return {"role": "assistant", "content": f"Thanks. I have checked: {seen} Is there anything else?"}
    return {"role": "assistant", "content": AGENT_FALLBACK}


def build_completion(
    body: dict[str, Any], noise: int | None = None, *, loose_json: bool = False, user_tools: bool = False
) -> dict[str, Any]:
    """The non-streamed ``chat.completion`` for ``body``; ``noise`` is the counter when noise is on,
    ``loose_json`` and ``user_tools`` the switches of the same names.

    Exposed so tests can predict the stub's answer without a round trip.
    """
    seed = _canonical(body) if noise is None else f"{_canonical(body)}#{noise}"
    digest = hashlib.sha256(seed.encode("utf-8")).hexdigest()
    messages = [m for m in body["messages"] if isinstance(m, dict)]
    route = _route(body["model"])
    if route == "judge":
        message: dict[str, Any] = {"role": "assistant", "content": _judge_content(messages, noise)}
    elif route == "user":
        own_call = _user_tool_call({**body, "messages": messages}, digest) if user_tools else None
        if own_call is not None:
            message = {"role": "assistant", "content": None, "tool_calls": [own_call]}
        else:
            message = {"role": "assistant", "content": _user_content(messages, user_tools)}
    else:
        message = _agent_message({**body, "messages": messages}, digest, loose_json)
    if noise is not None and route != "judge" and message["content"] is not None:
        message["content"] = f"{message['content']} #{noise}"

    calls = message.get("tool_calls") or []
    produced = message["content"] if message["content"] is not None else ""
    produced += "".join(c["function"]["arguments"] for c in calls)
    prompt_tokens = _prompt_tokens(body)
    completion_tokens = max(1, len(produced) // 4)
    return {
        "id": f"chatcmpl-{digest[:12]}",
        "object": "chat.completion",
        "created": CREATED,
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _pieces(text: str, count: int = 3) -> list[str]:
    """Splits text into up to ``count`` non-empty slices, so clients must really concatenate deltas."""
    if not text:
        return []
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def stream_chunks(completion: dict[str, Any], include_usage: bool) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` sequence whose assembly equals ``completion``'s message."""
    choice = completion["choices"][0]
    message = choice["message"]
    head = {k: completion[k] for k in ("id", "created", "model")}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {
            **head,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }

    # OpenAI opens text answers with content "" and tool-call answers with content null; copying
    # that keeps an assembler's content None for tool calls, matching the non-streamed message.
    yield chunk({"role": "assistant", "content": "" if message["content"] is not None else None})
    for piece in _pieces(message["content"] or ""):
        yield chunk({"content": piece})
    for index, call in enumerate(message.get("tool_calls") or []):
        opening = {"name": call["function"]["name"], "arguments": ""}
        yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function", "function": opening}]})
        for piece in _pieces(call["function"]["arguments"]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, choice["finish_reason"])
    if include_usage:
        yield {**head, "object": "chat.completion.chunk", "choices": [], "usage": completion["usage"]}


# ---------------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------------


class _BadRequest(Exception):
    pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up (timeout tests, killed streams) are expected, not worth a traceback.
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "tauproxy-stub/1.0"
    # Headers and body go out in separate writes; with Nagle on, every keep-alive response after
    # the first waits ~40 ms for a delayed ACK, which would swamp benchmark timings.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # No Python version or wall clock in headers either, so recorded responses never churn.
    def version_string(self) -> str:
        return self.server_version

    def date_time_string(self, timestamp: float | None = None) -> str:
        return _FIXED_DATE

    # -- plumbing ---------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    # Skip trailers up to the blank line that ends the message.
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error_json(self, status: int, message: str) -> None:
        kind, code = _ERROR_KINDS.get(status, ("server_error" if status >= 500 else "invalid_request_error", ""))
        headers = {"Retry-After": "0"} if status == 429 else None
        error = {"error": {"message": message, "type": kind, "code": code or str(status)}}
        self._send_json(status, error, headers)

    def _send_stream(self, completion: dict[str, Any], include_usage: bool) -> None:
        # Chunked transfer, one HTTP chunk per SSE event, so a client sees events arrive one by one.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = [f"data: {json.dumps(c)}\n\n" for c in stream_chunks(completion, include_usage)]
        events.append("data: [DONE]\n\n")
        for event in events:
            data = event.encode("utf-8")
            self.wfile.write(f"{len(data):X}\r\n".encode("ascii") + data + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

    def _path(self) -> str:
        return urlsplit(self.path).path.rstrip("/") or "/"

    # -- routes -----------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = self._path()
        if path == "/v1/models":
            self._send_json(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
        elif path == "/_admin/stats":
            self._send_json(200, self.server.state.stats())
        elif path in ("/v1/chat/completions", "/_admin/reset", "/_admin/config"):
            self._send_error_json(405, f"GET is not allowed on {path}")
        else:
            self._send_error_json(404, f"unknown path {path}")

    def do_POST(self) -> None:
        # Drain the body before routing: leftover bytes would be parsed as the next keep-alive request.
        raw = self._read_body()
        path = self._path()
        try:
            if path == "/v1/chat/completions":
                self._chat(raw)
            elif path == "/_admin/reset":
                self.server.state.reset()
                self._send_json(200, {"ok": True})
            elif path == "/_admin/config":
                self._admin_config(raw)
            else:
                self._send_error_json(404, f"unknown path {path}")
        except (ConnectionError, TimeoutError):
            raise
        except Exception as exc:
            # A stub bug should surface as a loud, recognisable 500, not as a dropped connection.
            traceback.print_exc()
            self._send_error_json(500, f"stub internal error: {exc!r}")

    def _admin_config(self, raw: bytes) -> None:
        try:
            config = json.loads(raw or b"{}")
            if not isinstance(config, dict):
                raise StubConfigError("config must be a JSON object")
            self.server.state.configure(config)
        except (ValueError, StubConfigError) as exc:
            self._send_error_json(400, str(exc))
            return
        self._send_json(200, {"ok": True})

    def _chat(self, raw: bytes) -> None:
        state = self.server.state
        try:
            body = _parse_chat_body(raw)
        except _BadRequest as exc:
            with state.lock:
                state.request_count += 1
            self._send_error_json(400, str(exc))
            return

        with state.lock:
            state.request_count += 1
            state.by_model[body["model"]] = state.by_model.get(body["model"], 0) + 1
            state.requests.append(body)
            state.request_headers.append({k.lower(): v for k, v in self.headers.items()})
            config = _Config(**vars(state.config))
            failing = config.fail_count > 0 and config.fail_status > 0
            if failing:
                state.config.fail_count -= 1
            noise: int | None = None
            if config.noise and not failing:
                state.noise_counter += 1
                noise = state.noise_counter

        if config.delay_s:
            time.sleep(config.delay_s)
        if failing:
            self._send_error_json(config.fail_status, f"stub injected failure ({config.fail_status})")
            return

        completion = build_completion(body, noise, loose_json=config.loose_json, user_tools=config.user_tools)
        with state.lock:
            state.responses.append(completion)
        if body.get("stream") is True:
            options = body.get("stream_options") or {}
            self._send_stream(completion, bool(isinstance(options, dict) and options.get("include_usage")))
        else:
            self._send_json(200, completion)


def _parse_chat_body(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _BadRequest(f"request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise _BadRequest("request body must be a JSON object")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise _BadRequest("you must provide a model parameter")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _BadRequest("'messages' must be a non-empty array")
    tools = body.get("tools")
    if tools is not None:
        valid = isinstance(tools, list) and all(
            isinstance(t, dict) and isinstance((t.get("function") or {}).get("name"), str) for t in tools
        )
        if not valid:
            raise _BadRequest("'tools' must be an array of {type: function, function: {name, ...}}")
    return body


def _make_server(host: str, port: int) -> _Server:
    server = _Server((host, port), _Handler)
    server.state = _State()
    return server


# ---------------------------------------------------------------------------------------------
# Python API
# ---------------------------------------------------------------------------------------------


class StubUpstream:
    """The stub serving from a background thread; the port is bound in ``__init__`` so ``url`` is
    known before ``start()``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = _make_server(host, port)
        self.host = host
        self.port: int = self._server.server_address[1]
        self.url: str = f"http://{host}:{self.port}/v1"
        self._thread: threading.Thread | None = None
        self._stopped = False

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self._server.state.requests

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """Headers of each parsed request (lower-cased names), parallel to ``requests``."""
        return self._server.state.request_headers

    @property
    def responses(self) -> list[dict[str, Any]]:
        """Every chat.completion it answered with (not streamed as chunks), in the order it built them."""
        return self._server.state.responses

    @property
    def request_count(self) -> int:
        """Every chat-completion request received, including injected failures and malformed bodies."""
        with self._server.state.lock:
            return self._server.state.request_count

    def stats(self) -> dict[str, Any]:
        return self._server.state.stats()

    def configure(self, **config: Any) -> None:
        self._server.state.configure(config)

    def reset(self) -> None:
        self._server.state.reset()

    def start(self) -> StubUpstream:
        if self._stopped:
            raise RuntimeError("a stopped StubUpstream cannot be restarted; create a new one")
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"stub-upstream-{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def __enter__(self) -> StubUpstream:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def free_port() -> int:
    """A port free right now; racy by nature, so prefer port 0 where the API allows it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_stub_process(port: int | None = None, timeout_s: float = 15.0) -> tuple[subprocess.Popen[str], str]:
    """Launches the stub as a child process and waits for its READY line.

    With ``port=None`` the child binds port 0 and reports the real port, which avoids the race of
    picking a free port first. The caller owns the process and must kill it;
    its stdout is drained and closed by a helper thread.
    """
    script = Path(__file__).resolve()
    cmd = [sys.executable, str(script), "--port", str(port if port is not None else 0)]
    # stderr is inherited: a pipe nobody drains could fill up and freeze the server.
    proc: subprocess.Popen[str] = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, bufsize=1)
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        # Closed here, after EOF, because closing it from another thread mid-read raises in this one.
        proc.stdout.close()
        lines.put("")

    threading.Thread(target=pump, name="stub-process-stdout", daemon=True).start()
    deadline = time.monotonic() + timeout_s
    while True:
        remaining = deadline - time.monotonic()
        try:
            line = lines.get(timeout=max(0.0, remaining)) if remaining > 0 else ""
        except queue.Empty:
            line = ""
        if line.startswith("READY "):
            return proc, line.split(" ", 1)[1].strip()
        if line == "":
            proc.kill()
            proc.wait(timeout=5)
            raise RuntimeError(f"stub process did not report READY (exit code {proc.returncode}); see stderr")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Deterministic OpenAI-compatible stub upstream.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (reported on READY)")
    args = parser.parse_args(argv)
    server = _make_server(args.host, args.port)
    print(f"READY http://{args.host}:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
