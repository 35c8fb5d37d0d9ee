"""A non-streamed answer through serve, compared as bytes: the replay is the live answer byte for byte,
and both are the upstream's answer in the upstream's own field order (less the fields tauproxy does not
keep, here the stub's `logprobs: null`, and re-encoded compactly). In-process: serve's app over
httpx's ASGI transport, litellm to the stub upstream on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tauproxy.proxy.live import LiteLLMTransport
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import Pricing
from tauproxy.serve.app import ServeApp
from tauproxy.serve.completions import CompletionService
from tauproxy.serve.config import UpstreamMap, UpstreamRoute
from tauproxy.store.cassette import Cassette

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
BODIES: dict[str, dict[str, Any]] = {
    "tool call": {
        "model": "gpt-stub",
        "messages": [{"role": "user", "content": "I am ada@example.com"}],
        "tools": TOOLS,
    },
    "text": {"model": "gpt-stub", "messages": [{"role": "user", "content": "hello"}], "seed": 3},
}
KEPT_BY_TAUPROXY_NOT = ("logprobs",)  # choice fields the stub sends that no cassette keeps


def app_over(cassette: Path, mode: RecordMode, routes: UpstreamMap) -> ServeApp:
    live = LiteLLMTransport() if mode != RecordMode.REPLAY else None
    service = CompletionService(mode, Cassette.open(cassette), live, Pricing(), routes)
    return ServeApp(service, auth_token=None, max_body_bytes=1 << 20, read_timeout_s=30, model_names=list, describe={})


def answer_bytes(app: ServeApp, body: dict[str, Any]) -> bytes:
    async def send() -> bytes:
        transport = httpx.ASGITransport(app=app.starlette())
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            response = await client.post("/v1/chat/completions", json=body)
            assert response.status_code == 200, response.text
            return response.content

    return asyncio.run(send())


def as_upstream_sent(sent: dict[str, Any]) -> bytes:
    """The upstream's body, in its own order, without what tauproxy does not keep, encoded compactly."""
    choices = [{k: v for k, v in choice.items() if k not in KEPT_BY_TAUPROXY_NOT} for choice in sent["choices"]]
    return json.dumps({**sent, "choices": choices}, ensure_ascii=False, separators=(",", ":")).encode()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, monkeypatch_module: None) -> Iterator[dict[str, Any]]:
    from stub_upstream import StubUpstream

    cassette = tmp_path_factory.mktemp("fidelity") / "cassette"
    with StubUpstream() as stub:
        stub.configure(loose_json=True)  # arguments as the model wrote them: indented, keys reversed
        routes = UpstreamMap({"gpt-stub": UpstreamRoute(model="openai/stub", api_base=stub.url)})
        live = {name: answer_bytes(app_over(cassette, RecordMode.AUTO, routes), body) for name, body in BODIES.items()}
        upstream = dict(zip(BODIES, stub.responses, strict=True))
    replayed = {
        name: answer_bytes(app_over(cassette, RecordMode.REPLAY, routes), body) for name, body in BODIES.items()
    }
    yield {"live": live, "replayed": replayed, "upstream": upstream}


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "sk-x")  # litellm wants one; the stub ignores it
        yield


@pytest.mark.parametrize("name", list(BODIES))
def test_the_replay_is_the_live_answer_byte_for_byte(recorded: dict[str, Any], name: str) -> None:
    assert recorded["replayed"][name] == recorded["live"][name]


@pytest.mark.parametrize("name", list(BODIES))
def test_the_answer_is_the_upstream_s_in_its_order(recorded: dict[str, Any], name: str) -> None:
    assert recorded["live"][name] == as_upstream_sent(recorded["upstream"][name])


def test_tool_call_arguments_are_the_model_s_text(recorded: dict[str, Any]) -> None:
    call = json.loads(recorded["replayed"]["tool call"])["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["arguments"].startswith("{\n")  # as the stub wrote it, not canonical JSON
