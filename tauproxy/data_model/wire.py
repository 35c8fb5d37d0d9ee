"""Conversions between tauproxy's messages and the OpenAI chat-completions wire shape.

Every chat.completion body tauproxy produces is built by `completion_body`, and every body a
provider sends is reduced by `normalise_response`: one shape, defined once.
"""

from __future__ import annotations

import json
from typing import Any

from tauproxy.data_model.call import ModelRequest, ModelResponse, Usage
from tauproxy.data_model.key import canonical_arguments, without_connection_settings
from tauproxy.data_model.message import Message, ToolCall


def message_to_wire(message: Message) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": canonical_arguments(call.arguments)},
            }
            for call in message.tool_calls
        ]
    if message.role == "tool":
        wire["tool_call_id"] = message.tool_call_id
    return wire


def request_to_wire(request: ModelRequest) -> dict[str, Any]:
    """The request body a provider would get, without connection settings."""
    body: dict[str, Any] = {
        "model": request.model,
        "messages": [message_to_wire(m) for m in request.messages],
    }
    if request.tools:
        body["tools"] = [tool.model_dump(mode="json") for tool in request.tools]
    if request.tool_choice is not None:
        body["tool_choice"] = request.tool_choice
    body.update(without_connection_settings(request.params))
    return body


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Arguments from a provider, which may be text; text that is not a JSON object is kept, flagged."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, json.JSONDecodeError):
        return {"__unparsed_arguments__": str(raw)}
    return value if isinstance(value, dict) else {"__unparsed_arguments__": str(raw)}


def message_from_wire(wire: dict[str, Any], requestor: str = "assistant") -> Message:
    calls = None
    if wire.get("tool_calls"):
        calls = [
            ToolCall(
                id=str(call.get("id") or f"call_{index}"),
                name=str((call.get("function") or {}).get("name") or ""),
                arguments=parse_arguments((call.get("function") or {}).get("arguments")),
                requestor="user" if requestor == "user" else "assistant",
            )
            for index, call in enumerate(wire["tool_calls"])
        ]
    content = wire.get("content")
    if isinstance(content, list):  # content parts: keep the text
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return Message(role="assistant", content=content or None, tool_calls=calls)


def usage_from_wire(raw: dict[str, Any] | None) -> Usage:
    if not raw:
        return Usage()
    prompt_details = raw.get("prompt_tokens_details") or {}
    completion_details = raw.get("completion_tokens_details") or {}
    prompt = int(raw.get("prompt_tokens") or 0)
    completion = int(raw.get("completion_tokens") or 0)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=int(raw.get("total_tokens") or prompt + completion),
        cached_tokens=int(prompt_details.get("cached_tokens") or raw.get("cache_read_input_tokens") or 0),
        reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
    )


def usage_to_wire(usage: Usage) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
    if usage.cached_tokens:
        wire["prompt_tokens_details"] = {"cached_tokens": usage.cached_tokens}
    if usage.reasoning_tokens:
        wire["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return wire


# Only these fields of an answer's message are kept: what a harness acts on. Provider extras
# (provider_specific_fields, function_call: null, ...) would make cassettes churn between versions.
MESSAGE_FIELDS = ("role", "content", "tool_calls", "refusal", "reasoning_content")


def completion_body(
    message: dict[str, Any],
    *,
    finish_reason: str | None,
    usage: Usage,
    response_id: str | None,
    model: str | None,
    created: int | None,
) -> dict[str, Any]:
    """A chat.completion body with one choice: the one builder of that shape."""
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage_to_wire(usage),
    }


def normalise_response(raw: dict[str, Any]) -> dict[str, Any]:
    """A provider's answer reduced to its first choice and the fields kept; ValueError if it has none."""
    choices = raw.get("choices") or []
    if not choices or not isinstance(choices[0], dict) or not isinstance(choices[0].get("message"), dict):
        raise ValueError("response has no choices[0].message")
    choice = choices[0]
    message = {name: choice["message"][name] for name in MESSAGE_FIELDS if choice["message"].get(name) is not None}
    message.setdefault("role", "assistant")
    message.setdefault("content", None)
    if message.get("tool_calls"):
        message["tool_calls"] = [_wire_tool_call(call) for call in message["tool_calls"]]
    return completion_body(
        message,
        finish_reason=choice.get("finish_reason"),
        usage=usage_from_wire(raw.get("usage")),
        response_id=raw.get("id"),
        model=raw.get("model"),
        created=raw.get("created"),
    )


def _wire_tool_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return {
        "id": call.get("id"),
        "type": call.get("type") or "function",
        "function": {"name": function.get("name"), "arguments": function.get("arguments")},
    }


TOOL_CALL_FIELDS = ("id", "type", "function")
FUNCTION_FIELDS = ("name", "arguments")


def in_wire_order(message: dict[str, Any]) -> dict[str, Any]:
    """A reply message with its fields in the order the wire gives them (OpenAI's, which is also
    `normalise_response`'s): role, content, tool_calls (id, type, function: name, arguments), ...

    A cassette stores messages in canonical form, keys sorted, because that form is hashed; the
    answer built from one is put back in this order, so a replay's bytes are the live answer's.
    Fields not named here follow, in the order they came.
    """
    ordered = _in_order(message, MESSAGE_FIELDS)
    calls = ordered.get("tool_calls")
    if isinstance(calls, list):
        ordered["tool_calls"] = [_tool_call_in_order(call) for call in calls]
    return ordered


def _tool_call_in_order(call: Any) -> Any:
    if not isinstance(call, dict):
        return call
    ordered = _in_order(call, TOOL_CALL_FIELDS)
    if isinstance(ordered.get("function"), dict):
        ordered["function"] = _in_order(ordered["function"], FUNCTION_FIELDS)
    return ordered


def _in_order(fields: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    ordered = {name: fields[name] for name in order if name in fields}
    ordered.update((name, value) for name, value in fields.items() if name not in ordered)
    return ordered


def response_from_wire(body: dict[str, Any]) -> ModelResponse:
    """A chat-completions response body (first choice) as a ModelResponse."""
    choices = body.get("choices") or []
    if not choices:
        raise ValueError("response has no choices")
    choice = choices[0]
    return ModelResponse(
        message=message_from_wire(choice.get("message") or {}),
        finish_reason=choice.get("finish_reason"),
        usage=usage_from_wire(body.get("usage")),
        response_id=body.get("id"),
        response_model=body.get("model"),
        created=body.get("created"),
    )


def response_to_wire(response: ModelResponse, model: str) -> dict[str, Any]:
    """A ModelResponse (from a scripted or local model) as a chat.completions body."""
    message = message_to_wire(response.message)
    message.pop("tool_call_id", None)
    return completion_body(
        message,
        finish_reason=response.finish_reason or "stop",
        usage=response.usage,
        response_id=response.response_id or "chatcmpl-tauproxy",
        model=response.response_model or model,
        created=response.created or 0,
    )
