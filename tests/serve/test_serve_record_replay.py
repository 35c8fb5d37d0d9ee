"""Record through `tauproxy serve` with real clients, then replay with the upstream gone: same answers.

Clients: the official openai SDK (sync, async, streaming) and plain httpx (JSON and raw SSE).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_process import CLIENT_KEY, ServeProcess, cassette_calls, start_serve, write_upstream_map

pytestmark = pytest.mark.slow

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "find_user_by_email",
            "description": "Find a user id by email.",
            "parameters": {
                "type": "object",
                "properties": {"email": {"type": "string"}},
                "required": ["email"],
            },
        },
    }
]


def ask_tool(text: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You are a support agent."}, {"role": "user", "content": text}]


def after_tool(result: str) -> list[dict[str, Any]]:
    call = {"id": "call_1", "type": "function", "function": {"name": "find_user_by_email", "arguments": "{}"}}
    return [
        {"role": "user", "content": "Find me please."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": result},
    ]


@dataclass(frozen=True)
class Assembled:
    """What a client ends up with from a stream: the parts that must equal the plain answer."""

    content: str | None
    tool_calls: list[tuple[str, str, str]]  # id, name, arguments
    finish_reason: str | None
    usage: dict[str, Any] | None


def assemble(chunks: list[dict[str, Any]]) -> Assembled:
    content: str | None = None
    calls: dict[int, dict[str, str]] = {}
    finish: str | None = None
    usage = None
    for chunk in chunks:
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content") is not None:
                content = (content or "") + delta["content"]
            for part in delta.get("tool_calls") or []:
                slot = calls.setdefault(part["index"], {"id": "", "name": "", "arguments": ""})
                slot["id"] = part.get("id") or slot["id"]
                function = part.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    ordered = [(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items())]
    return Assembled(content or None, ordered, finish, _usage(usage))


def _usage(usage: dict[str, Any] | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {k: usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")}


def of_message(body: dict[str, Any]) -> Assembled:
    choice = body["choices"][0]
    message = choice["message"]
    calls = [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
    return Assembled(message.get("content") or None, calls, choice["finish_reason"], _usage(body.get("usage")))


def sse_chunks(text: str) -> list[dict[str, Any]]:
    events = [line.removeprefix("data: ") for line in text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    return [json.loads(event) for event in events[:-1]]


def run_clients(server: ServeProcess) -> dict[str, Any]:
    """The same script of calls for both phases; each entry is what one client got back."""
    import openai  # here, not at the top: the SDK's import is seconds of every test run's collection

    sync = openai.OpenAI(base_url=server.url, api_key=CLIENT_KEY, max_retries=0)
    got: dict[str, Any] = {}
    got["sync_tool"] = sync.chat.completions.create(
        model="gpt-stub", messages=ask_tool("I am ada@example.com"), tools=TOOLS, seed=7, temperature=0
    ).model_dump(mode="json")
    got["sync_text"] = sync.chat.completions.create(
        model="gpt-stub", messages=after_tool('{"user_id": "ada_1"}'), tools=TOOLS, seed=7
    ).model_dump(mode="json")

    async def run_async() -> dict[str, Any]:
        client = openai.AsyncOpenAI(base_url=server.url, api_key=CLIENT_KEY, max_retries=0)
        answers = await asyncio.gather(
            client.chat.completions.create(model="gpt-stub", messages=ask_tool("async one"), seed=1),
            client.chat.completions.create(model="gpt-stub", messages=ask_tool("async two"), seed=1),
        )
        await client.close()
        return {"one": answers[0].model_dump(mode="json"), "two": answers[1].model_dump(mode="json")}

    got["async"] = asyncio.run(run_async())
    stream = sync.chat.completions.create(
        model="gpt-stub",
        messages=ask_tool("stream me, I am bob@example.com"),
        tools=TOOLS,
        seed=3,
        stream=True,
        stream_options={"include_usage": True},
    )
    got["sdk_stream"] = assemble([chunk.model_dump(mode="json") for chunk in stream])
    with sync.chat.completions.stream(model="gpt-stub", messages=after_tool("stream text"), seed=3) as helper:
        final = helper.get_final_completion()
    got["sdk_stream_helper"] = of_message(final.model_dump(mode="json"))

    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {CLIENT_KEY}"}) as http:
        plain = http.post("/chat/completions", json={"model": "gpt-stub", "messages": ask_tool("plain httpx")})
        assert plain.status_code == 200, plain.text
        got["httpx_json"] = plain.json()
        got["httpx_json_bytes"] = plain.content.decode()  # a replay's bytes are the live answer's
        body = {"model": "gpt-stub", "messages": after_tool("httpx sse"), "stream": True}
        streamed = http.post("/chat/completions", json=body)
        assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
        got["httpx_sse"] = assemble(sse_chunks(streamed.text))
    sync.close()
    return got


CALLS_PER_SCRIPT = 8


@dataclass
class Phases:
    recorded: dict[str, Any]
    replayed: dict[str, Any]
    record_stats: dict[str, Any]
    replay_stats: dict[str, Any]
    upstream_requests_while_recording: int
    cassette: Path
    logs: tuple[Path, Path]
    stream_as_plain: dict[str, Any]


@pytest.fixture(scope="module")
def phases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phases]:
    from stub_upstream import StubUpstream

    tmp = tmp_path_factory.mktemp("serve_rr")
    cassette = tmp / "cassette"
    record_log, replay_log = tmp / "record.jsonl", tmp / "replay.jsonl"
    stub = StubUpstream().start()
    routes = write_upstream_map(tmp / "upstream.json", {"gpt-stub": {"model": "openai/stub", "api_base": stub.url}})
    server = start_serve(
        "--cassette",
        str(cassette),
        "--record-mode",
        "auto",
        "--upstream-map",
        str(routes),
        "--run-log",
        str(record_log),
    )
    try:
        recorded = run_clients(server)
        record_stats = httpx.get(server.root + "/stats").json()
    finally:
        assert server.stop() == 0, server.stdout_text()
        upstream_requests = stub.request_count
        stub.stop()  # from here on nothing can answer live: a replay that went out would fail
    server = start_serve(
        "--cassette",
        str(cassette),
        "--record-mode",
        "replay",
        "--upstream-map",
        str(routes),
        "--run-log",
        str(replay_log),
    )
    try:
        replayed = run_clients(server)
        replay_stats = httpx.get(server.root + "/stats").json()
    finally:
        assert server.stop() == 0, server.stdout_text()
    # A fresh server counts occurrences from zero, so the streamed sample can be asked for plainly.
    server = start_serve("--cassette", str(cassette), "--record-mode", "replay")
    try:
        body = {"model": "gpt-stub", "messages": ask_tool("stream me, I am bob@example.com"), "tools": TOOLS, "seed": 3}
        stream_as_plain = httpx.post(server.url + "/chat/completions", json=body).json()
    finally:
        server.stop()
    yield Phases(
        recorded,
        replayed,
        record_stats,
        replay_stats,
        upstream_requests,
        cassette,
        (record_log, replay_log),
        stream_as_plain,
    )


def test_every_call_went_upstream_once_and_was_recorded(phases: Phases) -> None:
    assert phases.upstream_requests_while_recording == CALLS_PER_SCRIPT  # no retries, no extra calls
    assert cassette_calls(phases.cassette) == CALLS_PER_SCRIPT
    assert phases.record_stats["misses"] == CALLS_PER_SCRIPT
    assert phases.record_stats["live"] == CALLS_PER_SCRIPT
    assert phases.record_stats["hits"] == 0


def test_replay_answers_are_identical_without_upstream(phases: Phases) -> None:
    assert phases.replayed == phases.recorded
    assert phases.replay_stats["hits"] == CALLS_PER_SCRIPT
    assert phases.replay_stats["misses"] == 0 and phases.replay_stats["live"] == 0
    assert phases.replay_stats["per_model"]["gpt-stub"]["hits"] == CALLS_PER_SCRIPT


def test_tool_call_ids_and_usage_survive(phases: Phases) -> None:
    message = phases.recorded["sync_tool"]["choices"][0]["message"]
    (call,) = message["tool_calls"]
    assert call["id"].startswith("call_") and call["function"]["name"] == "find_user_by_email"
    assert json.loads(call["function"]["arguments"]) == {"email": "ada@example.com"}
    assert phases.recorded["sync_tool"]["usage"]["total_tokens"] > 0
    streamed = phases.recorded["sdk_stream"]
    assert streamed.tool_calls and streamed.tool_calls[0][0].startswith("call_")
    assert streamed.usage is not None and streamed.usage["total_tokens"] > 0
    assert phases.recorded["async"]["one"] != phases.recorded["async"]["two"]


def test_a_streamed_call_is_recorded_assembled(phases: Phases) -> None:
    # Recorded from a streaming request; replayed to a plain one: the same sample, the same message.
    assert of_message(phases.stream_as_plain) == phases.recorded["sdk_stream"]
    assert phases.recorded["httpx_sse"].content and phases.recorded["httpx_sse"].finish_reason == "stop"


def test_run_logs_say_live_then_replay(phases: Phases) -> None:
    record_log, replay_log = (path.read_text().splitlines() for path in phases.logs)
    recorded = [json.loads(line) for line in record_log]
    replayed = [json.loads(line) for line in replay_log]
    assert [line["source"] for line in recorded] == ["live"] * CALLS_PER_SCRIPT
    assert [line["source"] for line in replayed] == ["replay"] * CALLS_PER_SCRIPT
    assert sorted(line["sample_key"] for line in recorded) == sorted(line["sample_key"] for line in replayed)
    text = "\n".join([*record_log, *replay_log])
    assert CLIENT_KEY not in text and "ada@example.com" not in text  # hashes only, never content or keys
