"""The events of a recorded server-sent-events body, and what a recorded answer that cannot be read is.

Every wire API streams the same way on the wire: `data: <json>` lines (with `event: <type>` lines
before them for the Responses and Messages APIs, and a `data: [DONE]` line at the end for chat),
separated by blank lines. vcrpy keeps the body whole, so the events are all there.
"""

from __future__ import annotations

import json
from typing import Any


class UnreadableAnswer(ValueError):
    """A recorded response that is not its API's answer (nor a stream of one): left out of the import."""


def decoded(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableAnswer("response body is not UTF-8 text") from None


def is_stream(text: str, content_type: str) -> bool:
    stripped = text.lstrip()
    return "text/event-stream" in content_type.lower() or stripped.startswith(("data:", "event:"))


def stream_events(text: str) -> list[dict[str, Any]]:
    """The JSON objects of an SSE body's `data:` lines, in order ([DONE] ends it); an error event, or
    a line that is not JSON, is UnreadableAnswer."""
    events: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue  # blank separators, comments (": ping"), event names (the data says its type)
        data = line[len("data:") :].strip()
        if data == "[DONE]":
            break
        try:
            event = json.loads(data)
        except ValueError:
            raise UnreadableAnswer(f"stream event is not JSON: {data[:60]!r}") from None
        if not isinstance(event, dict):
            raise UnreadableAnswer("stream event is not a JSON object")
        if "error" in event or event.get("type") == "error":
            raise UnreadableAnswer("the stream ended in an error event")
        events.append(event)
    if not events:
        raise UnreadableAnswer("stream holds no events")
    return events


def json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        raise UnreadableAnswer("response body is not JSON") from None
    if not isinstance(value, dict):
        raise UnreadableAnswer("response body is not a JSON object")
    return value
