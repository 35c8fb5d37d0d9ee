"""Bodies that cannot be keyed, stored or sent get a JSON 400 from serve's app and reach no upstream:
lone surrogates, bytes that are not UTF-8, numbers that are not finite, anywhere in the body. A slow
body gets a JSON 408. In-process: the app over httpx's ASGI transport, a MockTransport upstream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tauproxy.proxy.mock import MockTransport, text_body
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import Pricing
from tauproxy.serve.app import ServeApp
from tauproxy.serve.completions import CompletionService


def make_app(upstream: MockTransport, read_timeout_s: float = 30.0) -> ServeApp:
    service = CompletionService(RecordMode.OFF, None, upstream, Pricing())
    return ServeApp(
        service, auth_token=None, max_body_bytes=1 << 20, read_timeout_s=read_timeout_s, model_names=list, describe={}
    )


def post(app: ServeApp, content: bytes | AsyncIterator[bytes]) -> httpx.Response:
    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app.starlette())
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            headers = {"Content-Type": "application/json"}
            return await client.post("/v1/chat/completions", content=content, headers=headers)

    return asyncio.run(send())


def error_of(response: httpx.Response) -> dict[str, Any]:
    assert response.headers["content-type"] == "application/json", response.text
    body = response.json()
    assert set(body) == {"error"} and {"message", "type", "code"} <= set(body["error"])
    error: dict[str, Any] = body["error"]
    return error


def body_with(content: str = '"hi"', extra: str = "") -> bytes:
    """A chat body written by hand, so that what json.dumps would refuse to write can be sent."""
    return f'{{"model": "gpt-x", "messages": [{{"role": "user", "content": {content}}}]{extra}}}'.encode()


BAD_BODIES: dict[str, tuple[bytes, str]] = {
    "lone high surrogate": (body_with(r'"x \ud800"'), "lone surrogate"),
    "lone low surrogate": (body_with(r'"\udc00 x"'), "lone surrogate"),
    "reversed pair": (body_with(r'"\ude00\ud83d"'), "lone surrogate"),
    "surrogate in a key": (body_with(extra=r', "metadata": {"\ud800": 1}'), "lone surrogate"),
    "surrogate in tool arguments": (
        body_with(extra=r', "tools": [{"type": "function", "function": {"name": "f\udfff"}}]'),
        "lone surrogate",
    ),
    "invalid UTF-8 byte": (body_with('"caf\xe9"').replace(b"\xc3\xa9", b"\xe9"), "not valid UTF-8"),
    "UTF-8 of a surrogate": (body_with('"x"').replace(b'"x"', b'"\xed\xa0\x80"'), "not valid UTF-8"),
    "truncated sequence": (body_with('"x"').replace(b'"x"', b'"\xe2\x82"'), "not valid UTF-8"),
    "UTF-16": (body_with().decode().encode("utf-16"), "not valid UTF-8"),
    "byte order mark": (b"\xef\xbb\xbf" + body_with(), "BOM"),
    "1e999": (body_with(extra=', "temperature": 1e999'), "1e999"),
    "-1e999": (body_with(extra=', "temperature": -1e999'), "-1e999"),
    "Infinity": (body_with(extra=', "temperature": Infinity'), "Infinity"),
    "-Infinity": (body_with(extra=', "top_p": -Infinity'), "-Infinity"),
    "NaN": (body_with(extra=', "seed": NaN'), "NaN"),
    "1E400 deep in tools": (
        body_with(
            extra=', "tools": [{"type": "function", "function": {"name": "f", "parameters": {"maximum": 1E400}}}]'
        ),
        "1E400",
    ),
    "overflow in a content part": (body_with('[{"type": "text", "text": "x", "weight": 2e308}]'), "2e308"),
    "tool calls as text": (
        body_with().replace(b'"user"', b'"assistant", "tool_calls": "f"'),
        "tool_calls",
    ),
    "a tool call as text": (body_with().replace(b'"user"', b'"assistant", "tool_calls": ["f"]'), "tool_calls"),
    "a function as text": (
        body_with().replace(b'"user"', b'"assistant", "tool_calls": [{"id": "c", "function": "f"}]'),
        "tool_calls",
    ),
}


@pytest.mark.parametrize("name", list(BAD_BODIES))
def test_bad_bodies_are_json_400s_that_reach_no_upstream(name: str) -> None:
    raw, reason = BAD_BODIES[name]
    upstream = MockTransport(lambda call: text_body("should not be called"))
    response = post(make_app(upstream), raw)
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert error["type"] == "invalid_request_error" and reason in error["message"], error
    assert upstream.calls == []


def test_what_is_valid_still_goes_through() -> None:
    upstream = MockTransport(lambda call: text_body("fine"))
    app = make_app(upstream)
    for raw in (
        body_with(r'"a pair \ud83d\ude00 is one character"'),
        body_with(r'"an escaped backslash: \\ud800 is text"'),
        body_with(extra=', "temperature": 1e308, "top_p": 0.5e-320'),
    ):
        response = post(app, raw)
        assert response.status_code == 200, response.text
    contents = [call.wire["messages"][0]["content"] for call in upstream.calls]
    assert (
        contents[0] == "a pair \U0001f600 is one character" and contents[1] == r"an escaped backslash: \ud800 is text"
    )
    assert upstream.calls[2].wire["temperature"] == 1e308


def test_a_body_that_stalls_gets_a_json_408() -> None:
    upstream = MockTransport(lambda call: text_body("never"))

    async def stalls() -> AsyncIterator[bytes]:
        yield body_with()[:10]
        await asyncio.sleep(3600)  # the client never sends the rest
        yield b""

    response = post(make_app(upstream, read_timeout_s=0.05), stalls())
    assert response.status_code == 408, response.text
    assert "--read-timeout" in error_of(response)["message"]
    assert response.headers.get("connection") == "close"
    assert upstream.calls == []


def test_error_answers_are_one_json_object() -> None:
    # The refusal itself must be encodable: the message quotes no part of the bad body.
    response = post(make_app(MockTransport(lambda call: text_body("x"))), body_with(r'"\ud800"'))
    assert json.loads(response.content.decode("utf-8"))["error"]["code"] == "400"
