"""The Responses API through serve, with the openai SDK: recorded live from a stub upstream on
127.0.0.1, then replayed strictly with the upstream down. Byte-identical bodies, equal parsed objects,
streams that the SDK's helpers assemble into the non-streamed answer, a previous_response_id chain
that resolves on replay, and the upstream reached with serve's own key. In-process: serve's app over
httpx's ASGI transport."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import Pricing
from tauproxy.results.run_log import parse_run_log
from tauproxy.serve.app import ServeApp
from tauproxy.serve.completions import CompletionService
from tauproxy.serve.config import UpstreamMap, UpstreamRoute
from tauproxy.serve.runlog import RunLog
from tauproxy.store.cassette import Cassette
from tauproxy.wire_apis.registry import live_transport

MODEL = "gpt-stub"
SERVE_KEY = "sk-serve-environment-key"
CLIENT_KEY = "sk-client-key-never-forwarded"
TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "find_user_by_email",
        "description": "Find a user id by email.",
        "parameters": {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]},
        "strict": False,
    }
]


class Unused:
    """The chat transport: no test here makes a chat call."""

    def complete(self, call: Any) -> Any:
        raise AssertionError("a Responses API call went to the chat transport")

    def close(self) -> None:
        return None


def app_over(cassette: Path, mode: RecordMode, routes: UpstreamMap, run_log: Path) -> ServeApp:
    live = live_transport(Unused()) if mode != RecordMode.REPLAY else None
    service = CompletionService(mode, Cassette.open(cassette), live, Pricing(), routes, RunLog(run_log))
    return ServeApp(service, auth_token=None, max_body_bytes=1 << 20, read_timeout_s=30, model_names=list, describe={})


async def session(app: ServeApp) -> dict[str, Any]:
    """One client's calls: plain, with tools, chained twice, streamed twice; bytes and parsed objects."""
    got: dict[str, Any] = {}
    transport = httpx.ASGITransport(app=app.starlette())
    async with httpx.AsyncClient(transport=transport, base_url="http://serve") as http:
        client = openai.AsyncOpenAI(api_key=CLIENT_KEY, base_url="http://serve/v1", http_client=http, max_retries=0)
        raw = client.responses.with_raw_response

        async def create(name: str, **kwargs: Any) -> Any:
            answer = await raw.create(model=MODEL, **kwargs)
            got[name] = answer.http_response.content
            parsed = answer.parse()
            got[name + " parsed"] = parsed.model_dump()
            return parsed

        text = await create("text", input="hello", instructions="You are terse.", temperature=0)
        tool = await create("tool call", input=[{"role": "user", "content": "I am ada@example.com"}], tools=TOOLS)
        call = tool.output[0]
        result = {"type": "function_call_output", "call_id": call.call_id, "output": "user_ada"}
        await create("chained tool result", previous_response_id=tool.id, input=[result], tools=TOOLS)
        await create("chained text", previous_response_id=text.id, input="and again")
        for name, kwargs in {
            "streamed text": {"input": "stream me"},
            "streamed tool call": {"input": [{"role": "user", "content": "bob@example.com here"}], "tools": TOOLS},
        }.items():
            async with client.responses.stream(model=MODEL, **kwargs) as stream:
                got[name + " events"] = [event.model_dump(warnings=False) for event in [e async for e in stream]]
                got[name + " final"] = (await stream.get_final_response()).model_dump(warnings=False)
            await create(name, **kwargs)  # the same request not streamed: the one recorded answer
            sse = await http.post("/v1/responses", json={"model": MODEL, "stream": True, **kwargs})
            assert sse.status_code == 200 and sse.headers["content-type"].startswith("text/event-stream")
            got[name + " sse"] = sse.content
        fetched = await http.get(f"/v1/responses/{tool.id}")
        assert fetched.status_code == 200, fetched.text
        got["fetched"] = fetched.content
        got["retrieved"] = (await client.responses.retrieve(tool.id)).model_dump()
        resumed = await client.responses.retrieve(tool.id, stream=True, starting_after=2)
        got["resumed events"] = [event.model_dump(warnings=False) async for event in resumed]
    return got


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from stub_responses import ResponsesStub

    base = tmp_path_factory.mktemp("responses")
    cassette = base / "cassette"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_API_KEY", SERVE_KEY)
        with ResponsesStub() as stub:
            routes = UpstreamMap({"*": UpstreamRoute(api_base=stub.url)})
            live = asyncio.run(session(app_over(cassette, RecordMode.AUTO, routes, base / "live.runlog.jsonl")))
            seen = list(stub.requests)
        # The upstream is down from here on: every answer below comes from the cassette.
        routes = UpstreamMap({"*": UpstreamRoute(api_base="http://127.0.0.1:9/v1")})
        replayer = app_over(cassette, RecordMode.REPLAY, routes, base / "replay.runlog.jsonl")
        replayed = asyncio.run(session(replayer))
        yield {
            "live": live,
            "replayed": replayed,
            "seen": seen,
            "replayer": replayer,
            "cassette": cassette,
            "live_log": parse_run_log((base / "live.runlog.jsonl").read_text()),
            "replay_log": parse_run_log((base / "replay.runlog.jsonl").read_text()),
        }


