"""The cassette layer on its own: an in-memory live transport under `CassetteTransport`, no subprocess.

A table of (mode, what the cassette holds) -> (where the answer comes from, live calls, recorded
calls), then the promises one at a time: a miss diagnoses, a live answer is what its replay will be,
k identical calls are k samples, the pricing rule, a recording that fails is never used silently,
and the client and serve identify a request the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tauproxy.data_model.call import ModelCall, ModelRequest, Usage
from tauproxy.data_model.completion import CallRecording
from tauproxy.data_model.key import Occurrences, TrialScope
from tauproxy.data_model.message import Message
from tauproxy.data_model.wire import request_to_wire
from tauproxy.errors import CassetteError, ReplayMissError
from tauproxy.proxy.client import ModelClient
from tauproxy.proxy.mock import MockTransport, text_body
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import ModelPrice, Pricing
from tauproxy.proxy.recorder import CassetteTransport
from tauproxy.store.cassette import Cassette

SCOPE = TrialScope(task_id="t1", trial=0)
PRICED = Pricing({"gpt-test": ModelPrice(input_cost_per_token=1e-6, output_cost_per_token=2e-6)}, "test prices")


def request(text: str = "hello", **params: Any) -> ModelRequest:
    return ModelRequest(
        model="gpt-test",
        messages=[Message(role="system", content="be brief"), Message(role="user", content=text)],
        params={"temperature": 0, **params},
    )


def echo(call: ModelCall) -> dict[str, Any]:
    return text_body(f"echo {call.wire['messages'][-1]['content']}", model="gpt-test-2025")


def call_for(req: ModelRequest, scope: TrialScope = SCOPE) -> ModelCall:
    return ModelClient(MockTransport(echo), PRICED, scope).prepare(req, "agent")


def layer(
    cassette: Cassette, mode: RecordMode, live: MockTransport | None, pricing: Pricing = PRICED
) -> CassetteTransport:
    return CassetteTransport(cassette, mode, live if mode != RecordMode.REPLAY else None, pricing)


def holding_one_call(tmp_path: Path) -> Cassette:
    cassette = Cassette.open(tmp_path / "c")
    layer(cassette, RecordMode.RECORD, MockTransport(echo)).complete(call_for(request()))
    return cassette


@pytest.mark.parametrize(
    ("mode", "holds", "source", "live_calls", "recorded"),
    [
        (RecordMode.REPLAY, True, "replay", 0, 1),
        (RecordMode.REPLAY, False, ReplayMissError, 0, 0),
        (RecordMode.AUTO, True, "replay", 0, 1),
        (RecordMode.AUTO, False, "live", 1, 1),
        (RecordMode.RECORD, True, "live", 1, 2),  # re-recorded: the newer line wins
        (RecordMode.RECORD, False, "live", 1, 1),
    ],
)
def test_mode_table(tmp_path: Path, mode: RecordMode, holds: bool, source: Any, live_calls: int, recorded: int) -> None:
    cassette = holding_one_call(tmp_path) if holds else Cassette.open(tmp_path / "c")
    live = MockTransport(echo)
    transport = layer(cassette, mode, live)
    if isinstance(source, type):
        with pytest.raises(source):
            transport.complete(call_for(request()))
    else:
        assert transport.complete(call_for(request())).source == source
    assert len(live.calls) == live_calls
    assert len(cassette.history()) == recorded
    # What was written is on disk, not only in memory: a fresh reader sees the same.
    assert len(Cassette.open(tmp_path / "c").history()) == recorded


def test_once_records_into_an_empty_cassette_and_replays_a_full_one(tmp_path: Path) -> None:
    assert RecordMode.ONCE.resolved(cassette_is_empty=True) is RecordMode.RECORD
    assert RecordMode.ONCE.resolved(cassette_is_empty=False) is RecordMode.REPLAY
    assert RecordMode.AUTO.resolved(cassette_is_empty=True) is RecordMode.AUTO
    with pytest.raises(ValueError, match="resolved"):
        CassetteTransport(Cassette.open(tmp_path / "c"), RecordMode.ONCE, MockTransport(echo), PRICED)


def test_auto_records_a_miss_and_replays_it_next_time(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    live = MockTransport(echo)
    first = layer(cassette, RecordMode.AUTO, live).complete(call_for(request()))
    again = layer(Cassette.open(tmp_path / "c"), RecordMode.REPLAY, None).complete(call_for(request()))
    assert (first.source, again.source) == ("live", "replay")
    assert first.body == again.body  # the first run sees exactly what its replay will see
    assert first.response.message.content == "echo hello"
    assert len(live.calls) == 1


def test_auto_replays_a_call_the_same_cassette_recorded_moments_before(tmp_path: Path) -> None:
    # Its index has not caught up with the append yet (store/index_pending.py): the lookup still finds it.
    cassette = Cassette.open(tmp_path / "c")
    first = layer(cassette, RecordMode.AUTO, MockTransport(echo)).complete(call_for(request()))
    assert cassette.reader._file.index().query.unindexed
    dead = MockTransport(lambda call: pytest.fail("went live for a recorded call"))
    again = layer(cassette, RecordMode.AUTO, dead).complete(call_for(request()))
    assert (first.source, again.source) == ("live", "replay")
    assert first.body == again.body and dead.calls == []


def test_a_miss_names_the_nearest_call_and_what_differs(tmp_path: Path) -> None:
    cassette = holding_one_call(tmp_path)
    with pytest.raises(ReplayMissError) as miss:
        layer(cassette, RecordMode.REPLAY, None).complete(call_for(request(temperature=0.7)))
    text = str(miss.value)
    assert "temperature" in text and "0 -> 0.7" in text.replace("0.0", "0")


def test_identical_calls_in_a_trial_are_distinct_samples(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    live = MockTransport(echo)
    client = ModelClient(layer(cassette, RecordMode.AUTO, live), PRICED, SCOPE)
    client.complete(request(), "agent")
    client.complete(request(), "agent")
    ModelClient(layer(cassette, RecordMode.AUTO, live), PRICED, TrialScope(task_id="t1", trial=1)).complete(
        request(), "agent"
    )
    assert len({record.sample_key for record in client.records}) == 2
    assert len(cassette) == 3 and len(live.calls) == 3
    # Replayed in the same order, each call gets its own sample back.
    replay = ModelClient(layer(Cassette.open(tmp_path / "c"), RecordMode.REPLAY, None), PRICED, SCOPE)
    replay.complete(request(), "agent")
    replay.complete(request(), "agent")
    assert [r.sample_key for r in replay.records] == [r.sample_key for r in client.records]
    assert {r.source for r in replay.records} == {"replay"}


@pytest.mark.parametrize("mode", [RecordMode.AUTO, RecordMode.RECORD])
def test_a_sample_recorded_after_its_lookup_missed_is_replayed_not_sent_again(tmp_path: Path, mode: RecordMode) -> None:
    """Serve's order for two identical headerless requests: both looked up on its loop (both miss),
    then each answered off the loop. The second shares what the first answered; a second live call
    would record another answer to the same sample, and a replay could not give both back."""
    answers = iter(range(100))
    live = MockTransport(lambda call: text_body(f"noisy #{next(answers)}", model="gpt-test"))
    transport = layer(Cassette.open(tmp_path / "c"), mode, live)
    first, second = call_for(request()), call_for(request())
    assert first.sample_key == second.sample_key
    assert transport.replay(first) is None and transport.replay(second) is None
    said = transport.complete_miss(first)
    again = transport.complete_miss(second)
    assert (said.source, again.source) == ("live", "shared")
    assert again.body == said.body and len(live.calls) == 1 and len(transport.cassette) == 1


def test_a_replay_is_priced_now_and_falls_back_to_its_recorded_price(tmp_path: Path) -> None:
    cassette = holding_one_call(tmp_path)
    usage = Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12)
    recorded = cassette.entries()[0]
    assert recorded.cost_usd == pytest.approx(10e-6 + 4e-6)
    dearer = Pricing({"gpt-test": ModelPrice(input_cost_per_token=1e-5, output_cost_per_token=1e-5)}, "new prices")
    now = layer(cassette, RecordMode.REPLAY, None, dearer).complete(call_for(request()))
    assert now.cost is not None and now.cost.usd == pytest.approx(12e-5) and now.cost.source == "new prices"
    unpriced = layer(cassette, RecordMode.REPLAY, None, Pricing({}, "no prices")).complete(call_for(request()))
    # gpt-test is in no price map now: the recorded price stands instead of "unknown".
    assert unpriced.cost is not None and unpriced.cost.usd == pytest.approx(recorded.cost_usd or 0)
    assert PRICED.call_cost(call_for(request()), usage).usd == pytest.approx(recorded.cost_usd or 0)


def test_a_recording_that_fails_is_never_answered(tmp_path: Path) -> None:
    def lost(recording: CallRecording) -> None:
        raise CassetteError("disk full")

    cassette = Cassette.open(tmp_path / "c")
    live = MockTransport(echo)
    transport = CassetteTransport(cassette, RecordMode.AUTO, live, PRICED, recorder=lost)
    with pytest.raises(CassetteError, match="disk full"):
        transport.complete(call_for(request()))
    assert len(live.calls) == 1 and cassette.is_empty()


def test_the_recorder_gets_the_call_whole(tmp_path: Path) -> None:
    kept: list[CallRecording] = []
    transport = CassetteTransport(
        Cassette.open(tmp_path / "c"), RecordMode.AUTO, MockTransport(echo), PRICED, recorder=kept.append
    )
    call = call_for(request())
    transport.complete(call)
    [recording] = kept
    assert recording.identity == call.identity and recording.role == "agent"
    assert recording.wire == call.wire and "api_key" not in recording.wire
    assert recording.cost_usd == pytest.approx(14e-6) and recording.price_source == "test prices"


def test_client_and_serve_give_a_request_the_same_identity() -> None:
    from tauproxy.serve.completions import CompletionService

    req = request(seed=7)
    in_process = call_for(req)
    service = CompletionService(RecordMode.OFF, None, MockTransport(echo), PRICED)
    served = service.identify({**request_to_wire(req), "api_key": "sk-x", "stream": True}, SCOPE, "agent")
    assert served.identity == in_process.identity


def test_a_number_given_back_is_handed_out_again() -> None:
    occurrences = Occurrences()
    from tauproxy.data_model.key import identify

    wire = request_to_wire(request())
    first, _ = identify(wire, SCOPE, occurrences)
    occurrences.give_back(first)
    retry, _ = identify(wire, SCOPE, occurrences)
    second, _ = identify(wire, SCOPE, occurrences)
    assert (first.occurrence, retry.occurrence, second.occurrence) == (0, 0, 1)
    assert retry.sample_key == first.sample_key != second.sample_key
