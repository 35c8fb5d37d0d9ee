"""`tauproxy cassette import` for the wire APIs serve passes through to the provider: the openai SDK's
Responses API calls (tools, a `previous_response_id` chain, a stream) and the anthropic SDK's Messages
API calls (tools, a tool result, a stream), made under vcrpy itself against a stub upstream on
127.0.0.1, imported, then replayed strictly through serve with the upstream stopped: 0 misses, equal
parsed objects, and a non-streamed answer's bytes exactly the bytes vcrpy recorded."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from conftest import invoke_cli

from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import Pricing
from tauproxy.serve.app import ServeApp
from tauproxy.serve.completions import CompletionService
from tauproxy.serve.server import bind
from tauproxy.store.cassette import Cassette
from tauproxy.vcr_import.vcr_file import read_vcr_file
from tauproxy.wire_apis.messages_stream import stream_body
from tauproxy.wire_apis.responses_stream import response_events

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
vcr = pytest.importorskip("vcr")

from stub_messages import build_reply  # noqa: E402  (after the importorskip of what it needs)

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
ORDER_TOOL: dict[str, Any] = {
    "name": "find_order",
    "description": "Find an order by its number.",
    "input_schema": {"type": "object", "properties": {"number": {"type": "string"}}, "required": ["number"]},
}


def response_for(body: dict[str, Any]) -> dict[str, Any]:
    """The stub's Responses API answer: a function call when a tool is offered and no call was answered
    yet, else a text answer; ids from a hash of the request, so a chain can name them."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]
    given = body.get("input")
    answered = isinstance(given, list) and any(item.get("type") == "function_call_output" for item in given)
    if body.get("tools") and not answered:
        output: list[dict[str, Any]] = [
            {
                "type": "function_call",
                "id": f"fc_{digest}",
                "call_id": f"call_{digest}",
                "name": body["tools"][0]["name"],
                "arguments": '{"city": "Paris"}',
                "status": "completed",
            }
        ]
    else:
        text = f"Answer {digest[:6]} to {json.dumps(given)[:40]}"
        content = [{"type": "output_text", "text": text, "annotations": []}]
        output = [
            {"type": "message", "id": f"msg_{digest}", "status": "completed", "role": "assistant", "content": content}
        ]
    return {
        "id": f"resp_{digest}",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": body["model"],
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": body.get("tools") or [],
        "previous_response_id": body.get("previous_response_id"),
        "usage": {
            "input_tokens": 20,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 7,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 27,
        },
    }


def sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return "".join(f"event: {kind}\ndata: {json.dumps(data)}\n\n" for kind, data in events).encode()


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if self.path.rstrip("/") == "/v1/responses":
            answer = response_for({k: v for k, v in body.items() if k != "stream"})
            streamed = sse([(e["type"], e) for e in response_events(answer)])
        elif self.path.rstrip("/") == "/v1/messages":
            answer = build_reply({k: v for k, v in body.items() if k != "stream"})
            streamed = stream_body(answer)
        else:
            self.send_error(404)
            return
        data = streamed if body.get("stream") else json.dumps(answer, indent=1).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if body.get("stream") else "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def stub() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def responses_calls(client: Any) -> dict[str, Any]:
    got: dict[str, Any] = {}
    first = client.responses.create(model="gpt-stub", input="What is the weather in Paris?", tools=[WEATHER_TOOL])
    got["function call"] = first
    call = first.output[0]
    got["chained tool result"] = client.responses.create(
        model="gpt-stub",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": '{"sky": "clear"}'}],
        tools=[WEATHER_TOOL],
    )
    got["chained again"] = client.responses.create(
        model="gpt-stub", previous_response_id=got["chained tool result"].id, input="Thanks!"
    )
    with client.responses.stream(model="gpt-stub", input="Say hello.", instructions="Be brief.") as stream:
        got["stream"] = stream.get_final_response()
    return got


