"""Which HTTP library an intercept's clients are made of: httpx, or its fork httpx2.

The SDKs moved: the anthropic SDK (2.x) takes only an `httpx2.Client`, the openai SDK (3.x) takes an
`httpx2.Client` or a legacy `httpx.Client`, and older SDKs take only `httpx`. The two libraries share
one API (Client, Request, Response, ByteStream, ASGITransport), so the transports here are written
once against that API and handed the library module; by default it is httpx2 when it is installed
(whatever installed it also sends through it), else httpx.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import httpx

from tauproxy.errors import ConfigError

__all__ = ["LIBRARIES", "http_library"]

LIBRARIES = ("httpx", "httpx2")


def http_library(name: str | None = None) -> ModuleType:
    """The library `name` names; with None, httpx2 if it is installed, else httpx."""
    if name is None:
        try:
            return importlib.import_module("httpx2")
        except ImportError:
            return httpx
    if name not in LIBRARIES:
        raise ConfigError(f"tauproxy intercept: unknown HTTP library {name!r} (choose from: {', '.join(LIBRARIES)})")
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ConfigError(f"tauproxy intercept: {name} is not installed (pip install {name})") from None