def test_strict_replay_answers_the_live_bytes_and_objects(runs: dict[str, Any]) -> None:
    live, replayed = runs["live"], runs["replayed"]
    assert set(live) == set(replayed)
    for name, value in live.items():
        assert replayed[name] == value, name
    assert all(line.source == "replay" for line in runs["replay_log"])
    assert runs["replayer"].service.stats.snapshot()["misses"] == 0


def test_answers_are_the_upstream_bytes(runs: dict[str, Any]) -> None:
    body = runs["live"]["text"]
    parsed = json.loads(body)
    assert body == json.dumps(parsed, indent=1).encode()  # the stub's own layout, not re-encoded
    assert parsed["stub_note"]  # a field no SDK type knows is kept
    assert runs["live"]["fetched"] == runs["live"]["tool call"]
    assert runs["live"]["retrieved"] == runs["live"]["tool call parsed"]
    resumed = runs["live"]["resumed events"]
    assert [event["sequence_number"] for event in resumed][:2] == [3, 4]
    assert resumed[-1]["type"] == "response.completed"
    call = runs["live"]["tool call parsed"]["output"][0]
    assert call["type"] == "function_call" and call["arguments"] == '{\n  "email": "ada@example.com" \n}'


def test_chains_resolve_and_the_upstream_saw_serves_key_only(runs: dict[str, Any]) -> None:
    live = runs["live"]
    assert live["chained tool result parsed"]["output"][0]["content"][0]["text"] == "found: user_ada"
    assert live["chained text parsed"]["output"][0]["content"][0]["text"] == "echo: and again (after echo: hello)"
    for request in runs["seen"]:
        assert request.headers["authorization"] == f"Bearer {SERVE_KEY}"
        assert CLIENT_KEY not in json.dumps(request.headers) and "stream" not in request.body
    # Each distinct request went upstream once: streamed and repeated requests share its answer.
    assert len(runs["seen"]) == 6


def sdk_fields_dropped(value: Any) -> Any:
    """An object the SDK's stream helper assembled, without the fields only its parse helpers add."""
    if isinstance(value, dict):
        return {k: sdk_fields_dropped(v) for k, v in value.items() if k not in ("parsed", "parsed_arguments")}
    if isinstance(value, list):
        return [sdk_fields_dropped(v) for v in value]
    return value


def test_streams_assemble_into_the_non_streamed_answer(runs: dict[str, Any]) -> None:
    live = runs["live"]
    for name in ("streamed text", "streamed tool call"):
        assert sdk_fields_dropped(live[name + " final"]) == live[name + " parsed"]
        events = live[name + " events"]
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        kinds = [e["type"] for e in events]
        assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
        assert kinds[-2:] == ["response.output_item.done", "response.completed"]
    text_kinds = [e["type"] for e in live["streamed text events"]]
    for kind in ("response.content_part.added", "response.output_text.delta", "response.output_text.done"):
        assert kind in text_kinds
    call_kinds = [e["type"] for e in live["streamed tool call events"]]
    assert "response.function_call_arguments.delta" in call_kinds
    assert "response.function_call_arguments.done" in call_kinds
    sse = live["streamed text sse"].decode()
    assert sse.startswith("event: response.created\ndata: {") and "[DONE]" not in sse


def test_run_log_cassette_and_stats_name_the_api(runs: dict[str, Any]) -> None:
    assert {line.api for line in runs["live_log"]} == {"responses"}
    assert {line.source for line in runs["live_log"]} == {"live", "shared"}
    tool_line = next(line for line in runs["live_log"] if line.usage and line.response_fp)
    assert tool_line.usage is not None and tool_line.usage.prompt_tokens > 0
    cassette = Cassette.open(runs["cassette"], create=False)
    entries = cassette.entries()
    assert len(entries) == 6
    assert all(entry.request.params["tauproxy_wire_api"] == "responses" for entry in entries)
    assert all(entry.response.body is not None for entry in entries)


def test_a_miss_names_the_nearest_responses_call(runs: dict[str, Any]) -> None:
    async def miss() -> httpx.Response:
        transport = httpx.ASGITransport(app=runs["replayer"].starlette())
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as http:
            body = {"model": MODEL, "input": "hello", "instructions": "You are terse.", "temperature": 0.5}
            return await http.post("/v1/responses", json=body)

    answer = asyncio.run(miss())
    assert answer.status_code == 404
    message = answer.json()["error"]["message"]
    assert "temperature" in message and "0 -> 0.5" in message, message
