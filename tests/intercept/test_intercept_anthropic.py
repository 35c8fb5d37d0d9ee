"""The anthropic SDK through `tauproxy.intercept`: Messages with tools, streamed and not, sync and async
and through the local base_url, each client keeping its own base_url (api.anthropic.com). Recorded
live from a stub upstream on 127.0.0.1 that speaks the Messages API, with the server's key and never
the client's, then replayed strictly with the stub gone: byte-identical bodies, equal parsed objects."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from stub_messages import StubMessages

from tauproxy.interception import Intercept, intercept

KEY_ENV = "STUB_ANTHROPIC_KEY"
SERVER_KEY = "sk-stub-server-key"
TOOLS: list[dict[str, Any]] = [
    {
        "name": "find_order",
        "description": "Find an order by its number.",
        "input_schema": {"type": "object", "properties": {"number": {"type": "string"}}, "required": ["number"]},
    }
]


def asking(text: str, **more: Any) -> dict[str, Any]:
    return {"model": "claude-stub", "max_tokens": 200, "messages": [{"role": "user", "content": text}], **more}


AFTER_TOOL = [
    {"role": "user", "content": "Where is order 7?"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "find_order", "input": {"number": "7"}}],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"status": "shipped"}'}],
    },
]

# name -> (how the client is made, request); no two requests are identical.
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "sync tools": ("sync", asking("Where is order 7?", tools=TOOLS)),
    "sync stream tools": ("sync", asking("Where is order 8?", tools=TOOLS, stream=True)),
    "sync after tool": ("sync", {**asking(""), "messages": AFTER_TOOL, "tools": TOOLS}),
    "async text": ("async", asking("Hello from async", system="Be brief.")),
    "async stream": ("async", asking("Hello, streamed", stream=True)),
    "base_url text": ("base_url", asking("Hello from my own client")),
}

Answer = tuple[bytes, Any]


def ask(tp: Intercept, how: str, request: dict[str, Any]) -> Answer:
    if how == "async":
        return asyncio.run(_ask_async(tp, request))
    if how == "base_url":
        client = anthropic.Anthropic(api_key="unused", base_url=tp.url, max_retries=0)
    else:
        client = anthropic.Anthropic(api_key="unused", http_client=tp.http_client(), max_retries=0)
    with client:
        raw = client.messages.with_raw_response.create(**request)
        data = raw.http_response.read()
        parsed = raw.parse()
        return data, [event.model_dump() for event in parsed] if request.get("stream") else parsed.model_dump()


async def _ask_async(tp: Intercept, request: dict[str, Any]) -> Answer:
    async with anthropic.AsyncAnthropic(api_key="unused", http_client=tp.async_http_client(), max_retries=0) as client:
        raw = await client.messages.with_raw_response.create(**request)
        data = await raw.http_response.aread()
        parsed = await raw.parse()
        if request.get("stream"):
            return data, [event.model_dump() async for event in parsed]
        return data, parsed.model_dump()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    cassette = tmp_path_factory.mktemp("intercept-messages") / "cassette"
    with pytest.MonkeyPatch.context() as env:
        env.setenv(KEY_ENV, SERVER_KEY)
        with StubMessages(api_key=SERVER_KEY) as stub:
            upstream = {"claude-stub": {"api_base": stub.base_url, "api_key_env": KEY_ENV}}
            with intercept(cassette, "auto", upstream=upstream) as tp:
                live = {name: ask(tp, how, request) for name, (how, request) in CASES.items()}
                live_stats = tp.stats.snapshot()
            headers = list(stub.headers)
        with intercept(cassette, "replay") as tp:
            replayed = {name: ask(tp, how, request) for name, (how, request) in CASES.items()}
            replay_stats = tp.stats.snapshot()
    yield {"live": live, "replayed": replayed, "headers": headers, "live_stats": live_stats, "replay": replay_stats}


def test_each_call_went_live_once_with_the_server_key_and_replays_with_the_stub_gone(recorded: dict[str, Any]) -> None:
    assert len(recorded["headers"]) == len(CASES)
    assert {h["x-api-key"] for h in recorded["headers"]} == {SERVER_KEY}, "never the client's 'unused'"
    assert (recorded["live_stats"]["live"], recorded["live_stats"]["hits"]) == (len(CASES), 0)
    assert (recorded["replay"]["hits"], recorded["replay"]["live"], recorded["replay"]["misses"]) == (len(CASES), 0, 0)


@pytest.mark.parametrize("name", list(CASES))
def test_the_replay_is_the_live_answer_byte_for_byte_and_parses_equal(recorded: dict[str, Any], name: str) -> None:
    live_bytes, live_parsed = recorded["live"][name]
    replay_bytes, replay_parsed = recorded["replayed"][name]
    assert replay_bytes == live_bytes
    assert replay_parsed == live_parsed


def test_tool_use_arrives_as_the_sdk_expects_streamed_and_not(recorded: dict[str, Any]) -> None:
    _, message = recorded["live"]["sync tools"]
    assert message["stop_reason"] == "tool_use"
    assert any(block["type"] == "tool_use" for block in message["content"])
    _, events = recorded["live"]["sync stream tools"]
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    assert any(e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use" for e in events)
