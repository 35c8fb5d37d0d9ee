"""A noisy stub model on 127.0.0.1 for harness tests: a customer-service agent and its user simulator.

It answers OpenAI chat completions and the Responses API (Inspect's default; its full input each
time, as Inspect sends it with `store: false`) as a sampling model would: the n-th arrival of a byte-identical
request (transport fields aside) gets draw n, so repeated requests get different answers, and the
whole run is deterministic per arrival count. The user simulator (a system prompt holding a
`<scenario>`) asks for help, thanks the agent and ends with "###STOP###" on its third turn; the
agent (any other request) calls a tool that takes no arguments once (`list_all_airports` in
τ²-bench's airline domain) and then answers in text. Every answer names its draw, so a test can tell
which draw a conversation got.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USER_TURNS = 3
STOP = "###STOP###"
TRANSPORT_FIELDS = frozenset({"stream", "stream_options"})


class NoisyUpstream:
    def __init__(self, tool_suffix: str = "list_all_airports") -> None:
        self.tool_suffix = tool_suffix
        self.arrivals: Counter[str] = Counter()
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, name="noisy-upstream", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> NoisyUpstream:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        canonical = json.dumps({k: v for k, v in body.items() if k not in TRANSPORT_FIELDS}, sort_keys=True)
        key = hashlib.sha256(canonical.encode()).hexdigest()
        with self._lock:
            draw = self.arrivals[key]
            self.arrivals[key] += 1
            self.requests.append(body)
        messages = body.get("messages") or []
        system = " ".join(str(m.get("content")) for m in messages if m.get("role") == "system")
        message = self._user(messages, draw) if "<scenario>" in system else self._agent(body, messages, draw)
        return {
            "id": f"chatcmpl-{key[:12]}-{draw}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body.get("model", "stub"),
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if "tool_calls" in message else "stop"}
            ],
            "usage": {
                "prompt_tokens": 10 * len(messages),
                "completion_tokens": 7,
                "total_tokens": 10 * len(messages) + 7,
            },
        }

    def answer_responses(self, body: dict[str, Any]) -> dict[str, Any]:
        """The Responses API: its input read as chat messages, the chat answer written as output items."""
        chat = {**body, "messages": chat_messages(body), "tools": chat_tools(body.get("tools"))}
        completion = self.answer({k: v for k, v in chat.items() if k not in ("input", "instructions")})
        message = completion["choices"][0]["message"]
        output: list[dict[str, Any]] = []
        for call in message.get("tool_calls") or []:
            function = call["function"]
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{call['id']}",
                    "call_id": call["id"],
                    "name": function["name"],
                    "arguments": function["arguments"],
                    "status": "completed",
                }
            )
        if message.get("content"):
            text = {"type": "output_text", "text": message["content"], "annotations": []}
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{completion['id']}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [text],
                }
            )
        return {
            "id": f"resp_{completion['id'].removeprefix('chatcmpl-')}",
            "object": "response",
            "created_at": 1_700_000_000,
            "status": "completed",
            "model": body.get("model", "stub"),
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [],
            "usage": {
                "input_tokens": completion["usage"]["prompt_tokens"],
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 7,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": completion["usage"]["total_tokens"],
            },
        }

    def _user(self, messages: list[dict[str, Any]], draw: int) -> dict[str, Any]:
        turn = sum(1 for m in messages if m.get("role") == "assistant")  # its own earlier turns
        if turn + 1 >= USER_TURNS:
            return {"role": "assistant", "content": f"Thank you, that is all (draw {draw}). {STOP}"}
        return {"role": "assistant", "content": f"Hello, I need help with my trip, turn {turn} (draw {draw})."}

    def _agent(self, body: dict[str, Any], messages: list[dict[str, Any]], draw: int) -> dict[str, Any]:
        tools = [t["function"]["name"] for t in body.get("tools") or [] if t.get("type") == "function"]
        tool = next((name for name in tools if name.endswith(self.tool_suffix)), None)
        called = any(m.get("role") == "tool" for m in messages)
        if tool is not None and not called:
            call = {
                "id": f"call_{draw}_{len(messages)}",
                "type": "function",
                "function": {"name": tool, "arguments": "{}"},
            }
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"role": "assistant", "content": f"I have looked into it for you (draw {draw})."}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.rstrip("/")
                if path.endswith("/chat/completions"):
                    self._send(200, upstream.answer(body))
                elif path.endswith("/responses"):
                    self._send(200, upstream.answer_responses(body))
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content or [] if isinstance(part, dict))


def chat_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A Responses API request's instructions and input items as chat messages."""
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else items or []:
        kind = item.get("type", "message")
        if kind == "message":
            role = "system" if item.get("role") == "developer" else item.get("role")
            messages.append({"role": role, "content": _text(item.get("content"))})
        elif kind == "function_call":
            call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]},
            }
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": _text(item.get("output"))})
    return messages


def chat_tools(tools: Any) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": tool["name"], "parameters": tool.get("parameters")}}
        for tool in tools or []
        if tool.get("type") == "function"
    ]
