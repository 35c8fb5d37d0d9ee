"""A request body's JSON, checked alike for every wire API (RequestRejected, a 400, otherwise).

What the key, the cassette and the upstream client cannot carry is refused here, before anything
else sees the body: bytes that are not UTF-8, a string holding a lone surrogate (valid JSON escape
syntax, but not a character: it cannot be hashed, stored or sent), numbers that are not finite
(NaN, Infinity, or a literal such as 1e999 that only overflows to infinity), and nesting deeper
than any real request. Each is a 400 naming what is wrong, never a 500 and never a call.
An upstream's answer is read by the same rules (upstream.py), so an answer the cassette could not
hold is a malformed answer, never recorded.
"""

from __future__ import annotations

import functools
import json
import math
import re
from _json import make_scanner, scanstring
from typing import Any, cast

from tauproxy.wire_apis.base import RequestRejected
from tauproxy.wire_apis.json_members import RememberedMembers, object_members

REQUEST_BODY = "request body"
# A request body's members that every call repeats (its tool list), remembered by their text.
_REMEMBERED = RememberedMembers()

# Deeper than any real request, and far below what json, pydantic and the key's recursive
# canonical form can take: a deeper body is refused before anything recurses over it.
MAX_JSON_DEPTH = 64


def _refuse_constant(what: str, name: str) -> None:
    raise RequestRejected(f"{what} holds {name}, which is not valid JSON: every number must be finite")


def _finite_float(what: str, text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 is valid JSON syntax, but no client or provider can send it back
        raise RequestRejected(f"{what} holds the number {text}, which is out of range: every number must be finite")
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


@functools.lru_cache(maxsize=8)
def _decoder(what: str) -> json.JSONDecoder:
    """The decoder json.loads would build for these hooks on every call, built once per `what` (a
    decoder keeps no state between documents)."""
    refuse, finite = functools.partial(_refuse_constant, what), functools.partial(_finite_float, what)
    return json.JSONDecoder(parse_constant=refuse, parse_float=finite)


@functools.lru_cache(maxsize=8)
def _scanner(what: str) -> make_scanner:
    """The scanner of `_decoder(what)`: one JSON value at an index, with its hooks (json_members.py)."""
    # As JSONDecoder makes its own (typeshed names the context a make_scanner; it is the decoder).
    return make_scanner(cast(Any, _decoder(what)))


def parse_json_body(raw: bytes, what: str = "request body") -> Any:
    """The JSON value of a request body (or of `what`): strict UTF-8, finite numbers, no lone
    surrogates (else RequestRejected, a 400, naming `what`)."""
    return _no_lone_surrogates(raw, _parsed(_utf8(raw, what), what), what)


def _utf8(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")  # strict: refuses invalid bytes and UTF-8-encoded surrogates alike
    except UnicodeDecodeError as exc:
        raise RequestRejected(f"{what} is not valid UTF-8 (byte {exc.start}: {exc.reason})") from None


def _parsed(text: str, what: str) -> Any:
    try:
        if text.startswith("\ufeff"):  # what json.loads says, which decode alone does not check
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        return _decoder(what).decode(text)
    except RecursionError:
        raise RequestRejected(f"{what} nests deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:
        raise RequestRejected(f"{what} is not valid JSON: {exc}") from None


def _no_lone_surrogates(raw: bytes, value: Any, what: str) -> Any:
    if _SURROGATE_ESCAPE.search(raw):
        path = lone_surrogate_path(value)
        if path is not None:
            where = path if what == "request body" else f"{what} at {path}"
            raise RequestRejected(f"{where} holds a lone surrogate escape (\\uD800-\\uDFFF), which is not a character")
    return value


def nesting_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """How deeply arrays and objects nest in a parsed JSON value (strings do not count), walked level
    by level without recursion; the walk stops as soon as it passes `limit`, returning a depth over it."""
    level = [value] if type(value) is dict or type(value) is list else []
    depth = 0
    while level and depth <= limit:
        depth += 1
        below = []
        for item in level:
            for child in item.values() if type(item) is dict else item:
                if type(child) is dict or type(child) is list:  # what json.loads makes, exactly
                    below.append(child)
        level = below
    return depth


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """A request body that is a JSON object within MAX_JSON_DEPTH, checked as parse_json_body does.

    The depth is checked on the parsed value: json's parser is C and bounded by the interpreter's
    recursion limit (a deeper body is a RecursionError, refused alike), and a walk over the parsed
    containers costs a fraction of a scan of the raw bytes in Python (a τ²-sized body of 23 KB holds
    about 200 containers). Nothing recursive sees a body before this check passed.
    """
    text = _utf8(raw, REQUEST_BODY)
    read = object_members(text, _scanner(REQUEST_BODY), scanstring, _REMEMBERED, nesting_depth, MAX_JSON_DEPTH)
    known: dict[str, int] = {}
    if read is None:  # not an object json_members.py reads as json does: json's own parse decides
        body = _parsed(text, REQUEST_BODY)
    else:
        body, known = read
    _no_lone_surrogates(raw, body, REQUEST_BODY)
    if known:  # members whose depth is known (the tool list a harness repeats): the rest is walked
        rest = {name: value for name, value in body.items() if name not in known}
        depth = max(nesting_depth(rest), *(1 + member for member in known.values()))
    else:
        depth = nesting_depth(body)
    if depth > MAX_JSON_DEPTH:
        raise RequestRejected(f"request body nests deeper than {MAX_JSON_DEPTH} levels")
    if not isinstance(body, dict):
        raise RequestRejected("request body must be a JSON object")
    return body


def require_model(body: dict[str, Any]) -> str:
    """The body's model name, or RequestRejected: every wire API names one."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise RequestRejected("'model' must be a non-empty string")
    return model


def require_stream_flag(body: dict[str, Any]) -> bool:
    """Whether the body asks for a stream (`stream: true`); RequestRejected if it is not a boolean."""
    stream = body.get("stream")
    if stream not in (None, True, False):
        raise RequestRejected("'stream' must be a boolean")
    return stream is True


def compact_json(value: Any) -> bytes:
    """A JSON answer body as serve sends it: UTF-8, no spaces."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
