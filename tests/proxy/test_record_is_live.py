"""`record` means live: no answer recorded before this run is ever served, and an identical sample
inside one run gets this run's one live answer, counted as "shared", never as "replayed".

The cassette layer on its own (thread path), over a Ray worker's read-only snapshot (the collecting
layer), and through serve's completion service; in every case the cassette already holds an older
answer to the very same sample.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from tauproxy.data_model.call import ModelCall
from tauproxy.data_model.completion import Completion
from tauproxy.data_model.key import identify_unscoped
from tauproxy.errors import CassetteWriteError
from tauproxy.proxy.client import ModelClient
from tauproxy.proxy.collector import CollectingTransport
from tauproxy.proxy.mock import MockTransport, text_body
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import ModelPrice, Pricing
from tauproxy.proxy.recorder import CassetteTransport
from tauproxy.store import index_pending, reader
from tauproxy.store.cassette import Cassette
from tauproxy.store.maintenance import prune

PRICED = Pricing({"gpt-test": ModelPrice(input_cost_per_token=1e-6, output_cost_per_token=2e-6)}, "test prices")
WIRE: dict[str, Any] = {
    "model": "gpt-test",
    "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}],
    "temperature": 0,
    "seed": 7,  # identical seeded requests are one sample (unseeded ones are a draw each: serve/identity.py)
}


def unscoped_call() -> ModelCall:
    """A seeded call that names no trial (τ²-bench's own, serve without a scope header): one sample per request."""
    identity, index = identify_unscoped(WIRE)
    return ModelCall(WIRE, identity, "agent", index)


def saying(text: str) -> MockTransport:
    return MockTransport(lambda call: text_body(text, model="gpt-test"))


def with_an_older_answer(tmp_path: Path) -> Cassette:
    cassette = Cassette.open(tmp_path / "c")
    CassetteTransport(cassette, RecordMode.RECORD, saying("old answer"), PRICED).complete(unscoped_call())
    return cassette


def content(body: dict[str, Any]) -> str:
    return str(body["choices"][0]["message"]["content"])


def test_record_never_serves_an_older_recording_and_shares_its_own_answer(tmp_path: Path) -> None:
    cassette = with_an_older_answer(tmp_path)
    live = saying("new answer")
    transport = CassetteTransport(cassette, RecordMode.RECORD, live, PRICED)
    first, second, third = (transport.complete(unscoped_call()) for _ in range(3))
    assert [c.source for c in (first, second, third)] == ["live", "shared", "shared"]
    assert {content(c.body) for c in (first, second, third)} == {"new answer"}
    assert len(live.calls) == 1
    # A shared answer is priced like the live one (what it saved) and is a body of its own.
    assert second.cost is not None and first.cost is not None and second.cost.usd == first.cost.usd
    second.body["choices"][0]["message"]["content"] = "changed by a caller"
    assert content(transport.complete(unscoped_call()).body) == "new answer"


def test_record_looks_nothing_up_even_when_the_cassette_holds_the_sample(tmp_path: Path) -> None:
    cassette = with_an_older_answer(tmp_path)
    transport = CassetteTransport(cassette, RecordMode.RECORD, saying("new answer"), PRICED)
    assert transport.replay(unscoped_call()) is None  # before this run's own live call: nothing to share


def test_auto_counts_a_repeat_of_its_own_live_call_as_shared(tmp_path: Path) -> None:
    live = saying("fresh")
    transport = CassetteTransport(Cassette.open(tmp_path / "c"), RecordMode.AUTO, live, PRICED)
    assert [transport.complete(unscoped_call()).source for _ in range(2)] == ["live", "shared"]
    # What an earlier run recorded is replayed, as auto promises.
    again = CassetteTransport(Cassette.open(tmp_path / "c"), RecordMode.AUTO, live, PRICED)
    assert again.complete(unscoped_call()).source == "replay" and len(live.calls) == 1


@pytest.mark.parametrize("mode", [RecordMode.RECORD, RecordMode.AUTO])
def test_a_ray_worker_shares_its_own_answer_not_the_snapshots(tmp_path: Path, mode: RecordMode) -> None:
    """A worker's snapshot never sees this run's recordings; in record mode it must not serve its
    older answer either (the driver ships none, but a snapshot that holds one must not leak)."""
    older = with_an_older_answer(tmp_path)
    snapshot = Cassette.snapshot(older.directory, older.read_bytes())
    live = saying("new answer")
    worker = CollectingTransport(snapshot, mode, live, PRICED)
    answers = [worker.complete(unscoped_call()) for _ in range(2)]
    if mode is RecordMode.RECORD:
        assert [a.source for a in answers] == ["live", "shared"]
        assert {content(a.body) for a in answers} == {"new answer"}
        assert len(worker.collected) == 1 and len(live.calls) == 1
    else:  # auto replays what was recorded before: that is what auto means
        assert [a.source for a in answers] == ["replay", "replay"] and not live.calls


def test_the_client_keeps_shared_calls_apart_in_its_records(tmp_path: Path) -> None:
    cassette = with_an_older_answer(tmp_path)
    client = ModelClient(
        CassetteTransport(cassette, RecordMode.RECORD, saying("new answer"), PRICED), PRICED, unscoped_call().scope
    )
    from tauproxy.data_model.call import ConnectionSettings

    for _ in range(3):
        client.complete_wire(dict(WIRE), "agent", ConnectionSettings())
    assert [r.source for r in client.records] == ["live", "shared", "shared"]


def test_serve_in_record_mode_shares_its_own_answer_and_counts_it_apart(tmp_path: Path) -> None:
    import anyio

    from tauproxy.serve.completions import CompletionService

    service = CompletionService(RecordMode.RECORD, with_an_older_answer(tmp_path), saying("new answer"), PRICED)
    bodies = [anyio.run(service.complete, dict(WIRE), None, "agent") for _ in range(2)]  # no scope header
    assert {content(body) for body in bodies} == {"new answer"}
    stats = service.stats.snapshot()
    assert (stats["live"], stats["shared"], stats["hits"], stats["requests"]) == (1, 1, 0, 2)
    assert stats["shared_saved_cost_usd"] == pytest.approx(stats["live_cost_usd"])


def retained_per_call(tmp_path: Path, answer_chars: int, calls: int = 200) -> float:
    """Python memory a recording layer still holds per live call after `calls` of them, beyond the
    cassette's bounded buffers (the reader's caches, the lines the index has yet to take: made small
    here, and filled before measuring)."""
    padding = "x" * answer_chars
    live = MockTransport(lambda call: text_body(f"{call.wire['messages'][-1]['content']} {padding}", model="gpt-test"))
    transport = CassetteTransport(Cassette.open(tmp_path / f"c{answer_chars}"), RecordMode.AUTO, live, PRICED)

    def ask(n: int) -> None:
        wire = {**WIRE, "messages": [*WIRE["messages"][:1], {"role": "user", "content": f"question {n}"}]}
        identity, index = identify_unscoped(wire)
        transport.complete(ModelCall(wire, identity, "agent", index))
        live.calls.clear()  # the mock's own record of calls is not the layer's

    warm_up = 40  # what fills once (the reader's caches, prices, the index's first pages) fills here
    for n in range(warm_up):
        ask(n)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(warm_up, warm_up + calls):  # every one a new request: a live call
            ask(n)
        gc.collect()
        return (tracemalloc.get_traced_memory()[0] - before) / calls
    finally:
        tracemalloc.stop()
        transport.close()


def test_a_long_recording_keeps_no_answer_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The answers it may share again are read back from the cassette: what a long-lived serve keeps
    # per call does not grow with the answers' size (it held each one's JSON, 8 KB a call here).
    monkeypatch.setattr(reader, "ENTRY_CACHE", 16)
    monkeypatch.setattr(reader, "TEXT_CACHE_CHARS", 64_000)
    monkeypatch.setattr(index_pending, "MAX_CALLS", 8)
    small, large = retained_per_call(tmp_path, 100), retained_per_call(tmp_path, 8000)
    assert large - small < 1000, (small, large)


def test_a_recording_lost_from_under_a_run_stops_it_instead_of_paying_again(tmp_path: Path) -> None:
    live = saying("paid once")
    cassette = Cassette.open(tmp_path / "c")
    transport = CassetteTransport(cassette, RecordMode.RECORD, live, PRICED)
    assert transport.complete(unscoped_call()).source == "live"
    prune(Cassette.open(tmp_path / "c"), set())  # another command prunes the cassette meanwhile
    cassette.reload()  # and this process looks at the file again (as its next append does)
    with pytest.raises(CassetteWriteError, match="no longer holds the call this run recorded"):
        transport.complete(unscoped_call())
    assert len(live.calls) == 1


class SendingBytes:
    """A live transport whose answers keep the upstream's own bytes (as the Responses and Messages
    routes' do): spacing and key order no canonical form would give back."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, call: ModelCall) -> Completion:
        self.calls += 1
        body = text_body("kept as sent", model="gpt-test")
        raw = json.dumps(body, indent=3, sort_keys=False) + "\n"
        return Completion(body=body, source="live", latency_s=0.125, raw_body=raw, content_type="application/json; x=1")

    def close(self) -> None:
        return None


def test_a_shared_answer_is_the_live_one_byte_for_byte(tmp_path: Path) -> None:
    live = SendingBytes()
    transport = CassetteTransport(Cassette.open(tmp_path / "c"), RecordMode.RECORD, live, PRICED)
    first, second = (transport.complete(unscoped_call()) for _ in range(2))
    assert (first.source, second.source, live.calls) == ("live", "shared", 1)
    assert second.raw_body == first.raw_body and second.raw_body is not None and second.raw_body.endswith("\n")
    assert (second.body, second.content_type, second.latency_s) == (first.body, first.content_type, first.latency_s)
    assert second.cost == first.cost
