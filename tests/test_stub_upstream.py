"""The stub upstream answers real clients (httpx, openai SDK, litellm) the way the OpenAI API would."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

# pytest's rootdir insertion usually covers this, but not when the file is imported some other way.
_TESTS_DIR = str(Path(__file__).resolve().parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

from stub_upstream import (  # noqa: E402 - needs tests/ on sys.path first
    StubUpstream,
    build_completion,
    start_stub_process,
)

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "calculate",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "find_user_id_by_email",
            "description": "Look up a user.",
            "parameters": {
                "type": "object",
                "properties": {
                    "email": {"type": "string"},
                    "channel": {"type": "string", "enum": ["web", "phone"]},
                    "limit": {"type": "integer"},
                    "score": {"type": "number"},
                    "verbose": {"type": "boolean"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "extra": {"type": "object"},
                    "note": {"type": ["string", "null"]},
                    "unused": {"type": "string"},
                },
                "required": ["email", "channel", "limit", "score", "verbose", "tags", "extra", "note"],
            },
        },
    },
]

USER_TURN = [
    {"role": "system", "content": "Policy: write to support@airline.example for refunds."},
    {"role": "user", "content": "Hello, I am bob@example.org and I want a refund."},
]


@pytest.fixture
def stub() -> Iterator[StubUpstream]:
    with StubUpstream() as server:
        yield server


def _admin(url: str) -> str:
    return url.removesuffix("/v1") + "/_admin"


def _assemble(chunks: list[Any]) -> dict[str, Any]:
    """Folds openai SDK stream chunks into a message dict, the way an agent loop would."""
    message: dict[str, Any] = {"role": None, "content": None, "tool_calls": None}
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            delta = choice.delta
            if delta.role:
                message["role"] = delta.role
            if delta.content is not None:
                message["content"] = (message["content"] or "") + delta.content
            for tc in delta.tool_calls or []:
                call = calls.setdefault(
                    tc.index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
                )
                call["id"] = tc.id or call["id"]
                if tc.function is not None:
                    call["function"]["name"] += tc.function.name or ""
                    call["function"]["arguments"] += tc.function.arguments or ""
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def test_httpx_non_streaming_agent_user_and_judge(stub: StubUpstream) -> None:
    with httpx.Client(base_url=stub.url, timeout=5) as client:
        resp = client.post("/chat/completions", json={"model": "openai/gpt-x", "messages": USER_TURN, "tools": TOOLS})
        assert resp.status_code == 200
        body = resp.json()
        assert body["object"] == "chat.completion"
        assert body["created"] == 1700000000
        assert body["model"] == "openai/gpt-x"
        assert body["id"].startswith("chatcmpl-") and len(body["id"]) == len("chatcmpl-") + 12
        choice = body["choices"][0]
        assert choice["finish_reason"] == "tool_calls"
        (call,) = choice["message"]["tool_calls"]
        assert call["id"].startswith("call_") and len(call["id"]) == len("call_") + 8
        assert call["function"]["name"] == "find_user_id_by_email"
        # The customer's address wins over the one quoted in the system policy.
        assert json.loads(call["function"]["arguments"]) == {
            "channel": "web",
            "email": "bob@example.org",
            "extra": {},
            "limit": 1,
            "note": "x",
            "score": 1.0,
            "tags": [],
            "verbose": True,
        }
        assert call["function"]["arguments"] == json.dumps(
            json.loads(call["function"]["arguments"]), sort_keys=True, separators=(",", ":")
        )
        chars = sum(len(m["content"]) for m in USER_TURN) + len(
            json.dumps(TOOLS, sort_keys=True, separators=(",", ":"))
        )
        assert body["usage"]["prompt_tokens"] == chars // 4
        assert body["usage"]["completion_tokens"] == len(call["function"]["arguments"]) // 4
        assert body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]

        # Same request, same bytes: the stub is a pure function of the body.
        assert (
            client.post(
                "/chat/completions", json={"model": "openai/gpt-x", "messages": USER_TURN, "tools": TOOLS}
            ).json()
            == body
        )

        after_tool = [
            *USER_TURN,
            choice["message"],
            {"role": "tool", "tool_call_id": call["id"], "content": "u" * 80},
        ]
        text = client.post("/chat/completions", json={"model": "gpt-x", "messages": after_tool, "tools": TOOLS}).json()
        assert text["choices"][0]["message"] == {
            "role": "assistant",
            "content": "Thanks. I have checked: " + "u" * 60 + " Is there anything else?",
        }
        assert text["choices"][0]["finish_reason"] == "stop"
        no_tools = client.post(
            "/chat/completions",
            json={"model": "gpt-x", "messages": USER_TURN, "tools": TOOLS, "tool_choice": "none"},
        ).json()
        assert no_tools["choices"][0]["message"]["content"] == "How can I help you further?"

        replies = []
        for turns in range(4):
            history = [{"role": "system", "content": "You are a customer."}]
            history += [{"role": "assistant", "content": f"turn {i}"} for i in range(turns)]
            history.append({"role": "user", "content": "###STOP###"})
            reply = client.post("/chat/completions", json={"model": "openai/user-sim", "messages": history}).json()
            assert "tool_calls" not in reply["choices"][0]["message"]
            replies.append(reply["choices"][0]["message"]["content"])
        assert replies == [
            "Hi, I need help with my account. My email is ada@example.com.",
            "Yes, please go ahead.",
            "Yes, please go ahead.",
            "Thanks, that is all. ###STOP###",
        ]

        prompt = "Grade this.\n<assertions>\n- Agent greeted the user\n- Refund issued\n</assertions>\n- not me"
        judged = client.post(
            "/chat/completions", json={"model": "judge-1", "messages": [{"role": "user", "content": prompt}]}
        ).json()
        assert json.loads(judged["choices"][0]["message"]["content"]) == {
            "results": [
                {"assertion": "Agent greeted the user", "met": True, "justification": "stub"},
                {"assertion": "Refund issued", "met": True, "justification": "stub"},
            ]
        }

        assert client.get("/models").json() == {"object": "list", "data": [{"id": "stub", "object": "model"}]}
        bad = client.post("/chat/completions", content=b"{not json", headers={"Content-Type": "application/json"})
        assert bad.status_code == 400
        assert set(bad.json()["error"]) == {"message", "type", "code"}
        assert client.get("/nope").status_code == 404
        assert client.post("/nope", json={"a": 1}).status_code == 404
        # Still usable after the errors: each response carried a correct Content-Length for keep-alive.
        assert client.get("/models").status_code == 200


def test_chunked_request_body_is_read(stub: StubUpstream) -> None:
    payload = json.dumps({"model": "stub", "messages": [{"role": "user", "content": "hi"}]}).encode()

    def body() -> Iterator[bytes]:
        yield payload[:10]
        yield payload[10:]

    with httpx.Client(timeout=5) as client:
        resp = client.post(stub.url + "/chat/completions", content=body())
        assert resp.request.headers.get("transfer-encoding") == "chunked"
        assert resp.status_code == 200
        assert stub.requests == [json.loads(payload)]


@pytest.mark.parametrize(
    "messages",
    [
        pytest.param(USER_TURN, id="tool-call"),
        pytest.param([{"role": "user", "content": "Thanks, all good now!"}], id="text"),
    ],
)
def test_openai_sdk_stream_assembles_to_non_streamed_message(
    stub: StubUpstream, messages: list[dict[str, Any]]
) -> None:
    import openai

    client = openai.OpenAI(base_url=stub.url, api_key="sk-x", max_retries=0)
    tool_choice = "none" if len(messages) == 1 else "auto"
    plain = client.chat.completions.create(model="stub", messages=messages, tools=TOOLS, tool_choice=tool_choice)
    stream = client.chat.completions.create(
        model="stub",
        messages=messages,
        tools=TOOLS,
        tool_choice=tool_choice,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)

    expected = plain.choices[0].message.model_dump(include={"role", "content", "tool_calls"})
    assert _assemble(chunks) == expected
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) in (0, 3)
    assert {c.id for c in chunks} == {plain.id}
    assert chunks[-2].choices[0].finish_reason == plain.choices[0].finish_reason
    assert chunks[-1].choices == [] and chunks[-1].usage == plain.usage
    assert stub.request_headers[-1]["authorization"] == "Bearer sk-x"
    predicted = build_completion(stub.requests[0])
    assert plain.id == predicted["id"]
    assert expected == {"tool_calls": None, **predicted["choices"][0]["message"]}


def test_litellm_completion_gets_a_tool_call(stub: StubUpstream, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without this litellm fetches its cost map from GitHub at import time, which is slow or offline.
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    litellm = importlib.import_module("litellm")

    resp = litellm.completion(
        model="openai/stub",
        api_base=stub.url,
        api_key="sk-x",
        messages=USER_TURN,
        tools=TOOLS,
    )
    (call,) = resp.choices[0].message.tool_calls
    assert call.function.name == "find_user_id_by_email"
    assert json.loads(call.function.arguments)["email"] == "bob@example.org"
    assert resp.choices[0].finish_reason == "tool_calls"
    # litellm strips its provider prefix before the wire; proxies keying on model names see "stub".
    assert stub.requests[-1]["model"] == "stub"
    assert stub.request_headers[-1]["authorization"] == "Bearer sk-x"
    assert resp.usage.prompt_tokens == build_completion(stub.requests[-1])["usage"]["prompt_tokens"]


def test_injected_failures_then_success(stub: StubUpstream) -> None:
    import openai

    with httpx.Client(base_url=stub.url, timeout=5) as client:
        request = {"model": "stub", "messages": [{"role": "user", "content": "hi"}]}
        stub.configure(fail_status=500, fail_count=1)
        failed = client.post("/chat/completions", json=request)
        assert failed.status_code == 500
        assert failed.json()["error"]["type"] == "server_error"
        assert set(failed.json()["error"]) == {"message", "type", "code"}
        ok = client.post("/chat/completions", json=request)
        assert ok.status_code == 200
        assert ok.json()["choices"][0]["message"]["content"] == "How can I help you further?"

        resp = client.post(_admin(stub.url) + "/config", json={"fail_status": 429, "fail_count": 2})
        assert resp.status_code == 200
        limited = client.post("/chat/completions", json=request)
        assert limited.status_code == 429
        assert limited.headers["retry-after"] == "0"
        assert limited.json()["error"]["type"] == "rate_limit_error"
        assert client.post(_admin(stub.url) + "/config", json={"bogus": 1}).status_code == 400

    # The SDK retries the remaining 429 itself; the stub sees both attempts.
    before = stub.request_count
    sdk = openai.OpenAI(base_url=stub.url, api_key="sk-x", max_retries=1)
    assert sdk.chat.completions.create(model="stub", messages=request["messages"]).choices[0].message.content
    assert stub.request_count == before + 2
    assert [h["x-stainless-retry-count"] for h in stub.request_headers[-2:]] == ["0", "1"]


def test_delay_and_noise(stub: StubUpstream) -> None:
    request = {"model": "stub", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(base_url=stub.url, timeout=5) as client:
        stub.configure(delay_s=0.5)
        with pytest.raises(httpx.ReadTimeout):
            client.post("/chat/completions", json=request, timeout=0.1)
        stub.configure(delay_s=0, noise=True)
        first = client.post("/chat/completions", json=request).json()
        second = client.post("/chat/completions", json=request).json()
        assert first["id"] != second["id"]
        assert first["choices"][0]["message"]["content"] != second["choices"][0]["message"]["content"]
        stub.reset()
        assert stub.request_count == 0
        calm = [client.post("/chat/completions", json=request).json() for _ in range(2)]
        assert calm[0] == calm[1]


def test_counting_and_subprocess_mode() -> None:
    proc, url = start_stub_process()
    try:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        with httpx.Client(timeout=5) as client:
            for model in ("stub", "stub", "user-sim"):
                resp = client.post(
                    url + "/chat/completions",
                    json={"model": model, "messages": [{"role": "user", "content": "hi"}]},
                )
                assert resp.status_code == 200
            assert client.get(url + "/models").status_code == 200  # not a chat request, not counted
            assert client.get(_admin(url) + "/stats").json() == {
                "requests": 3,
                "by_model": {"stub": 2, "user-sim": 1},
            }
            assert client.post(_admin(url) + "/reset").status_code == 200
            assert client.get(_admin(url) + "/stats").json() == {"requests": 0, "by_model": {}}
    finally:
        proc.kill()
        proc.wait(timeout=5)

    with StubUpstream() as local:
        httpx.post(
            local.url + "/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
        )
        assert local.request_count == 1
        assert local.stats() == {"requests": 1, "by_model": {"m": 1}}
