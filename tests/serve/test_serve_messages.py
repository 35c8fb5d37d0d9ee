"""Anthropic's SDK through serve's `POST /v1/messages`: recorded live from a stub upstream on
127.0.0.1 that speaks the Messages API, then replayed strictly with the upstream gone, giving the
same bytes and equal parsed objects, streamed and not, with tools. The run log, stats, cost and a
miss report of a Messages call are checked on the way. In-process: serve's app over httpx2's ASGI
transport (the anthropic SDK sends through httpx2, its fork of httpx)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anthropic
import httpx2
import pytest
from stub_messages import StubMessages

from tauproxy.proxy.live import LiteLLMTransport
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import ModelPrice, Pricing
from tauproxy.serve.app import ServeApp
from tauproxy.serve.completions import CompletionService
from tauproxy.serve.config import UpstreamMap, UpstreamRoute
from tauproxy.serve.roles import SYSTEM_TEXTS, recognise_role, tau2_markers
from tauproxy.serve.runlog import RunLog
from tauproxy.store.cassette import Cassette
from tauproxy.wire_apis.messages import MessagesApi
from tauproxy.wire_apis.registry import live_transport

KEY_ENV = "STUB_ANTHROPIC_KEY"
SERVER_KEY = "sk-stub-server-key"
VERSION = {"anthropic-version": "2023-06-01"}
SYSTEM = "You are a support agent for an online shop."
TOOLS: list[dict[str, Any]] = [
    {
        "name": "find_order",
        "description": "Find an order by its number.",
        "input_schema": {"type": "object", "properties": {"number": {"type": "string"}}, "required": ["number"]},
    }
]
PRICES = Pricing({"claude-stub": ModelPrice(input_cost_per_token=1e-6, output_cost_per_token=5e-6)}, "test prices")


def after_tool(result: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Where is order 7?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "find_order", "input": {"number": "7"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": result}]},
    ]


# Each call once non-streamed and once streamed: different requests, so each is its own live call.
CALLS: dict[str, dict[str, Any]] = {
    "tool ask": {"messages": [{"role": "user", "content": "Where is order 7?"}], "tools": TOOLS},
    "tool ask, streamed": {
        "messages": [{"role": "user", "content": "Where is order 8?"}],
        "tools": TOOLS,
        "stream": True,
    },
    "after tool": {"messages": after_tool('{"status": "shipped"}'), "tools": TOOLS},
    "after tool, streamed": {"messages": after_tool('{"status": "lost"}'), "tools": TOOLS, "stream": True},
}


def full_body(call: dict[str, Any]) -> dict[str, Any]:
    return {"model": "claude-stub", "max_tokens": 200, "system": SYSTEM, **call}


def app_over(cassette: Path, mode: RecordMode, stub_url: str | None, run_log: Path | None = None) -> ServeApp:
    routes = UpstreamMap({"claude-stub": UpstreamRoute(api_base=stub_url, api_key_env=KEY_ENV, timeout=30)})
    live = live_transport(LiteLLMTransport()) if mode != RecordMode.REPLAY else None
    service = CompletionService(
        mode, Cassette.open(cassette), live, PRICES, routes, RunLog(run_log) if run_log is not None else None
    )
    return ServeApp(service, auth_token=None, max_body_bytes=1 << 20, read_timeout_s=30, model_names=list, describe={})


T = TypeVar("T")


def over_app(app: ServeApp, work: Callable[[anthropic.AsyncAnthropic, httpx2.AsyncClient], Awaitable[T]]) -> T:
    """`work` run with the anthropic SDK and a plain httpx2 client, both answered by `app` in-process."""

    async def run() -> T:
        starlette = app.starlette()
        async with (
            httpx2.AsyncClient(transport=httpx2.ASGITransport(app=starlette), base_url="http://serve") as plain,
            httpx2.AsyncClient(transport=httpx2.ASGITransport(app=starlette)) as sdk_http,
        ):
            # The SDK's own anthropic-version is newer than the plain client's; the version is keyed, so
            # the SDK is told the plain client's, and its calls are the same samples.
            sdk = anthropic.AsyncAnthropic(
                api_key="sk-client-key-never-sent-on",
                base_url="http://serve",
                http_client=sdk_http,
                max_retries=0,
                default_headers=VERSION,
            )
            return await work(sdk, plain)

    return asyncio.run(run())


@dataclass(frozen=True)
class Seen:
    """What the clients got for one call: the body's bytes and the SDK's parsed message."""

    content: bytes
    message: dict[str, Any]


async def ask(sdk: anthropic.AsyncAnthropic, plain: httpx2.AsyncClient, call: dict[str, Any]) -> Seen:
    body = full_body(call)
    response = await plain.post("/v1/messages", json=body, headers=VERSION)
    assert response.status_code == 200, response.text
    args = {name: value for name, value in body.items() if name != "stream"}
    if call.get("stream"):
        async with sdk.messages.stream(**args) as stream:
            message = await stream.get_final_message()
    else:
        message = await sdk.messages.create(**args)
    return Seen(response.content, message.model_dump())


def ask_all(app: ServeApp) -> dict[str, Seen]:
    async def work(sdk: anthropic.AsyncAnthropic, plain: httpx2.AsyncClient) -> dict[str, Seen]:
        return {name: await ask(sdk, plain, call) for name, call in CALLS.items()}

    return over_app(app, work)


@dataclass(frozen=True)
class Recorded:
    live: dict[str, Seen]
    replayed: dict[str, Seen]
    upstream_requests: list[dict[str, Any]]
    upstream_headers: list[dict[str, str]]
    cassette: Path
    run_log: Path
    record_app: ServeApp
    replay_app: ServeApp
    replay_log: list[dict[str, Any]]  # the replay's run log and stats, before any other test adds to them
    replay_stats: dict[str, Any]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    root = tmp_path_factory.mktemp("messages")
    cassette, run_log = root / "cassette", root / "run.jsonl"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, SERVER_KEY)
        with StubMessages(api_key=SERVER_KEY, noise=True) as stub:
            record_app = app_over(cassette, RecordMode.AUTO, stub.base_url)
            live = ask_all(record_app)
            requests, headers = list(stub.requests), list(stub.headers)
        replay_app = app_over(cassette, RecordMode.REPLAY, None, run_log)
        replayed = ask_all(replay_app)
        log = [json.loads(line) for line in run_log.read_text().splitlines()]
        stats = replay_app.service.stats.snapshot()
        yield Recorded(live, replayed, requests, headers, cassette, run_log, record_app, replay_app, log, stats)


def test_each_call_went_live_once_with_the_servers_key_and_never_the_clients(recorded: Recorded) -> None:
    # The Messages API has no seed: the SDK's call after the plain client's identical one is a second draw
    # (serve/identity.py), live once; a replay answers the two in the same order.
    assert len(recorded.upstream_requests) == 2 * len(CALLS)
    assert all(h["x-api-key"] == SERVER_KEY for h in recorded.upstream_headers)
    assert all(h["anthropic-version"] == "2023-06-01" for h in recorded.upstream_headers)
    assert not any("stream" in body for body in recorded.upstream_requests)
    stats = recorded.record_app.service.stats.snapshot()
    assert (stats["misses"], stats["live"], stats["shared"]) == (2 * len(CALLS), 2 * len(CALLS), 0)
    assert stats["live_cost_usd"] > 0


def test_a_replay_with_the_upstream_gone_is_byte_identical_and_parses_equal(recorded: Recorded) -> None:
    for name in CALLS:
        assert recorded.replayed[name].content == recorded.live[name].content, name
        assert recorded.replayed[name].message == recorded.live[name].message, name


def test_a_non_streamed_answer_is_the_upstreams_bytes_and_a_stream_assembles_to_it(recorded: Recorded) -> None:
    plain = recorded.live["tool ask"]
    assert plain.content.startswith(b'{\n "id": "msg_')  # the stub's own indented bytes, untouched
    assert plain.message["stop_reason"] == "tool_use"
    assert plain.message["content"][1]["type"] == "tool_use"
    streamed = recorded.live["tool ask, streamed"]
    assert streamed.content.startswith(b"event: message_start\ndata: ")
    assert streamed.message["content"][1]["input"] == {"query": "Where is order 8?", "limit": 3}
    after = recorded.live["after tool"]
    assert after.message["content"][0]["text"].startswith('The tool said: {"status": "shipped"}')


def test_an_answer_recorded_whole_replays_as_a_stream_of_the_same_message(recorded: Recorded) -> None:
    async def work(sdk: anthropic.AsyncAnthropic, plain: httpx2.AsyncClient) -> dict[str, Any]:
        async with sdk.messages.stream(**full_body(CALLS["tool ask"])) as stream:
            return (await stream.get_final_message()).model_dump()

    # Its stream is built from one recorded answer, so stream and plain key (and answer) alike. This replay
    # server has answered both recorded draws of the call already, so a new session begins: draw 0, the
    # plain client's answer, whose bytes the stream must assemble to.
    streamed = over_app(recorded.replay_app, work)
    first = json.loads(recorded.live["tool ask"].content)
    assert streamed["id"] == first["id"] and streamed["stop_reason"] == first["stop_reason"]
    assert [block.get("text") or block.get("input") for block in streamed["content"]] == [
        block.get("text") or block.get("input") for block in first["content"]
    ]


def test_the_run_log_stats_and_cost_count_messages_calls(recorded: Recorded) -> None:
    lines = recorded.replay_log
    assert len(lines) == 2 * len(CALLS)  # the plain client's and the SDK's call of each
    assert {line["source"] for line in lines} == {"replay"}
    assert {line["model"] for line in lines} == {"claude-stub"}
    assert all(line["usage"]["prompt_tokens"] > 0 and line["cost_usd"] > 0 for line in lines)
    assert all(line["response_fp"] is not None and line["system_sha256"] is not None for line in lines)
    stats = recorded.replay_stats
    assert (stats["hits"], stats["misses"], stats["live"]) == (2 * len(CALLS), 0, 0)
    assert stats["saved_cost_usd"] > 0


def test_a_replay_miss_is_a_404_in_anthropics_shape_with_the_miss_report(recorded: Recorded) -> None:
    async def work(sdk: anthropic.AsyncAnthropic, plain: httpx2.AsyncClient) -> str:
        with pytest.raises(anthropic.NotFoundError) as caught:
            await sdk.messages.create(**full_body({"messages": after_tool('{"status": "gone"}'), "tools": TOOLS}))
        body = caught.value.body
        assert isinstance(body, dict) and body["type"] == "error"
        assert body["error"]["type"] == "not_found_error"
        return str(body["error"]["message"])

    message = over_app(recorded.replay_app, work)
    assert message.startswith("replay miss:")
    assert "message #2 (user) differs" in message  # the nearest recorded call: the tool result differs
    assert '\\"gone\\"' in message and '\\"shipped\\"' in message


def test_another_api_version_is_another_request_and_the_miss_report_says_so(recorded: Recorded) -> None:
    async def work(sdk: anthropic.AsyncAnthropic, plain: httpx2.AsyncClient) -> httpx2.Response:
        newer = {"anthropic-version": "2099-01-01"}
        return await plain.post("/v1/messages", json=full_body(CALLS["tool ask"]), headers=newer)

    response = over_app(recorded.replay_app, work)
    assert response.status_code == 404
    message = response.json()["error"]["message"]
    assert "anthropic-version" in message and "2099-01-01" in message


def test_a_request_without_the_version_header_is_anthropics_400(recorded: Recorded) -> None:
    async def work(sdk: anthropic.AsyncAnthropic, plain: httpx2.AsyncClient) -> httpx2.Response:
        return await plain.post("/v1/messages", json=full_body(CALLS["tool ask"]))

    response = over_app(recorded.replay_app, work)
    assert response.status_code == 400
    assert response.json() == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "anthropic-version: header is required"},
    }


@pytest.mark.parametrize("as_blocks", [False, True], ids=["system string", "system blocks"])
def test_a_messages_system_prompt_names_the_callers_role(as_blocks: bool) -> None:
    markers = tau2_markers().get("user")
    if not markers:
        pytest.skip("needs the tau2 extra: role markers are read from its installed files")
    system: Any = f"{markers[0]}\nBe a customer."
    if as_blocks:
        system = [{"type": "text", "text": system}]
    body = {"model": "m", "max_tokens": 5, "system": system, "messages": [{"role": "user", "content": "Hi"}]}
    assert recognise_role(MessagesApi().request(body, VERSION).conversation) == "user"
    body.pop("system")
    assert recognise_role(MessagesApi().request(body, VERSION).conversation) == "agent"


def test_a_system_prompt_seen_before_names_the_same_role_past_the_memo_bound() -> None:
    markers = tau2_markers().get("user")
    if not markers:
        pytest.skip("needs the tau2 extra: role markers are read from its installed files")
    prompts = [(f"{markers[0]}\nCustomer {i}.", "user") for i in range(SYSTEM_TEXTS + 5)]
    prompts += [(f"Agent prompt {i}.", "agent") for i in range(SYSTEM_TEXTS + 5)]
    for _ in range(2):  # the second pass reads what the first remembered (or made again past the bound)
        for system, role in prompts:
            assert recognise_role([{"role": "system", "content": system}, {"role": "user", "content": "Hi"}]) == role
