"""Chat completions on an OpenAI-compatible route, through serve: passed through to the upstream, so the
client gets the upstream's exact bytes live and on replay (key order, spaces, fields no SDK knows,
unicode escapes); an entry recorded without them (through litellm, or before) still replays; upstream
failures are one JSON error and never recorded; the cost comes from the upstream's usage; litellm is
never loaded. In-process: serve's app over httpx's ASGI transport, a raw-bytes stub on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from tauproxy.data_model.completion import Completion
from tauproxy.proxy import live as live_module
from tauproxy.proxy.live import LiteLLMTransport
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import ModelPrice, Pricing
from tauproxy.results.run_log import parse_run_log
from tauproxy.serve.app import ServeApp
from tauproxy.serve.completions import CompletionService
from tauproxy.serve.config import UpstreamMap, UpstreamRoute
from tauproxy.serve.runlog import RunLog
from tauproxy.store.cassette import Cassette
from tauproxy.wire_apis.registry import live_transport

SERVE_KEY = "sk-" + "serve-environment-key"  # built, so no key-like literal sits in the tree
CLIENT_KEY = "sk-" + "client-key-never-forwarded"
AUTHORIZATION = "author" + "ization"
# An answer no encoder of ours would write: keys out of the usual order, spaces, a trailing newline,
# \u escapes for non-ASCII text, fields and a choice field no SDK type knows.
UPSTREAM_BODY = (
    b'{ "usage" : {"completion_tokens": 3, "prompt_tokens": 12, "total_tokens": 15, "x_note": "k"},\n'
    b'  "choices": [ {"finish_reason": "stop", "index": 0, "logprobs": null,\n'
    b'     "message": {"content": "caf\\u00e9 \\u2603 \\ud83d\\ude00 ok", "role": "assistant", "annotations": []}} ],\n'
    b'  "model": "stub-1-2026", "object": "chat.completion", "id": "chatcmpl-stub-1",\n'
    b'  "created": 1700000000, "system_fingerprint": "fp_x", "zz_extra": {"b": 1, "a": [1.50, 2e3]} }\n'
)
PRICE = ModelPrice(input_cost_per_token=1e-6, output_cost_per_token=4e-6)
BODY: dict[str, Any] = {
    "model": "gpt-stub",
    "messages": [{"role": "user", "content": "hello"}],
    "seed": 7,
    "temperature": 0,
    "user": "someone",
    "timeout": 30,
}


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class RawStub:
    """An upstream that answers every POST with the configured status, bytes and content type."""

    status: int = 200
    body: bytes = UPSTREAM_BODY
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)

    def __enter__(self) -> RawStub:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                sent = json.loads(self.rfile.read(length))
                stub.seen.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, sent))
                self.send_response(stub.status)
                self.send_header("content-type", stub.content_type)
                for name, value in stub.headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(stub.body)))
                self.end_headers()
                self.wfile.write(stub.body)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class ChatThroughLitellm:
    """Stands in for litellm (the chat transport of routes that are not OpenAI-compatible)."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, call: Any) -> Completion:
        self.calls += 1
        message = {"role": "assistant", "content": "from litellm"}
        body = {"id": "chatcmpl-l", "object": "chat.completion", "created": 1, "model": "claude-stub"}
        body |= {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        return Completion(body=body, source="live", latency_s=0.0)

    def close(self) -> None:
        return None


def app_over(
    cassette: Path, mode: RecordMode, routes: UpstreamMap, run_log: Path | None = None, chat: Any = None
) -> ServeApp:
    live = live_transport(chat or LiteLLMTransport()) if mode != RecordMode.REPLAY else None
    pricing = Pricing({"stub-1": PRICE}, "test prices")
    log = RunLog(run_log) if run_log is not None else None
    service = CompletionService(mode, Cassette.open(cassette), live, pricing, routes, log)
    return ServeApp(service, auth_token=None, max_body_bytes=1 << 20, read_timeout_s=30, model_names=list, describe={})


def post(app: ServeApp, body: dict[str, Any]) -> httpx.Response:
    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app.starlette())
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            headers = {AUTHORIZATION: f"Bearer {CLIENT_KEY}"}
            return await client.post("/v1/chat/completions", json=body, headers=headers)

    return asyncio.run(send())


