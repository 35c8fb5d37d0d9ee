"""A live call never goes back into an intercept's own server (proxy/own_servers.py): the variables
`tauproxy_sdk_env` points at it are for the code under test, not for the upstream side."""

from __future__ import annotations

from pathlib import Path

import pytest

from tauproxy.data_model.call import ConnectionSettings, ModelCall
from tauproxy.data_model.key import identify_unscoped
from tauproxy.interception import intercept
from tauproxy.proxy import own_servers
from tauproxy.proxy.live import OPENAI_DEFAULT_BASE, litellm_kwargs
from tauproxy.wire_apis.registry import wire_api
from tauproxy.wire_apis.upstream import upstream_url

OURS = "http://127.0.0.1:59999"
ELSEWHERE = "http://127.0.0.1:58888/v1"


def chat_call(model: str, api_base: str | None = None) -> ModelCall:
    wire = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    identity, index = identify_unscoped(wire)
    return ModelCall(wire, identity, "agent", index, connection=ConnectionSettings(api_base=api_base))


@pytest.fixture
def our_server() -> object:
    own_servers.add(OURS)
    yield OURS
    own_servers.remove(OURS)


def test_the_pass_through_skips_a_base_url_that_is_ours(our_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = wire_api("responses").upstream
    assert endpoint is not None
    monkeypatch.setenv("OPENAI_BASE_URL", f"{our_server}/v1")
    assert upstream_url(endpoint, None) == "https://api.openai.com/v1/responses"
    assert upstream_url(endpoint, ELSEWHERE) == f"{ELSEWHERE}/responses"  # a route's own api_base wins
    monkeypatch.setenv("OPENAI_BASE_URL", ELSEWHERE)
    assert upstream_url(endpoint, None) == f"{ELSEWHERE}/responses"  # anyone else's is used as before


def test_litellm_is_given_openais_endpoint_when_the_variable_is_ours(
    our_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{our_server}/v1")
    assert litellm_kwargs(chat_call("openai/gpt-4.1"))["api_base"] == OPENAI_DEFAULT_BASE
    assert litellm_kwargs(chat_call("gpt-4.1"))["api_base"] == OPENAI_DEFAULT_BASE
    assert "api_base" not in litellm_kwargs(chat_call("anthropic/claude-x"))  # not an OpenAI model
    assert litellm_kwargs(chat_call("openai/gpt-4.1", ELSEWHERE))["api_base"] == ELSEWHERE
    monkeypatch.setenv("OPENAI_BASE_URL", ELSEWHERE)
    assert "api_base" not in litellm_kwargs(chat_call("openai/gpt-4.1"))  # litellm reads it, as before


def test_an_intercepts_local_server_is_ours_while_it_runs(tmp_path: Path) -> None:
    with intercept(tmp_path / "cassette", "auto") as tp:
        url = tp.base_url
        assert own_servers.is_ours(url) and own_servers.is_ours(tp.url)
    assert not own_servers.is_ours(url)
