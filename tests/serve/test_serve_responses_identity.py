"""A Responses API call has the sample identity, role, price and stats of a chat call: with a scope
header, k identical requests are k samples, recorded live and replayed in the same order; the role
header labels the call; usage is priced as chat usage is. In-process, a noisy stub upstream."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import ModelPrice, Pricing
from tauproxy.results.run_log import parse_run_log
from tauproxy.serve.app import ServeApp
from tauproxy.serve.completions import CompletionService
from tauproxy.serve.config import UpstreamMap, UpstreamRoute
from tauproxy.serve.runlog import RunLog
from tauproxy.store.cassette import Cassette
from tauproxy.wire_apis.registry import live_transport

BODY = {"model": "gpt-stub", "input": "draw a sample"}
PRICES = Pricing({"gpt-stub": ModelPrice(input_cost_per_token=1e-6, output_cost_per_token=2e-6)}, "test prices")


class NoChat:
    def complete(self, call: Any) -> Any:
        raise AssertionError("a Responses API call went to the chat transport")

    def close(self) -> None:
        return None


def texts(app: ServeApp, headers: dict[str, str], times: int) -> list[str]:
    async def send() -> list[str]:
        transport = httpx.ASGITransport(app=app.starlette())
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            answers = [await client.post("/v1/responses", json=BODY, headers=headers) for _ in range(times)]
        assert all(answer.status_code == 200 for answer in answers), answers[-1].text
        return [answer.json()["output"][0]["content"][0]["text"] for answer in answers]

    return asyncio.run(send())


def test_scoped_samples_roles_and_prices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stub_responses import ResponsesStub

    monkeypatch.setenv("OPENAI_API_KEY", "sk-serve")
    cassette, log = tmp_path / "cassette", tmp_path / "run.jsonl"
    scoped = {"x-tauproxy-scope": "task-1/0", "x-tauproxy-role": "user"}

    def app(mode: RecordMode, routes: UpstreamMap) -> ServeApp:
        live = live_transport(NoChat()) if mode != RecordMode.REPLAY else None
        service = CompletionService(mode, Cassette.open(cassette), live, PRICES, routes, RunLog(log))
        return ServeApp(
            service, auth_token=None, max_body_bytes=1 << 20, read_timeout_s=30, model_names=list, describe={}
        )

    with ResponsesStub(noise=True) as stub:
        recorder = app(RecordMode.AUTO, UpstreamMap({"*": UpstreamRoute(api_base=stub.url)}))
        live = texts(recorder, scoped, 3)
        unscoped = texts(recorder, {}, 2)
    assert len(set(live)) == 3  # three samples of one request
    assert len(set(unscoped)) == 1  # without the header, one sample per request (serve/identity.py)
    stats = recorder.service.stats.snapshot()
    assert (stats["live"], stats["shared"]) == (4, 1)
    replayer = app(RecordMode.REPLAY, UpstreamMap({"*": UpstreamRoute(api_base="http://127.0.0.1:9/v1")}))
    assert texts(replayer, scoped, 3) == live
    assert texts(replayer, {}, 2) == unscoped
    lines = parse_run_log(log.read_text())
    assert [line.role for line in lines[:3]] == ["user"] * 3 and lines[3].role == "agent"
    assert [line.occurrence for line in lines[:3]] == [0, 1, 2]
    priced = lines[0]
    assert priced.usage is not None and priced.cost_usd is not None
    expected = priced.usage.prompt_tokens * 1e-6 + priced.usage.completion_tokens * 2e-6
    assert priced.cost_usd == pytest.approx(expected) and priced.price_source == "test prices"
    assert replayer.service.stats.snapshot()["hits"] == 5
