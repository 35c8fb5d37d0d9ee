"""A strict-replay miss as data: ReplayMissError carries the call, the nearest recorded call and the
differences, renders its message from them, survives pickling (Ray), and is found through the index."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import anyio
import pytest

from tauproxy.data_model.call import ConnectionSettings, ModelCall, ModelRequest
from tauproxy.data_model.key import TrialScope
from tauproxy.data_model.message import Message
from tauproxy.data_model.wire import request_to_wire
from tauproxy.errors import ReplayMissError
from tauproxy.proxy.client import ModelClient
from tauproxy.proxy.mock import MockTransport, text_body
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.recorder import CassetteTransport
from tauproxy.store.cassette import Cassette
from tauproxy.store.index_query import IndexQuery

SCOPE = TrialScope(task_id="t1", trial=0)


def answer(call: ModelCall) -> dict[str, Any]:
    return text_body("ok", model="gpt-test")


def request(temperature: float) -> ModelRequest:
    messages = [Message(role="system", content="be brief"), Message(role="user", content="hello")]
    return ModelRequest(model="gpt-test", messages=messages, params={"temperature": temperature})


def test_a_miss_carries_typed_fields_and_renders_its_message_from_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = Cassette.open(tmp_path / "c")
    recorder = CassetteTransport(cassette, RecordMode.RECORD, MockTransport(answer), Pricing())
    ModelClient(recorder, Pricing(), SCOPE).complete(request(0.0), "agent")

    def everything(self: IndexQuery, only: set[str] | None = None) -> Any:
        raise AssertionError("a miss must not read every entry")

    monkeypatch.setattr(IndexQuery, "entries", everything)
    replay = ModelClient(CassetteTransport(cassette, RecordMode.REPLAY, None, Pricing()), Pricing(), SCOPE)
    with pytest.raises(ReplayMissError) as caught:
        replay.complete(request(0.7), "agent")
    miss = caught.value
    assert (miss.call.task_id, miss.call.trial, miss.call.role, miss.call.model) == ("t1", 0, "agent", "gpt-test")
    assert miss.nearest is not None and miss.nearest.task_id == "t1" and miss.nearest.key != miss.call.key
    assert [(d.part, d.name) for d in miss.differences] == [("param", "temperature")]
    assert str(miss) == miss.miss.render()
    assert "nearest recorded call: key" in str(miss) and "param temperature changed: 0.0 -> 0.7" in str(miss)
    again = pickle.loads(pickle.dumps(miss))
    assert isinstance(again, ReplayMissError) and again.miss == miss.miss and str(again) == str(miss)


def recorded_through_serve(tmp_path: Path) -> Cassette:
    """A cassette as `tauproxy serve` records a request without a scope header (and τ²'s own calls)."""
    from tauproxy.serve.completions import CompletionService

    cassette = Cassette.open(tmp_path / "c")
    service = CompletionService(RecordMode.RECORD, cassette, MockTransport(answer), Pricing())
    anyio.run(service.complete, request_to_wire(request(0.0)), None, "agent")
    return cassette


def test_a_miss_in_a_trial_names_that_trial_though_its_key_names_none(tmp_path: Path) -> None:
    """τ²-bench's own calls (the bridge) are keyed without a trial scope, as serve keys them; the
    report names the trial they were made in, never serve's fixed scope."""
    cassette = recorded_through_serve(tmp_path)
    replay = CassetteTransport(cassette, RecordMode.REPLAY, None, Pricing())
    trial = ModelClient(replay, Pricing(), TrialScope(task_id="0", trial=2))
    with pytest.raises(ReplayMissError) as caught:
        trial.complete_wire(request_to_wire(request(0.7)), "agent", ConnectionSettings())
    miss = caught.value
    assert (miss.call.task_id, miss.call.trial, miss.call.scoped) == ("0", 2, False)
    assert miss.nearest is not None and (miss.nearest.task_id, miss.nearest.scoped) == (None, False)
    text = str(miss)
    assert text.startswith("replay miss: task 0, trial 2 (keyed without a trial scope), call #0 (agent)")
    assert "nearest recorded call: key" in text and "no trial scope (one sample per distinct request), call #0" in text
    assert "task serve" not in text and "holds no" not in text


def test_a_miss_without_any_trial_says_so_plainly(tmp_path: Path) -> None:
    """Serve without a scope header cannot know the trial: the report says there is none."""
    from tauproxy.serve.completions import CompletionService
    from tauproxy.serve.errors import HttpError

    cassette = recorded_through_serve(tmp_path)
    service = CompletionService(RecordMode.REPLAY, cassette, None, Pricing())
    with pytest.raises(HttpError) as caught:
        anyio.run(service.complete, request_to_wire(request(0.7)), None, "agent")
    assert caught.value.status == 404
    text = caught.value.message
    assert "replay miss: no trial scope (one sample per distinct request), call #0 (agent)" in text
    assert "task serve" not in text


def test_a_request_recorded_without_a_scope_and_asked_in_a_trial_says_how_it_was_recorded(tmp_path: Path) -> None:
    cassette = recorded_through_serve(tmp_path)
    replay = ModelClient(CassetteTransport(cassette, RecordMode.REPLAY, None, Pricing()), Pricing(), SCOPE)
    with pytest.raises(ReplayMissError) as caught:
        replay.complete(request(0.0), "agent")  # the same request, keyed in trial t1/0
    text = str(caught.value)
    assert "replay miss: task t1, trial 0, call #0 (agent): this request is recorded" in text
    assert "recorded as: without a trial scope, seed None" in text and "task serve" not in text