def messages_calls(client: Any) -> dict[str, Any]:
    got: dict[str, Any] = {}
    ask = [{"role": "user", "content": "Where is order 7?"}]
    first = client.messages.create(model="claude-stub", max_tokens=200, messages=ask, tools=[ORDER_TOOL])
    got["tool use"] = first
    use = next(block for block in first.content if block.type == "tool_use")
    after = [
        *ask,
        {"role": "assistant", "content": [block.model_dump() for block in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "shipped"}]},
    ]
    got["after the tool"] = client.messages.create(
        model="claude-stub", max_tokens=200, system="You are a shop's agent.", messages=after, tools=[ORDER_TOOL]
    )
    with client.messages.stream(
        model="claude-stub", max_tokens=200, messages=[{"role": "user", "content": "Hello?"}], tools=[ORDER_TOOL]
    ) as stream:
        got["stream"] = stream.get_final_message()
    return got


@dataclass
class Recorded:
    files: list[Path]
    responses: dict[str, Any]
    messages: dict[str, Any]


@pytest.fixture(scope="module")
def recorded(stub: str, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    root = tmp_path_factory.mktemp("vcrpy-apis")
    files = [root / "test_responses.yaml", root / "test_messages.json"]
    recorder = vcr.VCR(record_mode="once")
    with recorder.use_cassette(str(files[0])):
        responses = responses_calls(openai.OpenAI(base_url=f"{stub}/v1", api_key="sk-test", max_retries=0))
    with recorder.use_cassette(str(files[1]), serializer="json"):
        messages = messages_calls(anthropic.Anthropic(base_url=stub, api_key="sk-test", max_retries=0))
    return Recorded(files, responses, messages)


@contextmanager
def serving(cassette: Path) -> Iterator[tuple[str, ServeApp]]:
    """serve in strict replay over `cassette` on 127.0.0.1 (uvicorn in a thread), and its app."""
    service = CompletionService(RecordMode.REPLAY, Cassette.open(cassette, create=False), None, Pricing())
    app = ServeApp(service, auth_token=None, max_body_bytes=1 << 20, read_timeout_s=30, model_names=list, describe={})
    sock = bind("127.0.0.1", 0)
    config = uvicorn.Config(app.starlette(), log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", app
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def dumped(objects: dict[str, Any]) -> dict[str, Any]:
    return {name: value.model_dump() for name, value in objects.items()}


def test_responses_and_messages_recordings_import_and_replay_with_no_miss(recorded: Recorded, tmp_path: Path) -> None:
    cassette = tmp_path / "imported"
    imported = invoke_cli("cassette", "import", *map(str, recorded.files), "--into", str(cassette), "--json")
    report = json.loads(imported.stdout)
    assert (report["interactions"], report["imported"], report["left_out"]) == (7, 7, [])

    with serving(cassette) as (url, app):  # the stub upstream plays no part: nothing is live in replay
        responses = responses_calls(openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0))
        messages = messages_calls(anthropic.Anthropic(base_url=url, api_key="unused", max_retries=0))
    stats = app.service.stats.snapshot()
    assert (stats["misses"], stats["live"], stats["hits"]) == (0, 0, 7)
    assert dumped(responses) == dumped(recorded.responses)
    assert dumped(messages) == dumped(recorded.messages)


def test_a_non_streamed_answer_replays_as_the_bytes_vcrpy_recorded(recorded: Recorded, tmp_path: Path) -> None:
    cassette = tmp_path / "imported"
    invoke_cli("cassette", "import", *map(str, recorded.files), "--into", str(cassette))
    exchanges = [e for f in recorded.files for e in read_vcr_file(f) if not json.loads(e.request_body).get("stream")]
    assert len(exchanges) == 5
    with serving(cassette) as (url, _), httpx.Client(base_url=url) as client:
        replayed = [
            client.post(e.path, content=e.request_body, headers=without_connection(e.request_headers)).content
            for e in exchanges
        ]
    assert replayed == [e.response_body for e in exchanges]


def without_connection(headers: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k not in ("host", "content-length", "accept-encoding", "connection")}
