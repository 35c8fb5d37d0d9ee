"""Every call is priced exactly once, by the pricing step (proxy/priced.py), whichever stack answers it:
live under a cassette, replayed, without a cassette, in-process or under serve. And serve looks a
call up once: a miss goes to the cassette layer's `complete_miss`, which does not look it up again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from tauproxy.data_model.call import Cost, ModelCall, ModelRequest, Usage
from tauproxy.data_model.key import TrialScope
from tauproxy.data_model.message import Message
from tauproxy.data_model.wire import request_to_wire
from tauproxy.proxy.client import ModelClient
from tauproxy.proxy.mock import MockTransport, text_body
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import ModelPrice, Pricing
from tauproxy.proxy.recorder import CassetteTransport
from tauproxy.store.cassette import Cassette

SCOPE = TrialScope(task_id="t1", trial=0)


class CountingPricing(Pricing):
    """Prices like its parent and counts how often the rule is applied."""

    def __init__(self) -> None:
        super().__init__({"gpt-test": ModelPrice(input_cost_per_token=1e-6, output_cost_per_token=2e-6)}, "test")
        self.priced = 0

    def call_cost(self, call: ModelCall, usage: Usage, recorded: Cost | None = None) -> Cost:
        self.priced += 1
        return super().call_cost(call, usage, recorded)


def answer(call: ModelCall) -> dict[str, Any]:
    return text_body(f"echo {call.wire['messages'][-1]['content']}", model="gpt-test")


def request(text: str) -> ModelRequest:
    return ModelRequest(model="gpt-test", messages=[Message(role="user", content=text)], params={"temperature": 0})


def test_a_client_prices_each_call_once_live_replayed_or_without_a_cassette(tmp_path: Path) -> None:
    pricing = CountingPricing()
    cassette = Cassette.open(tmp_path / "c")
    auto = ModelClient(CassetteTransport(cassette, RecordMode.AUTO, MockTransport(answer), pricing), pricing, SCOPE)
    auto.complete(request("a"), "agent")  # live, recorded
    assert pricing.priced == 1
    replay = ModelClient(CassetteTransport(cassette, RecordMode.REPLAY, None, pricing), pricing, SCOPE)
    replay.complete(request("a"), "agent")
    assert pricing.priced == 2
    bare = ModelClient(MockTransport(answer), pricing, SCOPE)
    bare.complete(request("b"), "agent")
    assert pricing.priced == 3
    costs = [record.cost_usd for client in (auto, replay, bare) for record in client.records]
    assert all(cost is not None and cost > 0 for cost in costs) and costs[0] == costs[1]


def served(tmp_path: Path, mode: RecordMode, pricing: Pricing) -> Any:
    from tauproxy.serve.completions import CompletionService

    cassette = Cassette.open(tmp_path / "c") if mode != RecordMode.OFF else None
    live = MockTransport(answer) if mode != RecordMode.REPLAY else None
    return CompletionService(mode, cassette, live, pricing)


def test_serve_prices_each_call_once(tmp_path: Path) -> None:
    body = request_to_wire(request("a"))
    for mode, calls in ((RecordMode.OFF, 2), (RecordMode.AUTO, 2)):  # AUTO: a live call, then a replay
        pricing = CountingPricing()
        service = served(tmp_path / mode.value, mode, pricing)
        for _ in range(calls):
            anyio.run(service.complete, dict(body), SCOPE, "agent")
        assert pricing.priced == calls, mode


def test_serve_looks_a_miss_up_once(tmp_path: Path) -> None:
    lookups: list[str] = []

    def counted(service: Any) -> Any:
        lookup = service.cassette.lookup

        def counting(sample_key: str) -> Any:
            lookups.append(sample_key)
            return lookup(sample_key)

        service.cassette.lookup = counting
        return service

    # Seeded, so a repeat is the same sample (serve/identity.py; an unseeded repeat would be a new draw).
    seeded = {**request_to_wire(request("a")), "seed": 7}
    service = counted(served(tmp_path, RecordMode.AUTO, Pricing()))
    anyio.run(service.complete, dict(seeded), None, "agent")  # a miss: live, recorded
    assert len(lookups) == 1
    # Shared: one lookup, of the line this server's own live call appended (proxy/recorder.py).
    anyio.run(service.complete, dict(seeded), None, "agent")
    assert len(lookups) == 2 and lookups[1] == lookups[0]
    later = counted(served(tmp_path, RecordMode.AUTO, Pricing()))  # a later server: a hit
    anyio.run(later.complete, dict(seeded), None, "agent")
    assert len(lookups) == 3
