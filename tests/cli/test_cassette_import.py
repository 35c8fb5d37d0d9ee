"""`tauproxy cassette import`: calls the openai SDK made under vcrpy itself (YAML and JSON cassettes),
against a stub upstream on 127.0.0.1, imported into a tauproxy cassette and replayed through serve
(in-process, strict replay, the upstream stopped): 0 misses, and the SDK gets the objects it got
while vcrpy recorded. Interactions that cannot be keyed are listed one line each and left out."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import invoke_cli

openai = pytest.importorskip("openai")
vcr = pytest.importorskip("vcr")

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "find_user_by_email",
            "description": "Find a user id by email.",
            "parameters": {"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]},
        },
    }
]
ASK: list[Any] = [{"role": "user", "content": "I am ada@example.com, please look me up."}]


def chat_calls(client: Any) -> dict[str, Any]:
    """The calls a test under vcrpy makes: parsed objects by name (what the SDK handed the test)."""
    got: dict[str, Any] = {}
    first = client.chat.completions.create(model="gpt-stub", messages=ASK, tools=TOOLS)
    got["tool call"] = first
    call = first.choices[0].message.tool_calls[0]
    follow_up = [
        *ASK,
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": '{"user_id": "u1"}'},
    ]
    got["after the tool result"] = client.chat.completions.create(
        model="gpt-stub", messages=follow_up, tools=TOOLS, temperature=0.0
    )
    with client.chat.completions.stream(
        model="gpt-stub", messages=[{"role": "user", "content": "say hello"}], stream_options={"include_usage": True}
    ) as stream:
        got["stream, text"] = stream.get_final_completion()
    with client.chat.completions.stream(model="gpt-stub", messages=ASK, tools=TOOLS, seed=7) as stream:
        got["stream, tool call"] = stream.get_final_completion()
    return got


async def chat_calls_async(client: Any) -> dict[str, Any]:
    """chat_calls through the async client (serve in-process is async)."""
    got: dict[str, Any] = {}
    first = await client.chat.completions.create(model="gpt-stub", messages=ASK, tools=TOOLS)
    got["tool call"] = first
    call = first.choices[0].message.tool_calls[0]
    follow_up = [
        *ASK,
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": '{"user_id": "u1"}'},
    ]
    got["after the tool result"] = await client.chat.completions.create(
        model="gpt-stub", messages=follow_up, tools=TOOLS, temperature=0.0
    )
    async with client.chat.completions.stream(
        model="gpt-stub", messages=[{"role": "user", "content": "say hello"}], stream_options={"include_usage": True}
    ) as stream:
        got["stream, text"] = await stream.get_final_completion()
    async with client.chat.completions.stream(model="gpt-stub", messages=ASK, tools=TOOLS, seed=7) as stream:
        got["stream, tool call"] = await stream.get_final_completion()
    return got


def not_keyable_calls(client: Any, stub: Any) -> None:
    """Calls a test may also make that have no place in a tauproxy cassette."""
    client.models.list()  # a GET: not a model call
    stub.configure(fail_status=429)
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="gpt-stub", messages=[{"role": "user", "content": "too fast"}])


@dataclass
class Recorded:
    files: list[Path]
    objects: dict[str, Any]


def record_with_vcrpy(path: Path, serializer: str, calls: Callable[[Any], dict[str, Any]], stub: Any) -> dict[str, Any]:
    recorder = vcr.VCR(serializer=serializer, record_mode="once")
    client = openai.OpenAI(base_url=stub.url, api_key="sk-test", max_retries=0)
    with recorder.use_cassette(str(path)):
        got = calls(client)
        not_keyable_calls(client, stub)
    return got


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    from stub_upstream import StubUpstream

    root = tmp_path_factory.mktemp("vcrpy")
    files = [root / "test_chat.yaml", root / "test_chat_json.json"]
    with StubUpstream() as stub:
        objects = record_with_vcrpy(files[0], "yaml", chat_calls, stub)
        again = record_with_vcrpy(files[1], "json", chat_calls, stub)
    assert {name: o.model_dump() for name, o in again.items()} == {name: o.model_dump() for name, o in objects.items()}
    yield Recorded(files, objects)


def replay_app(cassette: Path) -> Any:
    from tauproxy.proxy.modes import RecordMode
    from tauproxy.proxy.pricing import Pricing
    from tauproxy.serve.app import ServeApp
    from tauproxy.serve.completions import CompletionService
    from tauproxy.store.cassette import Cassette

    service = CompletionService(RecordMode.REPLAY, Cassette.open(cassette, create=False), None, Pricing())
    return ServeApp(service, auth_token=None, max_body_bytes=1 << 20, read_timeout_s=30, model_names=list, describe={})


def replay_through_serve(cassette: Path, calls: Callable[[Any], Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the SDK gets from serve in strict replay over `cassette`, and serve's stats after."""
    app = replay_app(cassette)

    async def run() -> dict[str, Any]:
        transport = httpx.ASGITransport(app=app.starlette())
        async with httpx.AsyncClient(transport=transport) as http:
            client = openai.AsyncOpenAI(base_url="http://serve/v1", api_key="unused", http_client=http, max_retries=0)
            return dict(await calls(client))

    got = asyncio.run(run())
    return got, app.service.stats.snapshot()


def test_vcrpy_recordings_import_and_replay_through_serve_with_no_miss(recorded: Recorded, tmp_path: Path) -> None:
    cassette = tmp_path / "imported"
    result = invoke_cli("cassette", "import", *map(str, recorded.files), "--into", str(cassette))
    lines = result.stdout.splitlines()
    assert lines[-1] == (
        f"imported 4 of 12 interactions from 2 file(s) into {cassette} (4 already there, 4 left out)"
    ), result.stdout
    left_out = lines[:-1]
    assert len(left_out) == 4 and all(line.startswith("left out: ") for line in left_out)
    assert sum("GET http://127.0.0.1" in line and "not a model call" in line for line in left_out) == 2
    assert sum("failed call (HTTP 429)" in line for line in left_out) == 2

    replayed, stats = replay_through_serve(cassette, chat_calls_async)
    assert stats["misses"] == 0 and stats["hits"] == 4 and stats["live"] == 0
    assert {n: o.model_dump() for n, o in replayed.items()} == {n: o.model_dump() for n, o in recorded.objects.items()}


def test_a_second_import_adds_nothing(recorded: Recorded, tmp_path: Path) -> None:
    cassette = tmp_path / "twice"
    invoke_cli("cassette", "import", str(recorded.files[0]), "--into", str(cassette))
    before = (cassette / "calls.jsonl").read_bytes()
    again = invoke_cli("cassette", "import", str(recorded.files[0]), "--into", str(cassette), "--json")
    report = json.loads(again.stdout)
    assert (report["imported"], report["already_there"], len(report["left_out"])) == (0, 4, 2)
    assert (cassette / "calls.jsonl").read_bytes() == before
