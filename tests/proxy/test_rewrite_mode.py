"""`rewrite`: record, then keep only the session's calls. The cassette layer on its own (older
recordings superseded or dropped, none kept that the session did not make), the mode's name and
properties, and `run`, which refuses it in one line (a run resumes, so it is no one session)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tauproxy.data_model.call import ModelCall
from tauproxy.data_model.key import identify_unscoped
from tauproxy.errors import ConfigError
from tauproxy.proxy.mock import MockTransport, text_body
from tauproxy.proxy.modes import RecordMode, parse_record_mode
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.recorder import CassetteTransport
from tauproxy.store.cassette import Cassette


def call(text: str) -> ModelCall:
    wire: dict[str, Any] = {"model": "gpt-test", "messages": [{"role": "user", "content": text}]}
    identity, index = identify_unscoped(wire)
    return ModelCall(wire, identity, "agent", index)


def saying(text: str) -> MockTransport:
    return MockTransport(lambda _: text_body(text, model="gpt-test"))


def answers(cassette: Cassette) -> dict[str, str]:
    return {
        str(cassette.request_of(e)["messages"][0]["content"]): str(
            cassette.response_of(e)["choices"][0]["message"]["content"]
        )
        for e in cassette.entries()
    }


def test_the_mode_records_and_is_named_rewrite() -> None:
    mode = parse_record_mode(" Rewrite ")
    assert mode is RecordMode.REWRITE and mode.resolved(cassette_is_empty=False) is RecordMode.REWRITE
    assert mode.goes_live and not mode.looks_up


def test_a_session_keeps_exactly_its_own_calls(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    before = CassetteTransport(cassette, RecordMode.RECORD, saying("old"), Pricing())
    for text in ("kept", "dropped"):
        before.complete(call(text))

    session = CassetteTransport(cassette, RecordMode.REWRITE, saying("new"), Pricing())
    sources = [session.complete(call(text)).source for text in ("kept", "added", "kept")]
    assert sources == ["live", "live", "shared"], "rewrite never reads the cassette, as record"
    assert session.keep_only_this_session() == 1  # "dropped"

    fresh = Cassette.open(tmp_path / "c")
    assert answers(fresh) == {"kept": "new", "added": "new"}
    assert len(fresh.history()) == 2, "the superseded recording of 'kept' is gone too"


def test_another_layer_s_calls_of_the_same_session_are_kept_too(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    other = CassetteTransport(cassette, RecordMode.RECORD, saying("x"), Pricing())
    other.complete(call("by another fixture"))
    session = CassetteTransport(cassette, RecordMode.REWRITE, saying("y"), Pricing())
    session.complete(call("by this one"))
    assert session.keep_only_this_session(also=other.recorded_keys) == 0
    assert set(answers(Cassette.open(tmp_path / "c"))) == {"by another fixture", "by this one"}


def test_run_refuses_rewrite_in_one_line(tmp_path: Path) -> None:
    from tauproxy.api import run, run_config

    config = run_config("mock", agent="scripted/oracle", record_mode="rewrite", cassette=tmp_path / "c", num_tasks=1)
    with pytest.raises(ConfigError, match="--record-mode rewrite is for the pytest plugin") as caught:
        run(config)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "c").exists(), "refused before anything is written"
