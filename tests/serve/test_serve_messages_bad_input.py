"""Bad input to the Messages API routes: one line each, in Anthropic's error shape, before any cassette
or upstream (a strict replay over an empty cassette, with no live transport at all)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import Pricing
from tauproxy.serve.app import ServeApp
from tauproxy.serve.completions import CompletionService
from tauproxy.store.cassette import Cassette

VERSION = {"anthropic-version": "2023-06-01"}
GOOD = b'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]'

CASES: list[tuple[str, bytes, dict[str, str], int, str, str]] = [
    ("/v1/messages", GOOD + b"}", {}, 400, "invalid_request_error", "anthropic-version: header is required"),
    ("/v1/messages", b"{not json", VERSION, 400, "invalid_request_error", "not valid JSON"),
    ("/messages", b"[1]", VERSION, 400, "invalid_request_error", "JSON object"),
    ("/v1/messages", b'{"model": "m", "messages": []}', VERSION, 400, "invalid_request_error", "max_tokens"),
    ("/v1/messages", GOOD + b', "temperature": NaN}', VERSION, 400, "invalid_request_error", "NaN"),
    (
        "/v1/messages",
        b'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}',
        VERSION,
        400,
        "invalid_request_error",
        "messages.0.content.0: a tool_result block needs 'tool_use_id', a string",
    ),
    ("/v1/messages", GOOD + b', "tauproxy_wire_api": "chat"}', VERSION, 400, "invalid_request_error", "reserved"),
    ("/v1/messages", GOOD + b"}", VERSION, 404, "not_found_error", "was never recorded"),
]


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "kind", "says"), CASES, ids=[f"{c[0]} {c[5]}" for c in CASES]
)
def test_refused_in_one_line_in_anthropics_shape(
    tmp_path: Path, path: str, body: bytes, headers: dict[str, str], status: int, kind: str, says: str
) -> None:
    service = CompletionService(RecordMode.REPLAY, Cassette.open(tmp_path / "c"), None, Pricing())
    app = ServeApp(service, auth_token=None, max_body_bytes=1 << 20, read_timeout_s=30, model_names=list, describe={})

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app.starlette())
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            return await client.post(path, content=body, headers={"content-type": "application/json", **headers})

    answer = asyncio.run(send())
    assert answer.status_code == status, answer.text
    error = answer.json()
    assert error["type"] == "error" and error["error"]["type"] == kind
    assert says in error["error"]["message"]
    assert status == 404 or "\n" not in error["error"]["message"]
    assert service.stats.snapshot()["live"] == 0


def test_a_wrong_token_is_anthropics_401(tmp_path: Path) -> None:
    service = CompletionService(RecordMode.REPLAY, Cassette.open(tmp_path / "c"), None, Pricing())
    app = ServeApp(
        service, auth_token="t0ken", max_body_bytes=1 << 20, read_timeout_s=30, model_names=list, describe={}
    )

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app.starlette())
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            return await client.post("/v1/messages", content=GOOD + b"}", headers={**VERSION, "x-api-key": "t0ken"})

    answer = asyncio.run(send())
    assert answer.status_code == 401
    assert answer.json()["error"]["type"] == "authentication_error"
