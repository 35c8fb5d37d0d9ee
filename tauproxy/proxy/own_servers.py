"""The servers this process runs for its own clients (an intercept's local base_url), so a live call is
never sent back into one of them.

`tauproxy_sdk_env` points OPENAI_BASE_URL and ANTHROPIC_BASE_URL at an intercept's local server for
the code under test. The live side reads the same variables when a route names no api_base (litellm
for chat, the pass-through for the other wire APIs): without this guard a call it should send to the
provider would come back to the intercept, which would send it on again, forever. A base URL that is
one of ours is taken as unset, and the provider's default endpoint is used instead.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_servers: set[str] = set()


def _normal(url: str) -> str:
    return url.strip().rstrip("/").removesuffix("/v1").rstrip("/")


def add(url: str) -> None:
    with _lock:
        _servers.add(_normal(url))


def remove(url: str) -> None:
    with _lock:
        _servers.discard(_normal(url))


def is_ours(url: str | None) -> bool:
    """Whether `url` (with or without /v1) is a server of this process."""
    if not url:
        return False
    with _lock:
        return _normal(url) in _servers
