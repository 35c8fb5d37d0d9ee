"""The openai SDK through `tauproxy.intercept`, sync (httpx2 and legacy httpx clients) and async and
through the local base_url: chat
completions with and without tools, streamed and not, recorded live from the stub upstream on
127.0.0.1, then replayed strictly with the upstream down: byte-identical bodies, equal parsed objects,
and on whatever host the client addresses."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tauproxy.interception import Intercept, intercept

FAKE_KEY = "sk-test-" + "not-a-real-key"  # built, so no key-like literal sits in the tree
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "find_user_by_email",
            "description": "Find a user id by email.",
            "parameters": {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]},
        },
    }
]


def chat(text: str, **more: Any) -> dict[str, Any]:
    return {"model": "gpt-stub", "messages": [{"role": "user", "content": text}], **more}


# name -> (how the client is made, request); each request is its own sample (no two are identical).
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "sync text": ("sync", chat("hello", seed=3)),
    "sync text, legacy httpx client": ("sync httpx", chat("hello from httpx")),
    "sync tools": ("sync", chat("I am ada@example.com", tools=TOOLS)),
    "sync stream": ("sync", chat("hello, streamed", stream=True)),
    "sync stream tools": ("sync", chat("I am grace@example.com", tools=TOOLS, stream=True)),
    "async text": ("async", chat("hello from async")),
    "async stream tools": ("async", chat("I am alan@example.com", tools=TOOLS, stream=True)),
    "base_url text": ("base_url", chat("hello from my own client")),
    "base_url stream": ("base_url", chat("hello from my own client, streamed", stream=True)),
}

Answer = tuple[bytes, Any]  # the body as sent, and what the SDK parsed from it


def ask(tp: Intercept, how: str, request: dict[str, Any], base_url: str | None = None) -> Answer:
    """The raw body and the parsed object (a ChatCompletion, or the list of chunks of a stream)."""
    if how == "async":
        return asyncio.run(_ask_async(tp, request, base_url))
    if how == "base_url":
        client = openai.OpenAI(api_key="unused", base_url=tp.base_url, max_retries=0)
    else:
        http_client = tp.http_client("httpx" if how == "sync httpx" else None)
        client = openai.OpenAI(api_key="unused", base_url=base_url, http_client=http_client, max_retries=0)
    with client:
        raw = client.chat.completions.with_raw_response.create(**request)
        data = raw.http_response.read()
        parsed = raw.parse()
        return data, list(parsed) if request.get("stream") else parsed


async def _ask_async(tp: Intercept, request: dict[str, Any], base_url: str | None) -> Answer:
    async with openai.AsyncOpenAI(
        api_key="unused", base_url=base_url, http_client=tp.async_http_client(), max_retries=0
    ) as client:
        raw = await client.chat.completions.with_raw_response.create(**request)
        data = await raw.http_response.aread()
        parsed = raw.parse()
        return data, [chunk async for chunk in parsed] if request.get("stream") else parsed


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from stub_upstream import StubUpstream

    cassette = tmp_path_factory.mktemp("intercept") / "cassette"
    with pytest.MonkeyPatch.context() as env, StubUpstream() as stub:
        env.setenv("STUB_KEY", FAKE_KEY)
        env.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        upstream = {"gpt-stub": {"model": "openai/stub", "api_base": stub.url, "api_key_env": "STUB_KEY"}}
        with intercept(cassette, "auto", upstream=upstream) as tp:
            live = {name: ask(tp, how, request) for name, (how, request) in CASES.items()}
            live_stats = tp.stats.snapshot()
        sent = stub.request_count
        upstream_keys = {headers.get("authorization") for headers in stub.request_headers}
        stub.stop()
        run_log = cassette.parent / "replay.runlog.jsonl"
        with intercept(cassette, "replay", run_log=run_log) as tp:
            replayed = {name: ask(tp, how, request) for name, (how, request) in CASES.items()}
            elsewhere = ask(tp, "sync", CASES["sync tools"][1], base_url="https://gateway.example.com/v1")
            replay_stats = tp.stats.snapshot()
        yield {
            "cassette": cassette,
            "live": live,
            "replayed": replayed,
            "elsewhere": elsewhere,
            "live_stats": live_stats,
            "replay_stats": replay_stats,
            "sent": sent,
            "upstream_keys": upstream_keys,
            "run_log": run_log.read_text(),
        }


def test_every_call_went_live_once_and_replays_with_the_upstream_down(recorded: dict[str, Any]) -> None:
    assert recorded["sent"] == len(CASES)
    assert (recorded["live_stats"]["live"], recorded["live_stats"]["hits"]) == (len(CASES), 0)
    assert (recorded["replay_stats"]["hits"], recorded["replay_stats"]["live"]) == (len(CASES) + 1, 0)


def test_the_upstream_key_comes_from_the_environment_never_from_the_client(recorded: dict[str, Any]) -> None:
    assert recorded["upstream_keys"] == {f"Bearer {FAKE_KEY}"}


@pytest.mark.parametrize("name", list(CASES))
def test_the_replay_is_the_live_answer_byte_for_byte_and_parses_equal(recorded: dict[str, Any], name: str) -> None:
    live_bytes, live_parsed = recorded["live"][name]
    replay_bytes, replay_parsed = recorded["replayed"][name]
    assert replay_bytes == live_bytes
    assert replay_parsed == live_parsed


def test_tool_calls_and_streams_arrive_as_the_sdk_expects(recorded: dict[str, Any]) -> None:
    _, completion = recorded["live"]["sync tools"]
    (call,) = completion.choices[0].message.tool_calls
    assert call.function.name == "find_user_by_email" and "ada@example.com" in call.function.arguments
    _, chunks = recorded["live"]["async stream tools"]
    assert chunks[-1].choices == [] or chunks[-1].choices[0].finish_reason == "tool_calls"
    streamed = "".join(
        c.choices[0].delta.tool_calls[0].function.arguments or ""
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls
    )
    assert "alan@example.com" in streamed


def test_any_host_the_client_addresses_is_answered_on_the_api_paths(recorded: dict[str, Any]) -> None:
    assert recorded["elsewhere"] == recorded["replayed"]["sync tools"]


def test_rewrite_keeps_only_the_calls_this_session_made(tmp_path: Path) -> None:
    from stub_upstream import StubUpstream

    from tauproxy.store.cassette import Cassette

    cassette = tmp_path / "cassette"
    with pytest.MonkeyPatch.context() as env, StubUpstream() as stub:
        env.setenv("OPENAI_API_KEY", FAKE_KEY)
        env.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        upstream = {"*": {"model": "openai/{model}", "api_base": stub.url}}
        with intercept(cassette, "record", upstream=upstream) as tp:
            ask(tp, "sync", chat("kept"))
            ask(tp, "sync", chat("dropped"))
        assert len(Cassette.open(cassette)) == 2
        with intercept(cassette, "rewrite", upstream=upstream) as tp:
            ask(tp, "sync", chat("kept"))  # the call the test still makes; "dropped" it no longer makes
            ask(tp, "sync", chat("new"))
            assert tp.mode.value == "rewrite"
    texts = sorted(entry_text(Cassette.open(cassette), e) for e in Cassette.open(cassette).entries())
    assert texts == ["kept", "new"]
    assert len(Cassette.open(cassette).history()) == 2, "superseded lines are gone too"


def entry_text(cassette: Any, entry: Any) -> str:
    return str(cassette.request_of(entry)["messages"][0]["content"])


def test_the_run_log_has_a_line_per_call_as_serve_writes_it(recorded: dict[str, Any]) -> None:
    from tauproxy.results.run_log import parse_run_log

    lines = parse_run_log(recorded["run_log"])
    assert len(lines) == len(CASES) + 1
    assert {line.source for line in lines} == {"replay"} and {line.model for line in lines} == {"gpt-stub"}
    assert {line.role for line in lines} == {"agent"}
