"""What an intercept refuses, each in one clear line: requests for anything but a model API path, a
mode it cannot work in, use after it closed; and that its local server is gone when it is."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tauproxy.errors import ConfigError
from tauproxy.interception import intercept
from tauproxy.proxy.modes import RecordMode
from tauproxy.store.cassette import Cassette


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    path = tmp_path / "cassette"
    Cassette.open(path, create=True).close()
    return path


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("GET", "https://api.openai.com/v1/files"),
        ("POST", "https://api.openai.com/v1/embeddings"),
        ("POST", "https://gateway.example.com/api/v1/chat/completions"),  # a base_url prefix no route has
        ("GET", "http://anything/healthz"),  # serve's own routes are not model APIs
        ("GET", "http://anything/stats"),
    ],
)
@pytest.mark.parametrize("library", ["httpx", "httpx2"])
def test_anything_but_a_model_api_path_is_refused_with_one_line(
    empty: Path, method: str, url: str, library: str
) -> None:
    with intercept(empty, "replay") as tp, tp.http_client(library) as client:
        assert type(client).__module__.split(".")[0] == library
        response = client.request(method, url)
    assert response.status_code == 421
    error = response.json()["error"]
    assert error["code"] == "tauproxy_not_intercepted"
    assert "POST /v1/chat/completions" in error["message"] and f"{method} {url}" in error["message"]
    assert "\n" not in error["message"]


def test_the_async_client_refuses_alike_and_answers_the_api_paths(empty: Path) -> None:
    async def both() -> tuple[httpx.Response, httpx.Response]:
        async with tp.async_http_client() as client:
            refused = await client.get("https://api.anthropic.com/v1/files")
            missed = await client.post(
                "https://api.openai.com/v1/chat/completions",
                json={"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]},
            )
            return refused, missed

    with intercept(empty, "replay") as tp:
        refused, missed = asyncio.run(both())
    assert refused.status_code == 421
    assert missed.status_code == 404 and missed.json()["error"]["code"] == "tauproxy_replay_miss"


def test_the_sync_client_misses_as_serve_does(empty: Path) -> None:
    with intercept(empty, "none") as tp, tp.http_client() as client:  # vcrpy's name for replay
        missed = client.post(
            "http://api.openai.com/chat/completions",
            json={"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert tp.stats.snapshot()["misses"] == 1
    assert missed.status_code == 404 and "replay miss" in missed.json()["error"]["message"]


def test_the_local_server_answers_on_loopback_until_the_intercept_closes(empty: Path) -> None:
    with intercept(empty, "replay") as tp:
        assert tp.base_url == f"{tp.url}/v1" and tp.url.startswith("http://127.0.0.1:")
        models = httpx.get(f"{tp.base_url}/models")
        assert models.status_code == 200 and models.json()["object"] == "list"
        url = tp.url
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/v1/models")


def test_the_default_library_is_httpx2_where_installed_and_an_unknown_one_is_one_line(empty: Path) -> None:
    with intercept(empty, "replay") as tp:
        assert type(tp.http_client()).__module__.startswith("httpx2")
        assert type(tp.async_http_client()).__module__.startswith("httpx2")
        with pytest.raises(ConfigError, match="unknown HTTP library 'requests' \\(choose from: httpx, httpx2\\)"):
            tp.http_client("requests")


def test_a_closed_intercept_says_so(empty: Path) -> None:
    with intercept(empty, "replay") as tp:
        client = tp.http_client()
    with pytest.raises(ConfigError, match="intercept is closed"):
        client.get("https://api.openai.com/v1/models")
    with pytest.raises(ConfigError, match="intercept is closed"):
        tp.http_client()
    tp.close()  # again: nothing happens


@pytest.mark.parametrize(
    ("cassette", "mode", "message"),
    [
        (None, "replay", "mode replay needs a cassette"),
        (None, "rewrite", "mode rewrite needs a cassette"),
        ("c", "sometimes", "unknown record mode 'sometimes'"),
        ("missing", "replay", "no cassette at"),
    ],
)
def test_a_mode_it_cannot_work_in_is_one_line(tmp_path: Path, cassette: str | None, mode: str, message: str) -> None:
    with pytest.raises(Exception, match=message) as caught:
        intercept(tmp_path / cassette if cassette else None, mode)
    assert "\n" not in str(caught.value)


def test_once_records_an_empty_cassette_and_off_needs_none(tmp_path: Path) -> None:
    with intercept(tmp_path / "new", "once") as tp:
        assert tp.mode is RecordMode.RECORD
    with intercept(None, "off") as tp:
        assert tp.mode is RecordMode.OFF and tp.cassette is None and tp.recorded_keys == set()


def test_an_upstream_route_it_cannot_read_is_one_line(empty: Path) -> None:
    with pytest.raises(ConfigError, match="model 'gpt-x' holds an api_key; name an environment variable") as caught:
        intercept(empty, "replay", upstream={"gpt-x": {"api_key": "sk-no"}})
    assert "\n" not in str(caught.value)


def test_the_python_api_exports_intercept_without_loading_it_at_import() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, tauproxy.api as api; loaded = 'uvicorn' in sys.modules; "
        "from tauproxy.api import ConnectionSettings, Intercept, intercept; "
        "from tauproxy.interception import intercept as direct; "
        "print(loaded, intercept is direct, Intercept.__name__, ConnectionSettings.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "Intercept", "ConnectionSettings"]
