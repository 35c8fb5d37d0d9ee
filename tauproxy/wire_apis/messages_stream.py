"""A Messages API answer as the `stream: true` answer: the SSE events Anthropic's API sends.

The answer is always whole before streaming starts (replayed, or fetched upstream non-streamed), so
every event is built at once and sent as one body, live and on replay alike. A text, tool input or
thinking block starts empty and is filled by one delta (text_delta, input_json_delta, thinking_delta
and signature_delta, citations_delta per citation); a block of any other type starts whole. The
anthropic SDK's stream helpers assemble from them the message the non-streamed answer is, usage
included (message_delta carries the final counts, which the SDK takes as cumulative totals).
"""

from __future__ import annotations

import json
from typing import Any

StreamEvent = tuple[str, dict[str, Any]]


def _block_events(index: int, block: dict[str, Any]) -> list[StreamEvent]:
    """content_block_start, its deltas and content_block_stop for one block, as the real API sends
    them: a text, tool input or thinking block starts empty and is filled by deltas; any other type
    starts whole."""
    kind = block.get("type")
    deltas: list[dict[str, Any]] = []
    start = dict(block)
    if kind == "text":
        start["text"] = ""
        citations = start.pop("citations", None) or []
        if block.get("text"):
            deltas.append({"type": "text_delta", "text": block["text"]})
        deltas.extend({"type": "citations_delta", "citation": citation} for citation in citations)
    elif kind in ("tool_use", "server_tool_use"):
        start["input"] = {}
        deltas.append({"type": "input_json_delta", "partial_json": json.dumps(block.get("input") or {})})
    elif kind == "thinking":
        start["thinking"], start["signature"] = "", ""
        if block.get("thinking"):
            deltas.append({"type": "thinking_delta", "thinking": block["thinking"]})
        if block.get("signature"):
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
    events: list[StreamEvent] = [("content_block_start", {"index": index, "content_block": start})]
    events.extend(("content_block_delta", {"index": index, "delta": delta}) for delta in deltas)
    events.append(("content_block_stop", {"index": index}))
    return events


def stream_events(reply: dict[str, Any]) -> list[StreamEvent]:
    """The events the real API streams for `reply` (a Messages answer's JSON): message_start (the
    message without content, stop reason or output tokens), a ping, each block, message_delta (stop
    reason and the final usage), message_stop."""
    message = dict(reply)
    content, usage = message.pop("content"), message.pop("usage", {})
    delta = {"stop_reason": message.pop("stop_reason", None), "stop_sequence": message.pop("stop_sequence", None)}
    for name in ("stop_details", "container"):  # set by message_delta in the SDK's assembly
        if name in message:
            delta[name] = message.pop(name)
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 0},
    }
    events: list[StreamEvent] = [("message_start", {"message": start}), ("ping", {})]
    for index, block in enumerate(content):
        events.extend(_block_events(index, block))
    events.append(("message_delta", {"delta": delta, "usage": usage}))
    events.append(("message_stop", {}))
    return events


def stream_body(reply: dict[str, Any]) -> bytes:
    """`stream_events` as one text/event-stream body: `event: <type>` and `data: <json>` per event."""
    lines = []
    for kind, data in stream_events(reply):
        payload = json.dumps({"type": kind, **data}, ensure_ascii=False, separators=(",", ":"))
        lines.append(f"event: {kind}\ndata: {payload}\n\n")
    return "".join(lines).encode("utf-8")
