"""Which chat calls serve passes through to an OpenAI-compatible upstream and which go through litellm,
and what the pass-through sends (httpx.MockTransport: no server needed)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tauproxy.data_model.call import ConnectionSettings, ModelCall
from tauproxy.data_model.completion import Completion
from tauproxy.data_model.key import identify_unscoped
from tauproxy.wire_apis.chat_route import passes_through
from tauproxy.wire_apis.registry import BY_NAME, live_transport, wire_api
from tauproxy.wire_apis.upstream import PassThroughTransport

CHAT = wire_api("chat")
ANSWER = '{"id": "c1",\n "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]}'


def chat_call(asked: str, routed: str | None = None, api_base: str | None = None, **body: Any) -> ModelCall:
    request = CHAT.request({"model": asked, "messages": [{"role": "user", "content": "hi"}], **body})
    identity, index = identify_unscoped(request.keyed)
    connection = ConnectionSettings(api_base=api_base)
    return ModelCall(request.keyed, identity, "agent", index, connection=connection, upstream_model=routed)


@pytest.mark.parametrize(
    ("asked", "routed", "api_base", "passed"),
    [
        ("gpt-stub", "openai/stub-1", None, True),  # litellm's OpenAI provider, at OpenAI or its base URL
        ("gpt-stub", "openai/stub-1", "http://127.0.0.1:9/v1", True),
        ("my-vllm-model", None, "http://127.0.0.1:9/v1", True),  # a bare name on a route with an api_base
        ("gpt-4o", None, None, True),  # litellm's price map files it under openai
        ("claude-3-5-sonnet-20240620", None, None, False),  # filed under anthropic: litellm translates
        ("no-such-model-anywhere", None, None, False),
        ("claude", "anthropic/claude-3-5-sonnet-20240620", "http://127.0.0.1:9", False),
        ("x", "bedrock/anthropic.claude-v2", None, False),
        ("x", "azure/my-deployment", "https://example.openai.azure.com", False),
        ("x", "hosted_vllm/qwen", "http://127.0.0.1:9/v1", False),  # its own key variable: litellm's
    ],
)
def test_only_openai_compatible_routes_pass_through(
    asked: str, routed: str | None, api_base: str | None, passed: bool
) -> None:
    assert passes_through(chat_call(asked, routed, api_base)) is passed


def test_the_keyed_body_goes_to_chat_completions_with_serves_key(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, text=ANSWER)

    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    transport = PassThroughTransport(BY_NAME, httpx.Client(transport=httpx.MockTransport(handler)))
    call = chat_call("gpt-stub", "openai/stub-1", None, stream=True, user="u", seed=3, api_key="sk-client")
    completion = transport.complete(call)
    assert str(seen[0].url) == "https://api.openai.com/v1/chat/completions"
    assert seen[0].headers["authorization"] == "Bearer sk-env"
    sent = json.loads(seen[0].content)
    assert sent == {"model": "stub-1", "messages": [{"role": "user", "content": "hi"}], "seed": 3}
    assert completion.raw_body == ANSWER
    assert completion.body["choices"][0]["message"]["content"] == "hi"


class Litellm:
    def __init__(self) -> None:
        self.models: list[str] = []

    def complete(self, call: ModelCall) -> Completion:
        self.models.append(call.model)
        message = {"role": "assistant", "content": "from litellm"}
        return Completion(body={"choices": [{"index": 0, "message": message}]}, source="live")

    def close(self) -> None:
        return None


def test_serves_live_transport_sends_other_providers_to_litellm() -> None:
    litellm = Litellm()
    native = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, text=ANSWER)))
    live = live_transport(litellm, native)
    assert live.complete(chat_call("gpt-stub", "openai/stub-1", "http://stub/v1")).raw_body == ANSWER
    assert live.complete(chat_call("claude", "anthropic/claude-x")).raw_body is None
    assert litellm.models == ["claude"]
