"""A call's answer as transports give it (`Completion`), and a live call ready to record (`CallRecording`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict

from tauproxy.data_model.call import CallRole, CallSource, Cost, ModelCall, ModelResponse, Usage
from tauproxy.data_model.key import SampleIdentity
from tauproxy.data_model.wire import response_from_wire, usage_from_wire

# A recorded call's latency is kept to 10 ms: model calls take seconds, finer digits are jitter, and a
# cassette carries one per call, in git, where random digits do not compress (bench/cassette_size.py).
# Rounded once, here, so a live run and its replay report the same latency.
LATENCY_DECIMALS = 2


@dataclass(frozen=True)
class Completion:
    """A transport's answer: the chat.completion `body` (first choice), where it came from, and,
    once the cache layer has priced it, its cost.

    `raw_body` is the upstream's answer exactly as it sent it (JSON text), for calls whose clients
    are answered with the upstream's own bytes (the Responses API, ..., and chat completions passed
    through to an OpenAI-compatible upstream); `body` is then its chat-shaped view (reply, usage),
    which keys, pricing, reports and fingerprints read. None for chat completions through litellm,
    whose clients are answered from `body`. `content_type` is the Content-Type the upstream sent
    those bytes with, when it was not plain application/json (what a client is answered with then).
    """

    body: dict[str, Any]
    source: CallSource
    latency_s: float = 0.0
    cost: Cost | None = None
    raw_body: str | None = None
    content_type: str | None = None

    @cached_property
    def response(self) -> ModelResponse:
        return response_from_wire(self.body)

    @cached_property
    def usage(self) -> Usage:
        return usage_from_wire(self.body.get("usage"))


class CallRecording(BaseModel):
    """One live call to append to a cassette, whole: what `Cassette.record` takes.

    The thread path writes it at once; a Ray worker returns it to the driver, the single writer.
    It holds the request body without connection settings, so it can travel between processes
    without carrying a key.
    """

    model_config = ConfigDict(frozen=True)

    wire: dict[str, Any]
    identity: SampleIdentity
    role: CallRole
    call_index: int
    response_body: dict[str, Any]
    usage: Usage
    cost_usd: float | None
    price_source: str | None
    latency_s: float
    raw_body: str | None = None  # Completion.raw_body: stored as given, answered byte for byte
    content_type: str | None = None  # Completion.content_type: answered with it

    @classmethod
    def of(cls, call: ModelCall, completion: Completion, cost: Cost) -> CallRecording:
        return cls(
            wire=call.wire,
            identity=call.identity,
            role=call.role,
            call_index=call.call_index,
            response_body=completion.body,
            usage=completion.usage,
            cost_usd=cost.usd,
            price_source=cost.source,
            latency_s=round(completion.latency_s, LATENCY_DECIMALS),
            raw_body=completion.raw_body,
            content_type=completion.content_type,
        )
