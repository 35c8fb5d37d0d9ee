"""The pass-through to a wire API's own endpoint: where it goes, with which key, and how its failures
become the ModelCallErrors serve answers (httpx.MockTransport: no server needed)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

import httpx
import pytest

from tauproxy.data_model.call import ConnectionSettings, ModelCall, NativeRequest
from tauproxy.data_model.key import identify_unscoped
from tauproxy.errors import ModelCallError
from tauproxy.wire_apis.registry import BY_NAME, wire_api
from tauproxy.wire_apis.upstream import PassThroughTransport

AUTHORIZATION = "authorization"  # a client's key header, which is never passed on
RESPONSES = wire_api("responses")
ANSWER = {"id": "resp_1", "object": "response", "model": "gpt-x", "output": [], "usage": None}


def call_of(connection: ConnectionSettings, upstream_model: str | None = None) -> ModelCall:
    request = RESPONSES.request({"model": "gpt-x", "input": "hi", "stream": True})
    identity, index = identify_unscoped(request.keyed)
    return ModelCall(
        request.keyed,
        identity,
        "agent",
        index,
        connection=connection,
        upstream_model=upstream_model,
        native=request.native,
    )


def over(handler: Callable[[httpx.Request], httpx.Response]) -> PassThroughTransport:
    return PassThroughTransport(BY_NAME, httpx.Client(transport=httpx.MockTransport(handler)))


def test_the_environment_names_the_endpoint_and_key_unless_the_route_does(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, text=json.dumps(ANSWER, indent=2))

    monkeypatch.setenv("OPENAI_BASE_URL", "http://env.example/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    transport = over(handler)
    completion = transport.complete(call_of(ConnectionSettings()))
    assert str(seen[0].url) == "http://env.example/v1/responses"
    assert seen[0].headers["authorization"] == "Bearer sk-env"
    assert json.loads(seen[0].content) == {"model": "gpt-x", "input": "hi"}  # never asked to stream
    assert completion.raw_body == json.dumps(ANSWER, indent=2) and completion.body["id"] == "resp_1"
    routed = ConnectionSettings(api_base="http://route.example/v1", api_key="sk-route")
    transport.complete(call_of(routed, upstream_model="openai/gpt-y"))
    assert str(seen[1].url) == "http://route.example/v1/responses"
    assert seen[1].headers["authorization"] == "Bearer sk-route"
    assert json.loads(seen[1].content)["model"] == "gpt-y"  # litellm's provider prefix dropped
    monkeypatch.delenv("OPENAI_BASE_URL")
    transport.complete(call_of(ConnectionSettings()))
    assert str(seen[2].url) == "https://api.openai.com/v1/responses"


@pytest.mark.parametrize(
    ("outcome", "status", "code"),
    [
        (httpx.Response(429, text='{"error": {"message": "slow down"}}', headers={"retry-after": "7"}), 429, None),
        (httpx.Response(200, text="not json"), None, "upstream_malformed"),
        (httpx.Response(200, text='{"id": "resp_1"}'), None, "upstream_malformed"),
        (httpx.ReadTimeout("late"), None, "upstream_timeout"),
        (httpx.ConnectError("refused"), None, "upstream_unreachable"),
    ],
)
def test_failures_become_model_call_errors(
    outcome: httpx.Response | Exception, status: int | None, code: str | None
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    with pytest.raises(ModelCallError) as failed:
        over(handler).complete(call_of(ConnectionSettings(api_key="sk-secret-value")))
    assert failed.value.status_code == status and failed.value.code == code
    assert "sk-secret-value" not in str(failed.value) and "\n" not in str(failed.value)
    if status == 429:
        assert failed.value.retry_after == "7"


def test_a_native_requests_own_headers_go_upstream_but_never_replace_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=ANSWER)

    call = call_of(ConnectionSettings(api_key="sk-route"))
    assert call.native is not None
    versioned = NativeRequest(
        call.native.api, call.native.body, {"x-api-version": "2", AUTHORIZATION: "Bearer sk-client"}
    )
    over(handler).complete(replace(call, native=versioned))
    assert seen[0].headers["x-api-version"] == "2" and seen[0].headers["authorization"] == "Bearer sk-route"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    keyless = replace(call, native=versioned, connection=ConnectionSettings())
    over(handler).complete(keyless)
    assert "authorization" not in seen[1].headers  # a client's key is never passed on, even with none here


@pytest.mark.parametrize(
    ("raw", "upstream_model", "forwarded"),
    [
        (b'{ "input": "hi",\n  "model": "gpt-x" }', None, True),  # the client's bytes, spacing and order kept
        (b'{"model": "gpt-x", "input": "hi"}', "openai/gpt-x", True),  # routed to the name it has
        (b'{"model": "gpt-x", "input": "hi", "stream": false}', None, False),  # a field left out: encoded anew
        (b'{"model": "gpt-x", "input": "hi"}', "openai/gpt-y", False),  # routed to another name
    ],
)
def test_the_clients_bytes_are_sent_as_they_came_when_nothing_of_them_changes(
    raw: bytes, upstream_model: str | None, forwarded: bool
) -> None:
    seen: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        return httpx.Response(200, json=ANSWER)

    request = RESPONSES.request(json.loads(raw)).sent_as(raw)
    identity, index = identify_unscoped(request.keyed)
    call = ModelCall(request.keyed, identity, "agent", index, upstream_model=upstream_model, native=request.native)
    over(handler).complete(call)
    if forwarded:
        assert seen == [raw]
    else:
        expected = {"model": (upstream_model or "gpt-x").removeprefix("openai/"), "input": "hi"}
        assert json.loads(seen[0]) == expected and seen[0] == json.dumps(expected, separators=(",", ":")).encode()
