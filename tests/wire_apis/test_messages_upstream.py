"""The Messages API through the pass-through upstream, against a stub on 127.0.0.1 that speaks it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from stub_messages import StubMessages

from tauproxy.data_model.call import ConnectionSettings, ModelCall
from tauproxy.data_model.key import identify_unscoped
from tauproxy.errors import ModelCallError
from tauproxy.wire_apis.messages import MessagesApi
from tauproxy.wire_apis.registry import BY_NAME
from tauproxy.wire_apis.upstream import PassThroughTransport

AUTHORIZATION = "authorization"  # a client's key header, which is never passed on
SERVER_KEY = "sk-stub-server-key"
BODY: dict[str, Any] = {
    "model": "claude-stub",
    "max_tokens": 64,
    "stream": True,
    "messages": [{"role": "user", "content": "Where is order 7?"}],
    "tools": [{"name": "find_order", "input_schema": {"type": "object"}}],
}
CLIENT_HEADERS = {
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "b-2, a-1",
    "x-api-key": "sk-client-key",
    AUTHORIZATION: "Bearer sk-client-token",
}


def call_of(connection: ConnectionSettings, upstream_model: str | None = None) -> ModelCall:
    asked = MessagesApi().request(dict(BODY), CLIENT_HEADERS)
    identity, call_index = identify_unscoped(asked.keyed)
    return ModelCall(
        asked.keyed,
        identity,
        "agent",
        call_index,
        connection=connection,
        upstream_model=upstream_model,
        native=asked.native,
    )


def test_a_call_goes_to_the_environments_endpoint_with_the_servers_key_and_keeps_its_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with StubMessages(api_key=SERVER_KEY) as stub:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", SERVER_KEY)
        transport = PassThroughTransport(BY_NAME)
        try:
            completion = transport.complete(call_of(ConnectionSettings(timeout=10), "anthropic/claude-real"))
        finally:
            transport.close()
    sent, headers = stub.requests[0], stub.headers[0]
    assert headers["x-api-key"] == SERVER_KEY and "authorization" not in headers
    assert (headers["anthropic-version"], headers["anthropic-beta"]) == ("2023-06-01", "a-1,b-2")
    assert "stream" not in sent and sent["model"] == "claude-real"
    assert completion.raw_body is not None
    assert completion.raw_body == json.dumps(json.loads(completion.raw_body), indent=1)  # the stub's own bytes
    reply = completion.body["choices"][0]
    assert reply["finish_reason"] == "tool_calls"
    assert reply["message"]["tool_calls"][0]["function"]["name"] == "find_order"
    assert completion.usage.prompt_tokens > 0 and completion.usage.cached_tokens == 4


def test_a_wrong_key_is_the_upstreams_401_without_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with StubMessages(api_key=SERVER_KEY) as stub:
        transport = PassThroughTransport(BY_NAME)
        try:
            with pytest.raises(ModelCallError) as caught:
                transport.complete(call_of(ConnectionSettings(api_base=stub.base_url, api_key="sk-wrong-key-123")))
        finally:
            transport.close()
    assert caught.value.status_code == 401
    assert "invalid x-api-key" in str(caught.value) and "sk-wrong-key-123" not in str(caught.value)
