"""What `tauproxy serve` refuses (400, 401, 413, 404 on a replay miss) and how upstream failures pass
through (status kept, nothing recorded), plus what /stats counts."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_process import ServeProcess, cassette_calls, start_serve, write_upstream_map

pytestmark = pytest.mark.slow

TOKEN = "serve-token-123456"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MAX_BODY = 4096


def chat(text: str, model: str = "gpt-stub") -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}], "seed": 5}


@dataclass
class Guarded:
    server: ServeProcess
    stub: Any
    cassette: Path
    http: httpx.Client


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guarded]:
    from stub_upstream import StubUpstream

    tmp = tmp_path_factory.mktemp("serve_guards")
    stub = StubUpstream().start()
    routes = {
        "gpt-stub": {"model": "openai/stub", "api_base": stub.url, "api_key_env": "STUB_UPSTREAM_KEY"},
        "gpt-slow": {"model": "openai/stub", "api_base": stub.url, "timeout": 0.5},
    }
    upstream_map = write_upstream_map(tmp / "upstream.json", routes)
    cassette = tmp / "cassette"
    server = start_serve(
        "--cassette",
        str(cassette),
        "--record-mode",
        "auto",
        "--upstream-map",
        str(upstream_map),
        "--auth-token",
        TOKEN,
        "--max-body-bytes",
        str(MAX_BODY),
        env={"STUB_UPSTREAM_KEY": "sk-env-only"},
    )
    http = httpx.Client(base_url=server.url, headers=AUTH, timeout=30)
    try:
        yield Guarded(server, stub, cassette, http)
    finally:
        http.close()
        server.stop()
        stub.stop()


def error_of(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"} and {"message", "type", "code"} <= set(body["error"])
    return body["error"]


def test_token_is_required(guarded: Guarded) -> None:
    before = guarded.stub.request_count
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        response = httpx.post(guarded.server.url + "/chat/completions", json=chat("hi"), headers=headers)
        assert response.status_code == 401
        assert error_of(response)["type"] == "authentication_error"
    assert httpx.get(guarded.server.url + "/models").status_code == 401
    assert httpx.get(guarded.server.root + "/stats").status_code == 401
    assert httpx.get(guarded.server.root + "/healthz").status_code == 200  # liveness stays open
    assert guarded.stub.request_count == before


def test_client_authorization_is_not_forwarded(guarded: Guarded) -> None:
    response = guarded.http.post("/chat/completions", json=chat("forwarding check"))
    assert response.status_code == 200, response.text
    sent = guarded.stub.request_headers[-1]
    assert TOKEN not in json.dumps(sent)
    assert sent.get("authorization") == "Bearer sk-env-only"  # the key named in the map, from env


def test_malformed_bodies_are_400(guarded: Guarded) -> None:
    before = guarded.stub.request_count
    bad = [
        b"{not json",
        b"[1, 2]",
        b'{"model": "gpt-stub"}',
        b'{"model": "", "messages": [{}]}',
        json.dumps({**chat("x"), "n": 2}).encode(),
    ]
    for raw in bad:
        response = guarded.http.post("/chat/completions", content=raw, headers={"Content-Type": "application/json"})
        assert response.status_code == 400, raw
        assert error_of(response)["type"] == "invalid_request_error"
    response = guarded.http.post("/chat/completions", json=chat("x"), headers={"X-Tauproxy-Scope": "no-trial"})
    assert response.status_code == 400
    assert guarded.stub.request_count == before


def test_oversized_bodies_are_413(guarded: Guarded) -> None:
    before = guarded.stub.request_count
    big = chat("x" * (MAX_BODY + 10))
    assert guarded.http.post("/chat/completions", json=big).status_code == 413

    def chunked() -> Iterator[bytes]:  # no Content-Length: the server must count as it reads
        data = json.dumps(big).encode()
        for start in range(0, len(data), 1000):
            yield data[start : start + 1000]

    response = guarded.http.post("/chat/completions", content=chunked())
    assert response.status_code == 413
    assert guarded.stub.request_count == before


@pytest.mark.parametrize("status", [500, 429])
def test_upstream_errors_pass_through_unrecorded(guarded: Guarded, status: int) -> None:
    entries = cassette_calls(guarded.cassette)
    before = guarded.stub.request_count
    guarded.stub.configure(fail_status=status, fail_count=1)
    response = guarded.http.post("/chat/completions", json=chat(f"fails with {status}"))
    assert response.status_code == status
    assert "stub injected failure" in error_of(response)["message"]
    assert guarded.stub.request_count == before + 1  # the server does not retry: the client decides
    assert cassette_calls(guarded.cassette) == entries
    # The failure was not recorded, so the same request goes live again and then is recorded.
    again = guarded.http.post("/chat/completions", json=chat(f"fails with {status}"))
    assert again.status_code == 200
    assert cassette_calls(guarded.cassette) == entries + 1


def test_upstream_timeout_is_504_unrecorded(guarded: Guarded) -> None:
    entries = cassette_calls(guarded.cassette)
    guarded.stub.configure(delay_s=2.0)
    try:
        response = guarded.http.post("/chat/completions", json=chat("slow", model="gpt-slow"))
    finally:
        guarded.stub.configure(delay_s=0)
    assert response.status_code == 504
    assert error_of(response)["type"] == "timeout_error"
    assert cassette_calls(guarded.cassette) == entries


def test_stats_count_hits_misses_and_errors(guarded: Guarded) -> None:
    errors = guarded.http.get(guarded.server.root + "/stats").json()["errors"]
    for status in (500, 429):  # this test's own upstream errors: it does not lean on the tests before it
        guarded.stub.configure(fail_status=status, fail_count=1)
        assert guarded.http.post("/chat/completions", json=chat(f"stats fails with {status}")).status_code == status
    before = guarded.http.get(guarded.server.root + "/stats").json()["per_model"].get("gpt-stub", {})
    scope = {"X-Tauproxy-Scope": "stats-task/0"}
    first = guarded.http.post("/chat/completions", json=chat("stats"), headers=scope)
    stats = guarded.http.get(guarded.server.root + "/stats").json()["per_model"]["gpt-stub"]
    assert first.status_code == 200
    assert stats["misses"] == before.get("misses", 0) + 1 and stats["live"] == before.get("live", 0) + 1
    # Same request in the same scope is occurrence 1, another sample: also a miss.
    guarded.http.post("/chat/completions", json=chat("stats"), headers=scope)
    stats = guarded.http.get(guarded.server.root + "/stats").json()
    assert stats["per_model"]["gpt-stub"]["misses"] == before.get("misses", 0) + 2
    assert stats["mode"] == "auto" and stats["errors"] == errors + 2  # the 500 and the 429


def test_unknown_paths_and_methods_answer_json(guarded: Guarded) -> None:
    assert error_of(guarded.http.get("/nope")) and guarded.http.get("/nope").status_code == 404
    response = guarded.http.get("/chat/completions")
    assert response.status_code == 405 and error_of(response)


def test_binds_loopback_by_default(guarded: Guarded) -> None:
    assert guarded.server.url.startswith("http://127.0.0.1:")
    port = int(guarded.server.url.rsplit(":", 1)[1].split("/")[0])
    with socket.socket() as probe:
        probe.settimeout(1)
        assert probe.connect_ex(("127.0.0.1", port)) == 0


def start_replayer(guarded: Guarded, directory: Path) -> ServeProcess:
    """A fresh server in replay mode on the guarded server's cassette, where that one's answers were
    recorded before it answered. Its upstream map routes to the stub: replay must still never go out."""
    routes = {"gpt-stub": {"model": "openai/stub", "api_base": guarded.stub.url}}
    upstream_map = write_upstream_map(directory / "replay-upstream.json", routes)
    return start_serve(
        "--cassette", str(guarded.cassette), "--record-mode", "replay", "--upstream-map", str(upstream_map)
    )


def test_replay_miss_is_404_with_the_reason_and_never_forwarded(guarded: Guarded, tmp_path: Path) -> None:
    assert guarded.http.post("/chat/completions", json=chat("known")).status_code == 200
    recorded_upstream = guarded.stub.request_count
    server = start_replayer(guarded, tmp_path)
    try:
        hit = httpx.post(server.url + "/chat/completions", json=chat("known"), timeout=30)
        miss = httpx.post(server.url + "/chat/completions", json=chat("unknown"), timeout=30)
        stats = httpx.get(server.root + "/stats", timeout=30).json()
    finally:
        server.stop()
    assert hit.status_code == 200
    assert miss.status_code == 404
    error = error_of(miss)
    assert error["code"] == "tauproxy_replay_miss" and error["message"].startswith("replay miss:")
    assert "nearest recorded call" in error["message"]
    assert guarded.stub.request_count == recorded_upstream  # replay never goes out
    assert (stats["hits"], stats["misses"], stats["live"]) == (1, 1, 0)


def test_hostile_bodies_get_json_400s_and_reach_nobody(guarded: Guarded) -> None:
    before = guarded.stub.request_count
    deep = b'{"model": "gpt-stub", "messages": [' + b"[" * 480 + b"]" * 480 + b"]}"
    nan = b'{"model": "gpt-stub", "messages": [{"role": "user", "content": "x"}], "temperature": NaN}'
    roleless = json.dumps({"model": "gpt-stub", "messages": [{"content": "x"}]}).encode()
    for raw, media in (
        (deep, "application/json"),
        (nan, "application/json"),
        (roleless, "application/json"),
        (json.dumps(chat("plain")).encode(), "text/plain"),
    ):
        response = guarded.http.post("/chat/completions", content=raw, headers={"Content-Type": media})
        assert response.status_code == 400, (raw[:40], response.text)
        assert error_of(response)["type"] == "invalid_request_error"
    assert guarded.stub.request_count == before


def test_the_bearer_scheme_is_case_insensitive(guarded: Guarded) -> None:
    response = httpx.post(
        guarded.server.url + "/chat/completions", json=chat("any case"), headers={"Authorization": f"bearer {TOKEN}"}
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("status", [429, 503])
def test_a_retry_after_a_failure_is_the_same_sample(guarded: Guarded, tmp_path: Path, status: int) -> None:
    """A failed attempt gives its occurrence back: the retry is recorded as occurrence 0, so a fresh
    server in replay mode answers it (it missed before: the retry was filed as occurrence 1)."""
    request = chat(f"retry me after a {status}")
    guarded.stub.configure(fail_status=status, fail_count=1)
    failed = guarded.http.post("/chat/completions", json=request)
    retried = guarded.http.post("/chat/completions", json=request)
    assert (failed.status_code, retried.status_code) == (status, 200)
    replayer = start_replayer(guarded, tmp_path)
    try:
        replayed = httpx.post(replayer.url + "/chat/completions", json=request, timeout=30)
    finally:
        replayer.stop()
    assert replayed.status_code == 200, replayed.text
    assert replayed.json()["choices"] == retried.json()["choices"]
