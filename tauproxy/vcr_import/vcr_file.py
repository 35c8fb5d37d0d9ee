"""Reading a vcrpy (or pytest-recording) cassette file with vcrpy's own loader.

vcrpy is imported here, when a file is read, and nowhere else: it is an optional dependency of
`tauproxy cassette import` only. The file is read by vcrpy's filesystem persister with the
serializer its suffix names (`.json`: vcrpy's JSON serializer; anything else: its YAML one, which is
vcrpy's default and what pytest-recording writes), so whatever vcrpy itself can replay is read the
same way, old httpx-stub layouts and compressed bodies included (decoded with vcrpy's
`decode_response`, as its own stubs do on playback).

What comes out is one `RecordedExchange` per interaction, in file order, as plain bytes and text:
nothing here knows what an API is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from tauproxy.errors import ConfigError

INSTALL_HINT = "pip install vcrpy (it is in tauproxy's dev extra)"


@dataclass(frozen=True)
class RecordedExchange:
    """One recorded HTTP interaction: the request as sent and the response as received (decoded)."""

    file: Path
    number: int  # 1-based, in file order: how a person finds it in the file
    method: str
    url: str
    request_headers: dict[str, str]  # lower-case names; the last value where a header repeats
    request_body: bytes
    status: int
    response_headers: dict[str, str]  # lower-case names; the last value where a header repeats
    response_body: bytes

    @property
    def host(self) -> str:
        return urlsplit(self.url).netloc

    @property
    def path(self) -> str:
        return urlsplit(self.url).path

    @property
    def where(self) -> str:
        """How a report names this interaction: `FILE#N METHOD URL`, the URL without its query string,
        which may hold a key (`?api-key=...`) that a recording did not filter."""
        parts = urlsplit(self.url)
        query = "?…" if parts.query else ""
        return f"{self.file}#{self.number} {self.method} {parts.scheme}://{parts.netloc}{parts.path}{query}"


def _vcr_modules() -> tuple[ModuleType, ModuleType, ModuleType, ModuleType]:
    try:
        from vcr import filters
        from vcr.persisters import filesystem
        from vcr.serializers import jsonserializer, yamlserializer
    except ImportError:
        raise ConfigError(f"reading vcrpy cassettes needs vcrpy: {INSTALL_HINT}") from None
    return filters, filesystem, jsonserializer, yamlserializer


def read_vcr_file(path: Path) -> list[RecordedExchange]:
    """Every interaction of one vcrpy cassette file, in order; a ConfigError (one line) if the file
    is missing or vcrpy cannot read it."""
    filters, filesystem, jsonserializer, yamlserializer = _vcr_modules()
    serializer = jsonserializer if path.suffix.lower() == ".json" else yamlserializer
    if path.is_dir():
        raise ConfigError(f"{path}: a directory, not a vcrpy cassette file")
    if not path.is_file():
        raise ConfigError(f"{path}: no such vcrpy cassette file")
    try:
        loaded = filesystem.FilesystemPersister.load_cassette(path, serializer)
    except filesystem.CassetteNotFoundError:
        raise ConfigError(f"{path}: empty file, not a vcrpy cassette") from None
    except (KeyError, TypeError):  # parsed, but not vcrpy's {"interactions": [...]} layout
        raise ConfigError(f"{path}: no vcrpy interactions list: not a vcrpy cassette") from None
    except Exception as exc:  # vcrpy raises what its serializers raise: yaml, json, KeyError, ValueError
        raise ConfigError(f"{path}: not a vcrpy cassette vcrpy can read ({_one_line(exc)})") from None
    requests, responses = loaded[0], loaded[1]
    return [
        _exchange(path, number, request, filters.decode_response(_modern(response)))
        for number, (request, response) in enumerate(zip(requests, responses, strict=True), start=1)
    ]


def _modern(response: dict[str, Any]) -> dict[str, Any]:
    """A response in vcrpy's current layout (status, headers, body.string); httpx cassettes written by
    vcrpy before 4.x kept `status_code` and `content`, which vcrpy's httpx stub restructures so."""
    if "status_code" not in response:
        return response
    content = response.get("content")
    return {
        "status": {"code": response["status_code"]},
        "headers": response.get("headers") or {},
        "body": {"string": content.encode("utf-8") if isinstance(content, str) else content},
    }


def _exchange(path: Path, number: int, request: Any, response: dict[str, Any]) -> RecordedExchange:
    status = response.get("status") or {}
    body = response.get("body") or {}
    return RecordedExchange(
        file=path,
        number=number,
        method=str(request.method).upper(),
        url=str(request.uri),
        request_headers=_headers(dict(request.headers)),
        request_body=_bytes(getattr(request, "body_bytes", None) or request.body),
        status=int(status.get("code") or 0),
        response_headers=_headers(response.get("headers") or {}),
        response_body=_bytes(body.get("string") if isinstance(body, dict) else body),
    )


def _headers(raw: dict[str, Any]) -> dict[str, str]:
    """Headers with lower-case names; vcrpy stores a list of values per name (the last one counts)."""
    headers: dict[str, str] = {}
    for name, value in raw.items():
        if isinstance(value, list | tuple):
            if not value:
                continue
            value = value[-1]
        headers[str(name).lower()] = value.decode("latin-1") if isinstance(value, bytes) else str(value)
    return headers


def _bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if hasattr(value, "read"):  # a file-like body, which vcrpy rebuilds as BytesIO
        data = value.read()
        return data if isinstance(data, bytes) else str(data).encode("utf-8")
    if isinstance(value, list):  # an iterator body, kept as its chunks
        return b"".join(v if isinstance(v, bytes) else str(v).encode("utf-8") for v in value)
    return str(value).encode("utf-8")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"