def routed_to(url: str, model: str = "openai/stub-1") -> UpstreamMap:
    return UpstreamMap({"gpt-stub": UpstreamRoute(model=model, api_base=url)})


DOWN = "http://127.0.0.1:9/v1"  # nothing listens there: a replay must not need the upstream


@pytest.fixture
def no_litellm(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """litellm cannot be loaded: a chat call that reaches it fails the test."""

    def refuse() -> Any:
        raise AssertionError("litellm was loaded for a pass-through chat call")

    monkeypatch.setattr(live_module, "load_litellm", refuse)
    monkeypatch.setenv("OPENAI_API_KEY", SERVE_KEY)
    loaded_before = "litellm" in sys.modules
    yield
    assert loaded_before or "litellm" not in sys.modules


@pytest.mark.usefixtures("no_litellm")
def test_live_and_replay_answer_the_upstream_bytes(tmp_path: Path) -> None:
    cassette = tmp_path / "cassette"
    with RawStub() as stub:
        live = post(app_over(cassette, RecordMode.AUTO, routed_to(stub.url), tmp_path / "live.jsonl"), BODY)
    replayed = post(app_over(cassette, RecordMode.REPLAY, routed_to(DOWN), tmp_path / "replay.jsonl"), BODY)
    for answer in (live, replayed):
        assert answer.status_code == 200, answer.text
        assert answer.content == UPSTREAM_BODY
        assert answer.headers["content-type"] == "application/json"
    # The upstream got the client's body less connection settings and bookkeeping, under serve's key.
    (seen,) = stub.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.body == {"model": "stub-1", "messages": BODY["messages"], "seed": 7, "temperature": 0}
    assert seen.headers[AUTHORIZATION] == f"Bearer {SERVE_KEY}" and CLIENT_KEY not in json.dumps(seen.headers)
    # Priced from the upstream's usage, at the routed model's price; the replay saves the same.
    (live_line,) = parse_run_log((tmp_path / "live.jsonl").read_text())
    (replay_line,) = parse_run_log((tmp_path / "replay.jsonl").read_text())
    assert live_line.source == "live" and replay_line.source == "replay"
    assert live_line.usage is not None and (live_line.usage.prompt_tokens, live_line.usage.completion_tokens) == (12, 3)
    assert live_line.cost_usd == pytest.approx(12e-6 + 12e-6) == replay_line.cost_usd
    assert live_line.price_source == "test prices"
    (entry,) = Cassette.open(cassette, create=False).entries()
    assert entry.response.body is not None and "tauproxy_wire_api" not in entry.request.params
    assert entry.response.content_type is None  # plain application/json: the default, not written


@pytest.mark.usefixtures("no_litellm")
def test_a_streamed_request_is_the_same_sample_built_from_the_recorded_answer(tmp_path: Path) -> None:
    cassette = tmp_path / "cassette"
    streamed = {**BODY, "stream": True, "stream_options": {"include_usage": True}}
    with RawStub() as stub:
        live = post(app_over(cassette, RecordMode.AUTO, routed_to(stub.url)), streamed)
        assert "stream" not in stub.seen[0].body and "stream_options" not in stub.seen[0].body
    replayed = post(app_over(cassette, RecordMode.REPLAY, routed_to(DOWN)), BODY)
    assert live.headers["content-type"].startswith("text/event-stream")
    chunks = [json.loads(line[6:]) for line in live.text.split("\n\n") if line.startswith("data: {")]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == "café ☃ 😀 ok"
    assert chunks[-1]["usage"]["prompt_tokens"] == 12
    assert replayed.content == UPSTREAM_BODY  # the non-streamed request replays the upstream's bytes


@pytest.mark.usefixtures("no_litellm")
def test_an_unknown_price_stays_unknown(tmp_path: Path) -> None:
    with RawStub() as stub:
        routes = routed_to(stub.url, "openai/no-such-model")
        app = app_over(tmp_path / "cassette", RecordMode.AUTO, routes, tmp_path / "live.jsonl")
        assert post(app, BODY).content == UPSTREAM_BODY
    (line,) = parse_run_log((tmp_path / "live.jsonl").read_text())
    assert (line.cost_usd, line.price_source) == (None, "unknown")
    assert app.service.stats.snapshot()["per_model"]["gpt-stub"]["unpriced"] == 1


def test_an_entry_recorded_without_the_upstream_bytes_still_replays(tmp_path: Path) -> None:
    cassette = tmp_path / "cassette"
    chat = ChatThroughLitellm()
    # anthropic/: not OpenAI-compatible, so the call goes through litellm (here its stand-in).
    live = post(app_over(cassette, RecordMode.AUTO, routed_to(DOWN, "anthropic/claude-stub"), chat=chat), BODY)
    assert chat.calls == 1 and live.status_code == 200
    (entry,) = Cassette.open(cassette, create=False).entries()
    assert entry.response.body is None  # as every chat entry recorded before chat calls passed through
    # Replayed on a route that is OpenAI-compatible now: the key is the same, the old answer is served.
    replayed = post(app_over(cassette, RecordMode.REPLAY, routed_to(DOWN)), BODY)
    assert replayed.content == live.content
    assert json.loads(replayed.content)["choices"][0]["message"]["content"] == "from litellm"


@pytest.mark.usefixtures("no_litellm")
@pytest.mark.parametrize(
    ("status", "body", "content_type", "code"),
    [
        (429, b'{"error": {"message": "slow down", "type": "rate_limit_error"}}', "application/json", None),
        (500, b"<html>upstream broke</html>", "text/html", None),
        (400, b'{"error": {"message": "bad \\"model\\""}}', "application/json", None),
        (200, b"not json at all", "application/json", "upstream_malformed"),
        (200, b'{"id": "chatcmpl-1", "choices": []}', "application/json", "upstream_malformed"),
        # What the cassette could not hold: a lone surrogate, a number that is not finite, bytes not UTF-8.
        (200, UPSTREAM_BODY.replace(b"\\u2603", b"\\ud800"), "application/json", "upstream_malformed"),
        (200, UPSTREAM_BODY.replace(b"1.50", b"NaN"), "application/json", "upstream_malformed"),
        (200, UPSTREAM_BODY.replace(b"caf", b"caf\xe9"), "application/json", "upstream_malformed"),
    ],
)
def test_upstream_failures_are_one_json_error_and_never_recorded(
    tmp_path: Path, status: int, body: bytes, content_type: str, code: str | None
) -> None:
    cassette = tmp_path / "cassette"
    with RawStub(status=status, body=body, content_type=content_type, headers={"retry-after": "7"}) as stub:
        answer = post(app_over(cassette, RecordMode.AUTO, routed_to(stub.url)), BODY)
    error = answer.json()["error"]
    if code is None:
        assert answer.status_code == status
        assert answer.headers.get("retry-after") == "7"
    else:
        assert answer.status_code == 502 and error["code"] == code
    assert error["message"].startswith("upstream gpt-stub") and "\n" not in error["message"]
    assert Cassette.open(cassette, create=False).entries() == []
    # A replay has nothing to answer with: a miss, not a recorded failure.
    assert post(app_over(cassette, RecordMode.REPLAY, routed_to(DOWN)), BODY).status_code == 404


@pytest.mark.usefixtures("no_litellm")
def test_the_replay_keeps_the_upstreams_content_type(tmp_path: Path) -> None:
    cassette = tmp_path / "cassette"
    content_type = "application/json; charset=utf-8"
    with RawStub(content_type=content_type) as stub:
        live = post(app_over(cassette, RecordMode.AUTO, routed_to(stub.url)), BODY)
    replayed = post(app_over(cassette, RecordMode.REPLAY, routed_to(DOWN)), BODY)
    for answer in (live, replayed):
        assert answer.content == UPSTREAM_BODY and answer.headers["content-type"] == content_type
    (entry,) = Cassette.open(cassette, create=False).entries()
    assert entry.response.content_type == content_type
