"""The Messages API's pass-through against a stub upstream on 127.0.0.1 that speaks it."""

from __future__ import annotations

import json

import httpx
import pytest

from tauproxy.data_model.call import ConnectionSettings
from tauproxy.errors import ModelCallError
from tauproxy.wire_apis import messages as m
from tests.stub_messages import StubMessages

BODY = {
    "model": "claude-stub",
    "max_tokens": 64,
    "stream": True,
    "messages": [{"role": "user", "content": "Where is order 7?"}],
    "tools": [{"name": "find_order", "input_schema": {"type": "object"}}],
}


def test_a_call_goes_to_the_stub_with_the_servers_key_and_keeps_its_bytes() -> None:
    with StubMessages(api_key="sk-stub-server") as stub, httpx.Client() as client:
        target = m.upstream_target(
            ConnectionSettings(timeout=10), {"ANTHROPIC_BASE_URL": stub.base_url, "ANTHROPIC_API_KEY": "sk-stub-server"}
        )
        checked = m.check_request(dict(BODY), {"anthropic-version": "2023-06-01", "x-api-key": "sk-client"})
        answer = m.send_upstream(client, m.upstream_request(checked, target, "claude-stub"), target)
    assert stub.headers[0]["x-api-key"] == "sk-stub-server"
    assert "stream" not in stub.requests[0]
    assert answer.raw == json.dumps(json.loads(answer.raw), indent=1).encode()  # the stub's own bytes
    assert answer.reply.stop_reason == "tool_use"
    assert m.chat_reply(answer.reply)["tool_calls"][0]["function"]["name"] == "find_order"


def test_a_wrong_key_is_the_upstreams_401() -> None:
    with StubMessages(api_key="sk-stub-server") as stub, httpx.Client() as client:
        target = m.upstream_target(ConnectionSettings(api_base=stub.base_url, api_key="sk-wrong-key"), {})
        checked = m.check_request(dict(BODY), {"anthropic-version": "2023-06-01"})
        with pytest.raises(ModelCallError) as caught:
            m.send_upstream(client, m.upstream_request(checked, target, "claude-stub"), target)
    assert caught.value.status_code == 401
    assert "invalid x-api-key" in str(caught.value)
