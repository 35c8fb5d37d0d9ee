"""The plugin's intercept fixtures, driven by pytester: agents that call the openai and anthropic SDKs
themselves are recorded through `tauproxy_sdk_env` from stub upstreams on 127.0.0.1 with no change
to their code,
replayed strictly in CI with the stub down (anything but loopback still blocked), re-recorded with
`rewrite` (a call it no longer makes is dropped); `tauproxy_intercept`'s http client; and a
`tauproxy_client` call to a provider without a key, which fails in one line."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["pytester"]

FAKE_KEY = "sk-test-" + "not-a-real-key"  # built, so no key-like literal sits in the tree
CONFTEST = """
import os

import pytest


@pytest.fixture
def tauproxy_upstream():
    return {
        "gpt-stub": {"model": "openai/stub", "api_base": os.environ["STUB_URL"], "api_key_env": "STUB_KEY"},
        "claude-stub": {"api_base": os.environ["MESSAGES_STUB_URL"], "api_key_env": "STUB_KEY"},
    }
"""

# The agents under test: plain openai and anthropic SDK code that knows nothing of tauproxy.
AGENT_TEST = """
import os

import anthropic
import openai


def agent(question):
    client = openai.OpenAI(max_retries=0)  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment
    reply = client.chat.completions.create(model="gpt-stub", messages=[{"role": "user", "content": question}])
    return reply.choices[0].message.content


def claude_agent(question):
    client = anthropic.Anthropic(max_retries=0)  # ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY from the environment
    messages = [{"role": "user", "content": question}]
    reply = client.messages.create(model="claude-stub", max_tokens=100, messages=messages)
    return reply.content[0].text


def test_agent(tauproxy_sdk_env, tauproxy_record_mode):
    for question in os.environ["ASKS"].split(","):
        print(f"ANSWER {question}={agent(question)!r}")
    print(f"CLAUDE={claude_agent(os.environ['ASKS'].split(',')[0])!r}")
    stats = tauproxy_sdk_env.stats.snapshot()
    print(f"MODE={tauproxy_record_mode.value} LIVE={stats['live']} REPLAYED={stats['hits']}")
    if os.environ.get("CI"):
        try:
            openai.OpenAI(base_url="http://192.0.2.1/v1", max_retries=0, timeout=2).models.list()
        except Exception as exc:
            chain = []
            while exc is not None:
                chain.append(f"{type(exc).__name__}: {exc}")
                exc = exc.__cause__ or exc.__context__
            print("ELSEWHERE=" + " <- ".join(chain))


def test_http_client(tauproxy_intercept):
    with openai.OpenAI(api_key="unused", http_client=tauproxy_intercept.http_client(), max_retries=0) as client:
        reply = client.chat.completions.create(model="gpt-stub", messages=[{"role": "user", "content": "direct"}])
    print(f"DIRECT={reply.choices[0].message.content!r}")
