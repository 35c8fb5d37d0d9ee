"""A strict-replay miss as data: ReplayMissError carries the call, the nearest recorded call and the
differences, renders its message from them, survives pickling (Ray), and is found through the index."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from tauproxy.data_model.call import ModelCall, ModelRequest
from tauproxy.data_model.key import TrialScope
from tauproxy.data_model.message import Message
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
