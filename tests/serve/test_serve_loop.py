"""serve's event loop: uvloop where it is installed (a dependency except on Windows), asyncio's otherwise."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tauproxy.proxy.modes import RecordMode
from tauproxy.serve.config import ServeConfig
from tauproxy.serve.server import build, event_loop, make_server


@pytest.mark.skipif(sys.platform == "win32", reason="uvloop has no Windows build")
def test_uvloop_is_installed_and_chosen() -> None:
    import uvloop  # a dependency: its absence here is a packaging bug, not a skip

    assert uvloop is not None
    assert event_loop() == "uvloop"


def test_without_uvloop_asyncio_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # what an absent package looks like to `import`
    assert event_loop() == "asyncio"


def test_the_server_runs_on_the_chosen_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = ServeConfig(cassette=tmp_path / "cassette", mode=RecordMode.AUTO, port=0)
    built = build(config, lambda line: None)
    assert make_server(built, "ready").config.loop == event_loop()
    monkeypatch.setitem(sys.modules, "uvloop", None)
    assert make_server(built, "ready").config.loop == "asyncio"
