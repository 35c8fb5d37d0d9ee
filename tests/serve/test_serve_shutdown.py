"""SIGTERM stops `tauproxy serve` gracefully: in-flight calls are answered, every answered call is on
disk, and nothing new is accepted."""

from __future__ import annotations

import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_process import cassette_calls, start_serve, write_upstream_map

pytestmark = pytest.mark.slow


def chat(text: str) -> dict[str, Any]:
    return {"model": "gpt-stub", "messages": [{"role": "user", "content": text}], "seed": 1}


def indexed_calls(cassette: Path) -> int:
    """The call rows of the cassette's index file, read as it was left (not caught up by opening it)."""
    (path,) = (cassette / ".tauproxy-index").glob("*.sqlite")
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
    finally:
        db.close()


def test_sigterm_loses_nothing(tmp_path: Path) -> None:
    from stub_upstream import StubUpstream

    with StubUpstream() as stub:
        routes = write_upstream_map(tmp_path / "u.json", {"gpt-stub": {"model": "openai/stub", "api_base": stub.url}})
        cassette = tmp_path / "cassette"
        server = start_serve("--cassette", str(cassette), "--record-mode", "auto", "--upstream-map", str(routes))
        try:
            # Answered calls first, then calls still waiting on a slow upstream when the signal lands.
            for index in range(3):
                assert httpx.post(server.url + "/chat/completions", json=chat(f"done {index}")).status_code == 200
            stub.configure(delay_s=1.0)
            answers: list[httpx.Response | BaseException] = []

            def call(index: int) -> None:
                try:
                    answers.append(
                        httpx.post(server.url + "/chat/completions", json=chat(f"in flight {index}"), timeout=30)
                    )
                except BaseException as exc:  # reported by the assertion below
                    answers.append(exc)

            threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
            for thread in threads:
                thread.start()
            deadline = time.monotonic() + 20
            while stub.request_count < 7 and time.monotonic() < deadline:  # all four reached the upstream
                time.sleep(0.01)
            assert stub.request_count == 7
            server.proc.send_signal(signal.SIGTERM)
            for thread in threads:
                thread.join(timeout=30)
            code = server.proc.wait(timeout=30)
        finally:
            server.stop()
        assert code == 0, server.stdout_text()
        assert all(isinstance(a, httpx.Response) and a.status_code == 200 for a in answers), answers
        assert len(answers) == 4
        assert cassette_calls(cassette) == 7  # every answered call was fsynced before its answer
        assert indexed_calls(cassette) == 7  # and the index took those the server held (store/index_pending.py)
        assert "stopped after 7 requests" in server.stdout_text()
        with pytest.raises(httpx.ConnectError):
            httpx.post(server.url + "/chat/completions", json=chat("too late"), timeout=5)


def test_sigint_right_after_answers_keeps_them(tmp_path: Path) -> None:
    from stub_upstream import StubUpstream

    with StubUpstream() as stub:
        routes = write_upstream_map(tmp_path / "u.json", {"gpt-stub": {"model": "openai/stub", "api_base": stub.url}})
        cassette = tmp_path / "cassette"
        server = start_serve("--cassette", str(cassette), "--record-mode", "record", "--upstream-map", str(routes))
        try:
            for index in range(5):
                assert httpx.post(server.url + "/chat/completions", json=chat(f"n {index}")).status_code == 200
            code = server.stop(signal.SIGINT)
        finally:
            server.stop()
        assert code == 0, server.stdout_text()
        assert cassette_calls(cassette) == 5