"""


def counts(output: str) -> tuple[str, int, int]:
    found = re.search(r"MODE=(\w+) LIVE=(\d+) REPLAYED=(\d+)", output)
    assert found, output
    return found.group(1), int(found.group(2)), int(found.group(3))


def asked(cassette: Path) -> list[str]:
    """The first message of every recorded call, as `model: text`."""
    from tauproxy.store.cassette import Cassette

    opened = Cassette.open(cassette, create=False)
    try:
        return sorted(
            f"{r['model']}: {text_of(r['messages'][0]['content'])}" for r in map(opened.request_of, opened.entries())
        )
    finally:
        opened.close()


def text_of(content: Any) -> str:
    """A message's text: a string (chat), or the text of its blocks (the Messages API's keyed form)."""
    return content if isinstance(content, str) else "".join(block.get("text", "") for block in content)


@pytest.fixture(autouse=True)
def _preloaded() -> None:
    """pytester's in-process runs drop the modules they imported when they end, and a C extension
    (numpy's) cannot load twice in one process: import them here, before pytester takes its snapshot."""
    for name in ("numpy", "tauproxy.api", "openai", "anthropic"):
        importlib.import_module(name)
    from tauproxy.proxy.live import load_litellm

    load_litellm()  # as tauproxy imports it: with the local price map, never fetched


@pytest.fixture
def messages_stub() -> Iterator[Any]:
    from stub_messages import StubMessages

    with StubMessages(api_key=FAKE_KEY) as stub:
        yield stub


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Not in CI, and none of the SDK settings of the environment running these tests."""
    for name in ("CI", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("STUB_KEY", FAKE_KEY)
    yield monkeypatch


def test_an_sdk_direct_agent_records_replays_offline_and_rewrites(
    pytester: pytest.Pytester, env: pytest.MonkeyPatch, stub: Any, messages_stub: Any
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=AGENT_TEST)
    cassette = pytester.path / "cassettes" / "test_agent" / "test_agent"
    env.setenv("STUB_URL", stub.url)
    env.setenv("MESSAGES_STUB_URL", messages_stub.base_url)
    env.setenv("ASKS", "first,second")

    recorded = pytester.runpytest("-s")  # once, outside CI: records
    recorded.assert_outcomes(passed=2)
    out = recorded.stdout.str()
    assert counts(out) == ("record", 3, 0)
    assert "DIRECT=" in out
    assert asked(cassette) == ["claude-stub: first", "gpt-stub: first", "gpt-stub: second"]
    assert {h.get("authorization") for h in stub.request_headers} == {f"Bearer {FAKE_KEY}"}
    assert {h.get("x-api-key") for h in messages_stub.headers} == {FAKE_KEY}
    answers = re.findall(r"(?:ANSWER|CLAUDE).*", out)

    stub.stop()  # replay needs no upstream
    messages_stub.stop()
    env.setenv("CI", "true")
    replayed = pytester.runpytest("-s")
    replayed.assert_outcomes(passed=2)
    out = replayed.stdout.str()
    assert counts(out) == ("replay", 0, 3)
    assert re.findall(r"(?:ANSWER|CLAUDE).*", out) == answers
    elsewhere = re.search(r"ELSEWHERE=.*", out)
    assert elsewhere and "strict replay blocks the network" in elsewhere.group(), "only loopback in strict replay"

    env.setenv("ASKS", "first,changed")
    missed = pytester.runpytest("test_agent.py::test_agent")
    missed.assert_outcomes(failed=1)
    out = missed.stdout.str()
    assert "strict replay (replay) met a call its cassette does not hold" in out
    assert "replay miss" in out and "+changed" in out
    assert "_base_client.py" not in out, "the miss diff alone, not the traceback through the SDK"


def test_rewrite_drops_the_calls_a_test_no_longer_makes(
    pytester: pytest.Pytester, env: pytest.MonkeyPatch, stub: Any, messages_stub: Any
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=AGENT_TEST)
    cassette = pytester.path / "cassettes" / "test_agent" / "test_agent"
    env.setenv("STUB_URL", stub.url)
    env.setenv("MESSAGES_STUB_URL", messages_stub.base_url)
    env.setenv("ASKS", "kept,dropped")
    pytester.runpytest("test_agent.py::test_agent").assert_outcomes(passed=1)
    assert asked(cassette) == ["claude-stub: kept", "gpt-stub: dropped", "gpt-stub: kept"]

    env.setenv("ASKS", "kept,added")
    rewritten = pytester.runpytest("-s", "test_agent.py::test_agent", "--tauproxy-record-mode", "rewrite")
    rewritten.assert_outcomes(passed=1)
    assert counts(rewritten.stdout.str()) == ("rewrite", 3, 0)
    assert asked(cassette) == ["claude-stub: kept", "gpt-stub: added", "gpt-stub: kept"]

    stub.stop()
    messages_stub.stop()
    env.setenv("CI", "1")
    pytester.runpytest("test_agent.py::test_agent").assert_outcomes(passed=1)


CLIENT_WITHOUT_KEY = """
from tauproxy.api import Message, ModelRequest


def test_provider(tauproxy_client):
    request = ModelRequest(model="openai/gpt-4.1", messages=[Message(role="user", content="Hi")])
    tauproxy_client.complete(request, role="agent")
"""


def test_a_client_call_to_a_provider_without_a_key_is_one_line(
    pytester: pytest.Pytester, env: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_provider=CLIENT_WITHOUT_KEY)
    result = pytester.runpytest("--tauproxy-record-mode", "record")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "tauproxy: tauproxy_client, agent call to openai/gpt-4.1: no API key: set OPENAI_API_KEY" in out
    assert "ConnectionSettings" in out
    failure = out.split(" test_provider _")[1].split("short test summary")[0]
    assert len(failure.strip("_ \n=").splitlines()) == 1, "one line, not litellm's traceback: " + failure
