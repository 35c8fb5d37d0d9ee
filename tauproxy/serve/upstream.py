"""The live side of `tauproxy serve`: one non-streaming litellm call per request, errors kept as HTTP.

Always non-streaming upstream: the cassette stores the assembled answer anyway, and streaming it
to the client afterwards (see `sse`) makes a streamed and a plain request the same recorded sample.
Runs in a worker thread (litellm's sync client), so the event loop keeps serving replays meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tauproxy.proxy.live import _litellm, litellm_completion
from tauproxy.redact import redact_text
from tauproxy.data_model.wire import usage_from_wire, usage_to_wire
from tauproxy.serve.config import UpstreamMap, UpstreamRoute
from tauproxy.serve.errors import HttpError

# Only these fields of the answer's message are kept: what a harness acts on. Provider extras
# (provider_specific_fields, function_call: null, ...) would make cassettes churn between versions.
MESSAGE_FIELDS = ("role", "content", "tool_calls", "refusal", "reasoning_content")


@dataclass(frozen=True)
class LiveAnswer:
    body: dict[str, Any]  # a chat.completion body, first choice only, normalised
    upstream_model: str  # the litellm model string it went to (used for pricing)
    latency_s: float


class Upstream:
    def __init__(self, routes: UpstreamMap) -> None:
        self._routes = routes

    def load(self) -> None:
        """Import litellm now. It takes seconds; done before the ready line so that "ready" means a
        first live call is as fast as any other (a client with a 5 s timeout would fail otherwise)."""
        _litellm()

    def route(self, model: str) -> UpstreamRoute:
        return self._routes.route(model)

    def complete(self, wire: dict[str, Any]) -> LiveAnswer:
        """Call the model behind `wire["model"]`; raises HttpError carrying the upstream's status."""
        litellm = _litellm()
        route = self.route(wire["model"])
        target = route.litellm_model(wire["model"])
        kwargs = {**wire, "model": target, "num_retries": route.num_retries, "max_retries": route.num_retries}
        api_key = route.api_key()
        for name, value in (
            ("api_base", route.api_base),
            ("api_key", api_key),
            ("api_version", route.api_version),
            ("timeout", route.timeout),
        ):
            if value is not None:
                kwargs[name] = value
        try:
            body, latency = litellm_completion(kwargs)
        except Exception as exc:
            raise upstream_error(exc, litellm, (api_key or "",)) from None
        return LiveAnswer(normalise_completion(body), target, latency)


def upstream_error(exc: Exception, litellm: Any, secrets: tuple[str, ...]) -> HttpError:
    """The HTTP error a client should see for a failed upstream call (timeouts become 504)."""
    message = redact_text(f"upstream {type(exc).__name__}: {exc}", secrets)
    if isinstance(exc, litellm.Timeout):
        return HttpError(504, message, "timeout_error", "upstream_timeout")
    status = getattr(exc, "status_code", None)
    if isinstance(exc, litellm.APIConnectionError) or not isinstance(status, int) or not 400 <= status <= 599:
        # litellm files a refused connection under 500; to a client it is a bad gateway.
        return HttpError(502, message, "server_error", "upstream_unreachable")
    headers: dict[str, str] = {}
    retry_after = _retry_after(exc)
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    return HttpError(status, message, headers=headers)


def _retry_after(exc: Exception) -> str | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get("retry-after")
    except Exception:  # a provider SDK's stand-in response object; the header is a courtesy
        return None
    return str(value) if value is not None else None


def normalise_completion(body: dict[str, Any]) -> dict[str, Any]:
    """A provider's answer reduced to the first choice and the fields the cassette keeps."""
    choices = body.get("choices") or []
    if not choices or not isinstance(choices[0].get("message"), dict):
        raise HttpError(502, "upstream answered without choices[0].message", "server_error", "upstream_malformed")
    choice = choices[0]
    message = {name: choice["message"][name] for name in MESSAGE_FIELDS if choice["message"].get(name) is not None}
    message.setdefault("role", "assistant")
    message.setdefault("content", None)
    if message.get("tool_calls"):
        message["tool_calls"] = [_tool_call(call) for call in message["tool_calls"]]
    return {
        "id": body.get("id"),
        "object": "chat.completion",
        "created": body.get("created"),
        "model": body.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": choice.get("finish_reason")}],
        "usage": usage_to_wire(usage_from_wire(body.get("usage"))),
    }


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {
        "id": call.get("id"),
        "type": call.get("type") or "function",
        "function": {"name": function.get("name"), "arguments": function.get("arguments")},
    }
