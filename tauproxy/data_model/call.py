"""One model call: the request the engine builds, the call with its identity, its answer, and what
is kept of it (in the cassette: `CallRecording`; in the results: `CallRecord`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tauproxy.data_model.key import SampleIdentity, TrialScope
from tauproxy.data_model.message import Message
from tauproxy.data_model.tool import ToolSchema

CallRole = Literal["agent", "user", "judge"]
CallSource = Literal["live", "shared", "replay"]


class ConnectionSettings(BaseModel):
    """How to reach a provider. Never part of the key, never written to disk."""

    model_config = ConfigDict(frozen=True)

    api_base: str | None = None
    api_key: str | None = Field(None, repr=False)  # a repr lands in logs and tracebacks
    api_version: str | None = None
    timeout: float | None = None
    num_retries: int | None = None
    extra_headers: dict[str, str] | None = Field(None, repr=False)


class ModelRequest(BaseModel):
    """What a model is asked. `params` holds every sampling parameter (temperature, seed, ...)."""

    model_config = ConfigDict(frozen=True)

    model: str
    messages: list[Message]
    tools: list[ToolSchema] | None = None
    tool_choice: str | dict[str, Any] | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    connection: ConnectionSettings = Field(default_factory=ConnectionSettings, exclude=True)

    @property
    def seed(self) -> int | None:
        seed = self.params.get("seed")
        return seed if isinstance(seed, int) else None


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0


class ModelResponse(BaseModel):
    """A model's answer: one assistant message plus what it cost in tokens."""

    message: Message
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    response_id: str | None = None
    response_model: str | None = None
    created: int | None = None


class CallRecord(BaseModel):
    """What the results keep of one call: enough to tell live from replayed and to cost it."""

    index: int
    role: CallRole
    model: str
    key: str
    sample_key: str
    source: CallSource
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    price_source: str | None = None
    latency_s: float = 0.0


@dataclass(frozen=True)
class Cost:
    """What a call cost in USD (None: unknown, never taken as 0) and where the price came from."""

    usd: float | None
    source: str


@dataclass(frozen=True)
class NativeRequest:
    """A request of a wire API other than chat completions, as its client sent it.

    `api` names the wire API ("responses", "messages"); `body` is the client's body without
    connection settings and with the stream flag off: what a pass-through upstream is sent, with
    `headers`, the few request headers its API passes on (an API version the client named; never a
    key). The call's `wire` is its keyed, chat-shaped form (tauproxy/wire_apis/ says field by field).
    `sent`: the client's own bytes, when `body` is all of what they hold (nothing was left out): a
    pass-through sends them as they came rather than encoding `body` again.
    """

    api: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    sent: bytes | None = None


@dataclass(frozen=True)
class ModelCall:
    """A request on its way to a model, with its identity worked out once: the one call type.

    `wire` is the OpenAI-shaped request body without connection settings (what is keyed and
    recorded). `request` is the typed request when the caller built one (in-process); transports
    that need it (scripted, local) only run in-process. `connection` says how to reach the
    provider and is never keyed or written. `upstream_model` is the model a proxy routes the call
    to, when that differs from the name asked for (serve's upstream map); pricing tries it first.
    `made_in` is the trial the call was made in when its identity names none (τ²-bench's own calls
    through the bridge are keyed as serve keys a request without a scope header): for reports only,
    never keyed or recorded. `native` is set for a call of another wire API than chat completions
    (the Responses API, ...): what its upstream is sent; None for chat.
    """

    wire: dict[str, Any]
    identity: SampleIdentity
    role: CallRole
    call_index: int
    request: ModelRequest | None = None
    connection: ConnectionSettings = field(default_factory=ConnectionSettings)
    upstream_model: str | None = None
    made_in: TrialScope | None = None
    native: NativeRequest | None = None

    @property
    def api(self) -> str:
        """The wire API the call speaks: "chat", or the native request's API."""
        return self.native.api if self.native is not None else "chat"

    @property
    def model(self) -> str:
        return str(self.wire["model"])

    @property
    def key(self) -> str:
        return self.identity.key

    @property
    def sample_key(self) -> str:
        return self.identity.sample_key

    @property
    def scope(self) -> TrialScope:
        return self.identity.scope

    @property
    def trial(self) -> TrialScope | None:
        """The trial the call belongs to: its scope, else the trial it was made in; None when unknown."""
        return self.scope if self.scope.names_a_trial else self.made_in

    @property
    def billed_as(self) -> tuple[str, ...]:
        """The model names to price the call by, best first."""
        if self.upstream_model is not None and self.upstream_model != self.model:
            return (self.upstream_model, self.model)
        return (self.model,)


def role_cost(records: list[CallRecord], role: str) -> float | None:
    """Sum of a role's costs; None (unknown) as soon as one call has no known price."""
    total = 0.0
    for record in records:
        if record.role != role:
            continue
        if record.cost_usd is None:
            return None
        total += record.cost_usd
    return total
