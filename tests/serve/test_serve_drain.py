"""Stopping serve's app while an upstream hangs: the waiting client gets a JSON 503 saying the server
is shutting down once the drain is over, and a request that comes after the stop gets one at once.
In-process (the app over httpx's ASGI transport); the signal itself is test_serve_shutdown_hang.py's."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx

from tauproxy.data_model.call import ModelCall
from tauproxy.proxy.mock import MockTransport, text_body
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import Pricing
from tauproxy.serve.app import SHUTTING_DOWN_CODE, ServeApp
from tauproxy.serve.completions import CompletionService

BODY = {"model": "gpt-x", "messages": [{"role": "user", "content": "hello"}]}


class Hanging:
    """An upstream that takes each call and answers only when released (the test releases it at the end)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.reached = threading.Event()

    def __call__(self, call: ModelCall) -> dict[str, Any]:
        self.reached.set()
        self.release.wait()
        return text_body("too late")


def test_a_call_waiting_on_a_hung_upstream_is_answered_503_when_the_drain_ends() -> None:
    upstream = Hanging()
    service = CompletionService(RecordMode.OFF, None, MockTransport(upstream), Pricing())
    app = ServeApp(
        service, auth_token=None, max_body_bytes=1 << 20, read_timeout_s=30, model_names=list, describe={}, drain_s=0.05
    )

    async def scenario() -> tuple[httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=app.starlette())
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            waiting = asyncio.create_task(client.post("/v1/chat/completions", json=BODY))
            while not upstream.reached.is_set():  # the call is in the upstream's hands
                await asyncio.sleep(0.01)
            app.stop_soon()
            answered = await waiting
            late = await client.post("/v1/chat/completions", json={**BODY, "seed": 2})
            return answered, late

    try:
        answered, late = asyncio.run(scenario())
    finally:
        upstream.release.set()
    for response in (answered, late):
        assert response.status_code == 503, response.text
        assert response.headers["content-type"] == "application/json"
        error = response.json()["error"]
        assert error["code"] == SHUTTING_DOWN_CODE and "shutting down" in error["message"]
    assert service.stats.snapshot()["requests"] == 1  # the late request never reached the service
