"""The transport contract: every way of answering a model request is a Transport.

Live providers, scripted models and the cassette (which wraps another transport) all implement the
same one method, so the engine is handed a transport and never knows whether caching exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from tauproxy.data_model.call import CallContext, CallSource, ModelRequest, ModelResponse


@dataclass(frozen=True)
class PreparedCall:
    """A request with its identity worked out once: wire body, key and sample key."""

    request: ModelRequest
    wire: dict[str, Any]
    context: CallContext
    key: str
    sample_key: str
    occurrence: int


class Completion(BaseModel):
    response: ModelResponse
    source: CallSource
    latency_s: float = 0.0


class Transport(Protocol):
    def complete(self, call: PreparedCall) -> Completion: ...

    def close(self) -> None: ...
