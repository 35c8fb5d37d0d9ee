"""Reading and checking a request body: size cap first (413), then text, JSON and shape (400).

What the key, the cassette and the upstream client cannot carry is refused here, before anything
else sees the body: bytes that are not UTF-8, a string holding a lone surrogate (valid JSON escape
syntax, but not a character: it cannot be hashed, stored or sent), and numbers that are not finite
(NaN, Infinity, or a literal such as 1e999 that only overflows to infinity). Each is a 400 naming
what is wrong, never a 500 and never a call.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import AsyncIterator
from typing import Any

from tauproxy.serve.errors import HttpError


async def read_capped(declared_length: str | None, chunks: AsyncIterator[bytes], max_bytes: int) -> bytes:
    """The whole body, refusing with 413 as soon as it is known to exceed `max_bytes`."""
    if declared_length is not None:
        try:
            declared = int(declared_length)
        except ValueError:
            raise HttpError(400, "Content-Length is not a number") from None
        if declared > max_bytes:  # refuse before reading a byte of it
            raise HttpError(413, f"request body of {declared} bytes exceeds the limit of {max_bytes}")
    data = bytearray()
    async for chunk in chunks:  # a chunked body has no declared length: count as it comes
        data += chunk
        if len(data) > max_bytes:
            raise HttpError(413, f"request body exceeds the limit of {max_bytes} bytes")
    return bytes(data)


# Deeper than any real chat request, and far below what json, pydantic and the key's recursive
# canonical form can take: a deeper body is refused before anything recurses over it.
MAX_JSON_DEPTH = 64


def _refuse_constant(name: str) -> None:
    raise HttpError(400, f"request body holds {name}, which is not valid JSON: every number must be finite")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 is valid JSON syntax, but no client or provider can send it back
        raise HttpError(
            400, f"request body holds the number {text}, which is out of range: every number must be finite"
        )
    return value


# A \uD800-\uDFFF escape. Most bodies have none, so the exact walk below runs only when one appears
# (a valid pair is one too, and so is an escaped backslash followed by "ud800": the walk decides).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF][0-9a-fA-F]{2}")


def lone_surrogate_path(value: Any) -> str | None:
    """Where in a parsed JSON value a string (or key) holds a lone surrogate, or None if none does."""
    stack: list[tuple[str, Any]] = [("body", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if not _encodes(item):
                return path
        elif isinstance(item, dict):
            for key, child in item.items():
                if not _encodes(key):
                    return f"a key of {path}"
                stack.append((f"{path}.{key}", child))
        elif isinstance(item, list):
            stack.extend((f"{path}[{index}]", child) for index, child in enumerate(item))
    return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_json_body(raw: bytes) -> Any:
    """The JSON value of a request body: strict UTF-8, finite numbers, no lone surrogates (else 400)."""
    try:
        text = raw.decode("utf-8")  # strict: refuses invalid bytes and UTF-8-encoded surrogates alike
    except UnicodeDecodeError as exc:
        raise HttpError(400, f"request body is not valid UTF-8 (byte {exc.start}: {exc.reason})") from None
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except (ValueError, RecursionError) as exc:
        raise HttpError(400, f"request body is not valid JSON: {exc}") from None
    if _SURROGATE_ESCAPE.search(raw):
        path = lone_surrogate_path(value)
        if path is not None:
            raise HttpError(400, f"{path} holds a lone surrogate escape (\\uD800-\\uDFFF), which is not a character")
    return value


def json_depth(raw: bytes) -> int:
    """How deeply arrays and objects nest in a JSON text, counted without parsing (no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def check_content_type(value: str | None) -> None:
    """A body sent as something other than JSON (text/plain, a form) is refused, not guessed at."""
    if value is None:
        return  # many clients send none; the body must still parse as JSON
    media = value.split(";", 1)[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise HttpError(400, f"Content-Type must be application/json, got {media or 'nothing'!r}")


def parse_chat_request(raw: bytes) -> dict[str, Any]:
    """A chat-completions request body, or HttpError 400 saying what is wrong with it."""
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise HttpError(400, f"request body nests deeper than {MAX_JSON_DEPTH} levels")
    body = parse_json_body(raw)
    if not isinstance(body, dict):
        raise HttpError(400, "request body must be a JSON object")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise HttpError(400, "'model' must be a non-empty string")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise HttpError(400, "'messages' must be a non-empty array of message objects")
    for index, message in enumerate(messages):
        if not isinstance(message.get("role"), str) or not message["role"]:
            raise HttpError(400, f"messages[{index}] has no 'role'")
        calls = message.get("tool_calls")
        if calls is not None and not (isinstance(calls, list) and all(_is_tool_call(call) for call in calls)):
            raise HttpError(400, f"messages[{index}].tool_calls must be an array of tool call objects")
    tools = body.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise HttpError(400, "'tools' must be an array of tool objects")
    n = body.get("n")
    if n is not None and n != 1:
        # A cassette sample is one choice; several would need several samples per request.
        raise HttpError(400, "'n' other than 1 is not supported by tauproxy serve")
    if body.get("stream") not in (None, True, False):
        raise HttpError(400, "'stream' must be a boolean")
    return body


def _is_tool_call(call: Any) -> bool:
    return isinstance(call, dict) and isinstance(call.get("function") or {}, dict)


def wants_usage_chunk(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True
