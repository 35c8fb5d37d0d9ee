"""The openai SDK's Responses API through `tauproxy.intercept`: text, tools, a previous_response_id
chain and streams, sync and async, on the SDK's own base_url (api.openai.com) and through the local
base_url. Recorded live from a stub upstream on 127.0.0.1 that speaks the Responses API, then replayed
strictly with the stub gone: byte-identical bodies, equal parsed objects, the chain resolved."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tauproxy.interception import Intercept, intercept

MODEL = "gpt-stub"
SERVER_KEY = "sk-intercept-environment-key"
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "find_user_by_email",
        "description": "Find a user id by email.",
        "parameters": {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]},
        "strict": False,
    }
]


def sync_session(client: openai.OpenAI) -> dict[str, Any]:
    """Bytes and parsed objects of one client's calls: text, tool call, chained result, streams."""
    got: dict[str, Any] = {}
    raw = client.responses.with_raw_response

    def create(name: str, **kwargs: Any) -> Any:
        answer = raw.create(model=MODEL, **kwargs)
        got[name] = answer.http_response.read()
        parsed = answer.parse()
        if kwargs.get("stream"):
            got[name + " parsed"] = [event.model_dump(warnings=False) for event in parsed]
        else:
            got[name + " parsed"] = parsed.model_dump(warnings=False)
        return parsed

    create("text", input="hello", instructions="You are terse.")
    tool = create("tool call", input=[{"role": "user", "content": "I am ada@example.com"}], tools=TOOLS)
    call = tool.output[0]
    result = {"type": "function_call_output", "call_id": call.call_id, "output": "user_ada"}
    create("chained tool result", previous_response_id=tool.id, input=[result], tools=TOOLS)
    create("streamed tool call", input=[{"role": "user", "content": "bob@example.com here"}], tools=TOOLS, stream=True)
    with client.responses.stream(model=MODEL, input="stream me") as stream:
        got["helper events"] = [event.model_dump(warnings=False) for event in stream]
        got["helper final"] = stream.get_final_response().model_dump(warnings=False)
    return got


async def async_session(client: openai.AsyncOpenAI) -> dict[str, Any]:
    answer = await client.responses.with_raw_response.create(model=MODEL, input="hello from async")
    events = [
        e.model_dump(warnings=False)
        async for e in await client.responses.create(model=MODEL, input="streamed from async", stream=True)
    ]
    return {
        "async text": await answer.http_response.aread(),
        "async parsed": answer.parse().model_dump(),
        "async events": events,
    }


def everything(tp: Intercept) -> dict[str, Any]:
    with openai.OpenAI(api_key="unused", http_client=tp.http_client(), max_retries=0) as client:
        got = sync_session(client)

    async def run_async() -> dict[str, Any]:
        async with openai.AsyncOpenAI(api_key="unused", http_client=tp.async_http_client(), max_retries=0) as client:
            return await async_session(client)

    got.update(asyncio.run(run_async()))
    with openai.OpenAI(api_key="unused", base_url=tp.base_url, max_retries=0) as client:
        answer = client.responses.with_raw_response.create(model=MODEL, input="hello from my own client")
        got["base_url text"] = answer.http_response.read()
    return got


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from stub_responses import ResponsesStub

    cassette = tmp_path_factory.mktemp("intercept-responses") / "cassette"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_API_KEY", SERVER_KEY)
        with ResponsesStub() as stub:
            with intercept(cassette, "auto", upstream={"*": {"api_base": stub.url}}) as tp:
                live = everything(tp)
                live_stats = tp.stats.snapshot()
            seen = len(stub.requests)
        with intercept(cassette, "replay", upstream={"*": {"api_base": "http://127.0.0.1:9/v1"}}) as tp:
            replayed = everything(tp)
            replay_stats = tp.stats.snapshot()
    yield {"live": live, "replayed": replayed, "seen": seen, "live_stats": live_stats, "replay_stats": replay_stats}


def test_strict_replay_answers_the_live_bytes_and_objects(runs: dict[str, Any]) -> None:
    live, replayed = runs["live"], runs["replayed"]
    assert set(live) == set(replayed)
    for name, value in live.items():
        assert replayed[name] == value, name
    assert runs["replay_stats"]["misses"] == 0 and runs["replay_stats"]["live"] == 0
    assert runs["seen"] == runs["live_stats"]["live"] > 0


def test_the_chain_and_the_streams_arrive_as_the_sdk_expects(runs: dict[str, Any]) -> None:
    live = runs["live"]
    assert live["tool call parsed"]["output"][0]["type"] == "function_call"
    assert live["chained tool result parsed"]["previous_response_id"] == live["tool call parsed"]["id"]
    assert live["helper events"][-1]["type"] == "response.completed"
    assert live["helper final"]["output"]
    assert live["async events"][-1]["type"] == "response.completed"
