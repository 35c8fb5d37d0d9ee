"""What `tauproxy serve` is told: its settings and the upstream map that routes model names.

The upstream map is a YAML or JSON object from the model name a client asks for to where the call
really goes:

    gpt-stub:
      model: openai/stub            # the litellm model string; "{model}" is replaced by the asked name
      api_base: http://127.0.0.1:9000/v1
      api_key_env: STUB_API_KEY     # the NAME of an environment variable, never the key itself
    "*":                            # optional: every name not listed
      model: openai/{model}

Keys come only from the environment: a map that holds `api_key` (or any other secret-looking
field) is refused, so a key can never be committed next to a cassette.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from tauproxy.data_model.call import ConnectionSettings
from tauproxy.errors import ConfigError
from tauproxy.proxy.modes import RecordMode
from tauproxy.serve.identity import DEFAULT_SESSION_IDLE_S
from tauproxy.structured_file import read_mapping_file
from tauproxy.validation import first_problem

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MAX_PORT = 65535
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
# How long a client may take to send a request's headers, and then its body: a harness on the same
# machine sends either in milliseconds, so only a stalled or hostile client ever meets it.
DEFAULT_READ_TIMEOUT_S = 30.0
DEFAULT_UPSTREAM_TIMEOUT_S = 120.0
WILDCARD = "*"
MODEL_PLACEHOLDER = "{model}"


class UpstreamRoute(BaseModel):
    """Where one model name goes. Unset fields fall back to litellm's own defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    api_base: str | None = None
    api_key_env: str | None = None
    api_version: str | None = None
    # A hung upstream must not hold a request (and a SIGTERM) for litellm's default of 600 s.
    timeout: float = DEFAULT_UPSTREAM_TIMEOUT_S
    # The client owns the retry policy (it sees our status codes); retrying here too would multiply
    # its retries and hide rate limits from it.
    num_retries: int = 0

    def litellm_model(self, asked: str) -> str:
        if self.model is None:
            return asked
        return self.model.replace(MODEL_PLACEHOLDER, asked)

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def connection(self) -> ConnectionSettings:
        """Where calls of this route go; the key is read from the environment at each call."""
        return ConnectionSettings(
            api_base=self.api_base,
            api_key=self.api_key(),
            api_version=self.api_version,
            timeout=self.timeout,
            num_retries=self.num_retries,
        )


@dataclass(frozen=True)
class UpstreamMap:
    routes: dict[str, UpstreamRoute]

    def route(self, model: str) -> UpstreamRoute:
        return self.routes.get(model) or self.routes.get(WILDCARD) or UpstreamRoute()

    def names(self) -> list[str]:
        return sorted(name for name in self.routes if name != WILDCARD)

    def missing_key_envs(self) -> list[str]:
        return sorted({r.api_key_env for r in self.routes.values() if r.api_key_env and not r.api_key()})


def load_upstream_map(path: Path | None) -> UpstreamMap:
    if path is None:
        return UpstreamMap({})
    return parse_upstream_map(read_mapping_file(path, "upstream map (model names to routes)"), str(path))


def parse_upstream_map(raw: Mapping[str, Any], origin: str) -> UpstreamMap:
    """The routes of an upstream map read from `origin` (a file, or the code that gave them)."""
    routes: dict[str, UpstreamRoute] = {}
    for name, entry in raw.items():
        if isinstance(entry, UpstreamRoute):
            routes[str(name)] = entry
            continue
        if isinstance(entry, Mapping) and "api_key" in entry:
            raise ConfigError(
                f"{origin}: model {name!r} holds an api_key; name an environment variable with api_key_env instead"
            )
        try:
            routes[str(name)] = UpstreamRoute.model_validate(entry)
        except ValidationError as exc:
            field, message = first_problem(exc, "route")
            raise ConfigError(f"{origin}: model {name!r}, field {field}: {message}") from None
    return UpstreamMap(routes)


@dataclass(frozen=True)
class ServeConfig:
    """Every setting of one server. `mode` is already resolved (never ONCE)."""

    cassette: Path | None
    mode: RecordMode
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    upstream: UpstreamMap = field(default_factory=lambda: UpstreamMap({}))
    auth_token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S
    run_log: Path | None = None
    prices: Path | None = None
    session_idle_s: float = DEFAULT_SESSION_IDLE_S  # 0: only a restart or a client begins a session

    def __post_init__(self) -> None:
        if self.mode == RecordMode.ONCE:
            raise ConfigError("resolve record mode 'once' before building a ServeConfig")
        if self.cassette is None and self.mode != RecordMode.OFF:
            raise ConfigError(f"--cassette is required with --record-mode {self.mode.value}")
        if not 0 <= self.port <= MAX_PORT:
            raise ConfigError(f"--port {self.port} is not a port: give 0 to {MAX_PORT} (0 picks a free one)")
        if self.max_body_bytes <= 0:
            raise ConfigError("--max-body-bytes must be positive")
        if not (math.isfinite(self.read_timeout_s) and self.read_timeout_s > 0):
            raise ConfigError(f"--read-timeout must be a positive number of seconds, got {self.read_timeout_s}")
        if not (math.isfinite(self.session_idle_s) and self.session_idle_s >= 0):
            raise ConfigError(f"--session-idle must be 0 (off) or a number of seconds, got {self.session_idle_s}")
        if self.auth_token is not None and not self.auth_token.strip():
            raise ConfigError("--auth-token must not be empty")

    @property
    def goes_live(self) -> bool:
        return self.mode != RecordMode.REPLAY
