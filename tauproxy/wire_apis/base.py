"""What a wire API tells the rest of tauproxy: the `WireApi` protocol and the types it speaks in.

A wire API is one HTTP dialect clients use to ask a model (OpenAI chat completions, the OpenAI
Responses API, Anthropic's Messages API). Everything past the request's parsing is shared: one
key function (key.request_key), one sample identity, one cache layer (proxy/recorder.py), one
run log, one pricing. So an API has to say only this:

    name, paths        its name ("chat", "responses", ...) and the POST paths serve answers it on
                       (with and without /v1); serve's routes are made from the registry
                       (registry.py), one handler for all
    request(body, headers)
                       the checked request (a one-line RequestRejected otherwise) as an ApiRequest:
                       its keyed form, whether the client asked for a stream, a chat-shaped view of
                       its conversation, and what a pass-through upstream is sent
    answer(...)        the bytes a client gets for an answer, streamed (SSE, the event sequence the
                       real API sends) or not
    error_body(...)    an error answer in the API's own shape, or None for serve's (OpenAI's)
    view(answer)       a chat.completion-shaped view of an answer in the API's own shape: the reply
                       and usage every report, fingerprint and price reads
    upstream           how to reach the provider's own endpoint (chat's: an OpenAI-compatible
                       route's; other providers' chat calls go through litellm, chat_route.py)

The keyed form is chat-shaped ({model, messages, tools, tool_choice, **params}) because the key,
the cassette's message chains and the miss report's nearest-call search all work on that shape; a
non-chat API puts its name in key.WIRE_API_PARAM, so its keys never meet another API's. Each API's
module docstring says field by field what its keyed form holds and what it leaves out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from tauproxy.data_model.call import NativeRequest
from tauproxy.data_model.completion import Completion


class RequestRejected(Exception):
    """A request no API call is made for: one line saying what is wrong, and the HTTP status (400)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class ApiRequest:
    """One checked request of one wire API, in every form the rest of tauproxy needs.

    `body` is the client's parsed body as sent. `keyed` is the chat-shaped canonical request the key
    hashes (without connection settings; see the API's module). `stream` says whether the client
    asked for a streamed answer (never keyed: the upstream is asked non-streamed and a stream is
    built from the one answer). `conversation` is a chat-shaped view of the messages (system first
    when the API has one apart), for role recognition and run-log fingerprints. `native` is what a
    pass-through upstream is sent (None: chat completions, whose keyed body is what is sent).
    """

    api: str
    body: dict[str, Any]
    keyed: dict[str, Any]
    stream: bool
    conversation: list[dict[str, Any]]
    native: NativeRequest | None = None

    @property
    def model(self) -> str:
        return str(self.keyed["model"])

    def sent_as(self, raw: bytes) -> ApiRequest:
        """This request, told that the client sent it as `raw` (the bytes `body` was parsed from): a
        pass-through then sends those bytes as they came (NativeRequest.sent) when its body is the
        client's whole, rather than encoding it again (about 0.1-0.2 ms for a τ²-sized body)."""
        native = self.native
        if native is None or native.body != self.body:  # a field left out (stream): encoded anew
            return self
        return replace(self, native=replace(native, sent=raw))


@dataclass(frozen=True)
class WireAnswer:
    """What a client is sent for an answer: the body bytes and their media type."""

    content: bytes
    media_type: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class UpstreamEndpoint:
    """How a pass-through upstream of one wire API is reached.

    The base URL is the upstream map's api_base, else the environment variable `base_url_env`,
    else `default_base_url`; `path` is appended to it. An upstream map's model name may carry the
    litellm provider prefix (`provider_prefix`), which the provider's own endpoint does not know.
    The key is the map's api_key_env, else `key_env`: always serve's environment, never a client
    header. `auth_header` names the header the key goes in ("authorization" sends "Bearer <key>");
    `headers` are sent with every call (an API version).
    """

    path: str
    default_base_url: str
    base_url_env: str
    key_env: str
    auth_header: str = "authorization"
    headers: dict[str, str] = field(default_factory=dict)
    provider_prefix: str = ""  # an upstream map's litellm-style model name loses it ("openai/gpt-4.1")


class WireApi(Protocol):
    """One wire API (module docstring). Implementations are stateless and registered once."""

    @property
    def name(self) -> str: ...

    @property
    def paths(self) -> tuple[str, ...]: ...

    @property
    def upstream(self) -> UpstreamEndpoint | None: ...

    def request(self, body: Any, headers: Mapping[str, str]) -> ApiRequest:
        """The checked request of a parsed JSON body, or RequestRejected naming what is wrong.

        `headers` are the client's request headers (case-insensitive, as Starlette and httpx give
        them); an API reads only the few its wire format defines (an API version), never a key.
        """
        ...

    def answer(self, request: ApiRequest, completion: Completion) -> WireAnswer:
        """The bytes the client is sent: `completion`'s answer, streamed if the request asked."""
        ...

    def view(self, answer: dict[str, Any]) -> dict[str, Any]:
        """A chat.completion body (one choice, chat usage) for an answer in this API's own shape;
        ValueError if the answer has no reply."""
        ...

    def error_body(self, status: int, message: str) -> dict[str, Any] | None:
        """An error answer in this API's own shape (Anthropic's for the Messages API, which its SDK
        reads), or None for serve's OpenAI-shaped errors."""
        ...
