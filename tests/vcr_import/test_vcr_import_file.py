"""vcrpy cassette files read with vcrpy's own loader, whatever layout vcrpy wrote them in."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import yaml

from tauproxy.errors import ConfigError
from tauproxy.vcr_import.vcr_file import read_vcr_file

pytest.importorskip("vcr")

REQUEST = {
    "method": "POST",
    "uri": "https://api.openai.com/v1/chat/completions?api-version=1",
    "body": '{"model": "m"}',
    "headers": {"Content-Type": ["application/json"], "X-Tauproxy-Role": ["user"]},
}


def test_the_current_layout_with_a_gzip_body(tmp_path: Path) -> None:
    body = gzip.compress(b'{"ok": true}')
    response = {
        "status": {"code": 200, "message": "OK"},
        "headers": {"Content-Encoding": ["gzip"], "content-type": ["application/json"]},
        "body": {"string": body},
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.dump({"interactions": [{"request": REQUEST, "response": response}], "version": 1}))
    (exchange,) = read_vcr_file(path)
    assert (exchange.method, exchange.path, exchange.host, exchange.status) == (
        "POST",
        "/v1/chat/completions",
        "api.openai.com",
        200,
    )
    assert exchange.request_body == b'{"model": "m"}' and exchange.response_body == b'{"ok": true}'
    assert exchange.request_headers == {"content-type": "application/json", "x-tauproxy-role": "user"}
    assert "content-encoding" not in exchange.response_headers
    assert exchange.where == f"{path}#1 POST https://api.openai.com/v1/chat/completions?…"


def test_the_httpx_layout_of_vcrpy_before_4(tmp_path: Path) -> None:
    response = {"status_code": 201, "headers": {"content-type": ["application/json"]}, "content": '{"ok": 1}'}
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"interactions": [{"request": REQUEST, "response": response}], "version": 1}))
    (exchange,) = read_vcr_file(path)
    assert (exchange.status, exchange.response_body) == (201, b'{"ok": 1}')


def test_a_cassette_from_before_vcrpy_1_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "ancient.yaml"
    path.write_text(yaml.dump([{"request": REQUEST, "response": {}}]))
    with pytest.raises(ConfigError, match="not a vcrpy cassette vcrpy can read"):
        read_vcr_file(path)
