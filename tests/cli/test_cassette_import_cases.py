"""`tauproxy cassette import` case by case, from vcrpy cassette files written here in vcrpy's own
layout: what is imported (and answers a strict replay through serve), what is listed and left out,
and the one-line refusals."""

from __future__ import annotations

import asyncio
import gzip
import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from conftest import invoke_cli

from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import Pricing
from tauproxy.serve.app import ServeApp
from tauproxy.serve.completions import CompletionService
from tauproxy.store.cassette import Cassette

pytest.importorskip("vcr")

URL = "https://api.openai.com/v1/chat/completions"


def request(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": text}], **extra}


def answer(text: str, ident: str = "chatcmpl-1") -> dict[str, Any]:
    return {
        "id": ident,
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4.1-mini-2025-04-14",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }


def interaction(
    body: bytes | dict[str, Any],
    response: bytes | dict[str, Any],
    *,
    uri: str = URL,
    method: str = "POST",
    status: int = 200,
    headers: dict[str, str] | None = None,
    response_headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One interaction as vcrpy writes it (its serializer turns bytes bodies into text)."""
    sent = json.dumps(body).encode() if isinstance(body, dict) else body
    got = json.dumps(response).encode() if isinstance(response, dict) else response
    return {
        "request": {
            "method": method,
            "uri": uri,
            "body": sent.decode("latin-1") if method == "POST" else None,
            "headers": {"content-type": ["application/json"], **{k: [v] for k, v in (headers or {}).items()}},
        },
        "response": {
            "status": {"code": status, "message": "OK" if status == 200 else "Error"},
            "headers": {
                "content-type": ["application/json"],
                **{k: [v] for k, v in (response_headers or {}).items()},
            },
            "body": {"string": got if got[:2] == b"\x1f\x8b" else got.decode()},
        },
    }


def write_vcrpy(path: Path, interactions: list[dict[str, Any]]) -> Path:
    data = {"interactions": interactions, "version": 1}
    if path.suffix == ".json":
        path.write_text(json.dumps(data))
    else:
        path.write_text(yaml.dump(data))
    return path


def import_json(*args: str) -> dict[str, Any]:
    result = invoke_cli("cassette", "import", *args, "--json")
    return dict(json.loads(result.stdout))


def replay(cassette: Path, body: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
    service = CompletionService(RecordMode.REPLAY, Cassette.open(cassette, create=False), None, Pricing())
    app = ServeApp(service, auth_token=None, max_body_bytes=1 << 20, read_timeout_s=30, model_names=list, describe={})

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app.starlette())
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            return await client.post("/v1/chat/completions", json=body, headers=headers or {})

    return asyncio.run(send())


def reasons(report: dict[str, Any]) -> list[str]:
    return [item["reason"] for item in report["left_out"]]


def test_a_gzip_answer_imports_and_replays_as_recorded(tmp_path: Path) -> None:
    compressed = gzip.compress(json.dumps(answer("hello")).encode())
    file = write_vcrpy(
        tmp_path / "gz.yaml",
        [interaction(request("hi"), compressed, response_headers={"content-encoding": "gzip"})],
    )
    report = import_json(str(file), "--into", str(tmp_path / "c"))
    assert (report["imported"], report["left_out"]) == (1, [])
    replayed = replay(tmp_path / "c", request("hi"))
    assert replayed.status_code == 200 and replayed.json() == answer("hello")


def test_a_prefixed_base_url_is_still_the_chat_route(tmp_path: Path) -> None:
    file = write_vcrpy(
        tmp_path / "prefixed.json",
        [interaction(request("hi"), answer("hello"), uri="http://gateway.local/openai/v1/chat/completions?x=1")],
    )
    assert import_json(str(file), "--into", str(tmp_path / "c"))["imported"] == 1
    assert replay(tmp_path / "c", request("hi")).json() == answer("hello")


def test_what_cannot_be_keyed_is_listed_one_line_each_and_left_out(tmp_path: Path) -> None:
    file = write_vcrpy(
        tmp_path / "mixed.yaml",
        [
            interaction(request("ok"), answer("fine")),
            interaction(b'{"model": "gpt-4.1-mini", "messages": [', answer("x")),
            interaction(request("bad answer"), b"<html>502 Bad Gateway</html>"),
            interaction(
                request("cut stream"), b"data: {not json\n\n", response_headers={"content-type": "text/event-stream"}
            ),
            interaction({"q": 1}, {"ok": True}, uri="https://api.github.com/graphql?access_token=secret"),
            interaction(b"", {"data": []}, uri="https://api.openai.com/v1/models", method="GET"),
            interaction(request("slow down"), {"error": {"message": "rate limited"}}, status=429),
            interaction(request("no choices"), {"id": "x", "choices": []}),
        ],
    )
    result = invoke_cli("cassette", "import", str(file), "--into", str(tmp_path / "c"))
    lines = result.stdout.splitlines()
    assert lines[-1].startswith("imported 1 of 8 interactions from 1 file(s)") and lines[-1].endswith("7 left out)")
    assert [line.split(": ", 2)[1].split()[0] for line in lines[:-1]] == [f"{file}#{n}" for n in range(2, 9)]
    why = [line.split(": ", 2)[2] for line in lines[:-1]]
    assert why[0].startswith("request refused by serve (400: request body is not valid JSON")
    assert why[1] == "response cannot be read: response body is not JSON"
    assert why[2].startswith("response cannot be read: stream event is not JSON")
    assert why[3] == why[4] == "not a model call tauproxy serve answers (no POST route for this path)"
    assert "secret" not in result.stdout and f"{file}#5 POST https://api.github.com/graphql?…" in lines[3]
    assert why[5] == "failed call (HTTP 429): nothing to replay"
    assert why[6] == "response cannot be read: response has no choices[0].message"
    assert len(Cassette.open(tmp_path / "c", create=False)) == 1


def test_a_recorded_stream_is_assembled_into_the_answer(tmp_path: Path) -> None:
    chunks = [
        {
            "id": "c9",
            "created": 5,
            "model": "m",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
        },
        {"id": "c9", "created": 5, "model": "m", "choices": [{"index": 0, "delta": {"content": "Hel"}}]},
        {"id": "c9", "created": 5, "model": "m", "choices": [{"index": 0, "delta": {"content": "lo"}}]},
        {
            "id": "c9",
            "created": 5,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
                        ]
                    },
                }
            ],
        },
        {
            "id": "c9",
            "created": 5,
            "model": "m",
            "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"a":'}}]}}],
        },
        {
            "id": "c9",
            "created": 5,
            "model": "m",
            "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}}],
        },
        {"id": "c9", "created": 5, "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"id": "c9", "created": 5, "model": "m", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
    ]
    sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    body = request("stream it", stream=True, stream_options={"include_usage": True})
    file = write_vcrpy(
        tmp_path / "stream.yaml",
        [interaction(body, sse.encode(), response_headers={"content-type": "text/event-stream"})],
    )
    assert import_json(str(file), "--into", str(tmp_path / "c"))["imported"] == 1
    replayed = replay(tmp_path / "c", request("stream it")).json()  # `stream` is not in the key
    message = replayed["choices"][0]["message"]
    assert message["content"] == "Hello" and replayed["choices"][0]["finish_reason"] == "tool_calls"
    assert message["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
    ]
    assert (replayed["id"], replayed["usage"]["total_tokens"]) == ("c9", 7)


def test_scope_and_role_headers_sent_while_recording_key_as_serve_keys_them(tmp_path: Path) -> None:
    headers = {"X-Tauproxy-Scope": "airline/7/2", "X-Tauproxy-Role": "user"}
    file = write_vcrpy(tmp_path / "scoped.yaml", [interaction(request("hi"), answer("hello"), headers=headers)])
    assert import_json(str(file), "--into", str(tmp_path / "c"))["imported"] == 1
    (entry,) = Cassette.open(tmp_path / "c", create=False).entries()
    assert (entry.task_id, entry.trial, entry.role) == ("airline/7", 2, "user")
    assert replay(tmp_path / "c", request("hi")).status_code == 404  # without the scope: another sample
    assert replay(tmp_path / "c", request("hi"), headers).json() == answer("hello")


def test_an_identical_request_repeated_in_one_file_is_the_first_one_s_sample(tmp_path: Path) -> None:
    seeded = request("draw", seed=1)
    file = write_vcrpy(
        tmp_path / "repeat.yaml",
        [interaction(seeded, answer("one", "a")), interaction(seeded, answer("two", "b"))],
    )
    report = import_json(str(file), "--into", str(tmp_path / "c"))
    assert report["imported"] == 1
    assert reasons(report) == ["the same sample as #1 of this file: serve answers both with #1's answer"]
    assert replay(tmp_path / "c", seeded).json() == answer("one", "a")


def test_a_fresh_server_replaying_a_file_in_order_answers_as_the_import_said(tmp_path: Path) -> None:
    """Whatever serve's rule for requests without a scope header, the import follows it: each imported
    interaction replays its own answer, and one left out as the same sample gets that sample's."""
    unseeded, seeded = request("draw"), request("draw", seed=1)
    sent = [unseeded, unseeded, seeded, seeded, unseeded]
    answers = [answer(f"draw {n}", f"c{n}") for n in range(1, 6)]
    file = write_vcrpy(tmp_path / "draws.yaml", [interaction(b, a) for b, a in zip(sent, answers, strict=True)])
    report = import_json(str(file), "--into", str(tmp_path / "c"))
    same_as = {item["where"].split()[0].rsplit("#", 1)[1]: item["reason"] for item in report["left_out"]}
    assert report["imported"] + len(same_as) == len(sent)
    service = CompletionService(RecordMode.REPLAY, Cassette.open(tmp_path / "c", create=False), None, Pricing())
    app = ServeApp(service, auth_token=None, max_body_bytes=1 << 20, read_timeout_s=30, model_names=list, describe={})

    async def replay_in_order() -> list[dict[str, Any]]:
        transport = httpx.ASGITransport(app=app.starlette())
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            return [(await client.post("/v1/chat/completions", json=body)).json() for body in sent]

    for number, replayed in enumerate(asyncio.run(replay_in_order()), start=1):
        reason = same_as.get(str(number))
        expected = number if reason is None else int(reason.split("#", 1)[1].split()[0])
        assert replayed == answers[expected - 1], (number, reason)


def test_an_import_keeps_what_the_cassette_already_holds(tmp_path: Path) -> None:
    first = write_vcrpy(tmp_path / "first.yaml", [interaction(request("hi"), answer("first"))])
    second = write_vcrpy(tmp_path / "second.yaml", [interaction(request("hi"), answer("second"))])
    report = import_json(str(first), str(second), "--into", str(tmp_path / "c"))
    assert (report["imported"], report["already_there"], report["left_out"]) == (1, 1, [])
    assert replay(tmp_path / "c", request("hi")).json() == answer("first")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such vcrpy cassette file"),
        (b"", "empty file, not a vcrpy cassette"),
        (b"a: 1\n", "no vcrpy interactions list: not a vcrpy cassette"),
        (b"interactions: [\n", "not a vcrpy cassette vcrpy can read"),
        (bytes(range(256)), "not a vcrpy cassette vcrpy can read"),
    ],
)
def test_a_file_that_is_not_a_vcrpy_cassette_is_one_line_and_exit_2(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    good = write_vcrpy(tmp_path / "good.yaml", [interaction(request("hi"), answer("hello"))])
    bad = tmp_path / "bad.yaml"
    if content is not None:
        bad.write_bytes(content)
    result = invoke_cli("cassette", "import", str(good), str(bad), "--into", str(tmp_path / "c"), check=False)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {bad}: {message}")
    assert not (tmp_path / "c").exists()  # every file is read before anything is written


def test_without_vcrpy_the_command_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = write_vcrpy(tmp_path / "x.yaml", [])
    for name in [m for m in sys.modules if m == "vcr" or m.startswith("vcr.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "vcr", None)  # an import of it now fails as if it were not installed
    result = invoke_cli("cassette", "import", str(file), "--into", str(tmp_path / "c"), check=False)
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == "error: reading vcrpy cassettes needs vcrpy: pip install vcrpy (it is in tauproxy's dev extra)"
    )


def test_an_imported_call_is_priced_as_serve_prices_a_live_one(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4.1-mini": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}}))
    file = write_vcrpy(tmp_path / "priced.yaml", [interaction(request("hi"), answer("hello"))])
    invoke_cli("cassette", "import", str(file), "--into", str(tmp_path / "c"), "--prices", str(prices))
    (entry,) = Cassette.open(tmp_path / "c", create=False).entries()
    assert entry.cost_usd == pytest.approx(5 * 1e-6 + 2 * 2e-6)  # the recorded usage: 5 prompt, 2 completion
    assert entry.price_source is not None and entry.price_source.startswith("prices file prices.json@")
