"""`tauproxy serve --record-mode rewrite`: the server's lifetime is the session; when it stops, the
cassette holds exactly the calls it recorded. In-process: serve's own build, its lifespan run by
Starlette's test client, a mock upstream in place of litellm."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tauproxy.proxy.mock import MockTransport, text_body
from tauproxy.proxy.modes import RecordMode
from tauproxy.serve import server
from tauproxy.serve.config import ServeConfig
from tauproxy.store.cassette import Cassette


def body(text: str) -> dict[str, Any]:
    return {"model": "gpt-test", "messages": [{"role": "user", "content": text}]}


def serve_once(monkeypatch: pytest.MonkeyPatch, cassette: Path, mode: RecordMode, texts: list[str]) -> list[str]:
    monkeypatch.setattr(server, "LiteLLMTransport", lambda: MockTransport(lambda _: text_body(mode.value)))
    said: list[str] = []
    built = server.build(ServeConfig(cassette=cassette, mode=mode), out=said.append)
    with TestClient(built.app.starlette()) as client:  # runs the lifespan: its end is the shutdown
        for text in texts:
            assert client.post("/v1/chat/completions", json=body(text)).status_code == 200
    return said


def asked(cassette: Path) -> list[str]:
    opened = Cassette.open(cassette)
    return sorted(str(opened.request_of(e)["messages"][0]["content"]) for e in opened.entries())


def test_a_rewriting_server_keeps_only_what_it_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cassette = tmp_path / "c"
    serve_once(monkeypatch, cassette, RecordMode.RECORD, ["kept", "dropped"])
    assert asked(cassette) == ["dropped", "kept"]
    said = serve_once(monkeypatch, cassette, RecordMode.REWRITE, ["kept", "added"])
    assert asked(cassette) == ["added", "kept"]
    assert said[-1] == "tauproxy serve: rewrite kept the 2 calls this server recorded, removed 1"
