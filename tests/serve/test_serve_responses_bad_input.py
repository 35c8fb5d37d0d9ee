"""Bad input to the Responses API routes: one JSON error each, before any cassette or upstream."""

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

CASES: list[tuple[str, str, bytes, int, str]] = [
    ("POST", "/v1/responses", b"{not json", 400, "not valid JSON"),
    ("POST", "/v1/responses", b"[1]", 400, "JSON object"),
    ("POST", "/v1/responses", b'{"model": "m"}', 400, "'input'"),
    ("POST", "/responses", b'{"model": "m", "input": "x", "temperature": NaN}', 400, "NaN"),
    ("POST", "/v1/responses", b'{"model": "m", "input": "x", "tauproxy_wire_api": "chat"}', 400, "reserved"),
    (
        "POST",
        "/v1/chat/completions",
        b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "tauproxy_wire_api": "responses"}',
        400,
        "reserved",
    ),
    ("GET", "/v1/responses/resp_unknown", b"", 404, "resp_unknown"),
    ("POST", "/v1/responses", b'{"model": "m", "input": "never recorded"}', 404, "was never recorded"),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "says"), CASES, ids=[f"{c[1]} {c[4]}" for c in CASES])
def test_refused_in_one_line(tmp_path: Path, method: str, path: str, body: bytes, status: int, says: str) -> None:
    service = CompletionService(RecordMode.REPLAY, Cassette.open(tmp_path / "c"), None, Pricing())
    app = ServeApp(service, auth_token=None, max_body_bytes=1 << 20, read_timeout_s=30, model_names=list, describe={})

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app.starlette())
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            headers = {"content-type": "application/json"}
            return await client.request(method, path, content=body, headers=headers)

    answer = asyncio.run(send())
    assert answer.status_code == status, answer.text
    message = answer.json()["error"]["message"]
    assert says in message
    assert service.stats.snapshot()["live"] == 0
