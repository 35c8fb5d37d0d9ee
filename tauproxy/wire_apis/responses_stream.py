"""A Response object as the event sequence the Responses API streams, built from the whole answer.

The answer is complete before streaming starts (replayed, or fetched upstream non-streamed), so
every event is built at once: response.created and response.in_progress (the response with no
output yet), then per output item response.output_item.added, its content (a message's parts:
response.content_part.added, response.output_text.delta / .done or response.refusal.delta / .done,
response.content_part.done; a function call's response.function_call_arguments.delta / .done), and
response.output_item.done, then response.completed (response.incomplete or response.failed when the
response says so). Each event carries its `type` and a `sequence_number` counting from 0, so the
openai SDK's stream helpers assemble the same Response the non-streamed answer is.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

FINAL_EVENT = {"completed": "response.completed", "incomplete": "response.incomplete", "failed": "response.failed"}


def response_events(response: dict[str, Any]) -> list[dict[str, Any]]:
    events = list(_events(response))
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def _events(response: dict[str, Any]) -> Iterator[dict[str, Any]]:
    opening = {**copy.deepcopy(response), "status": "in_progress", "output": [], "usage": None}
    for name in ("completed_at", "incomplete_details", "error"):
        if name in opening:
            opening[name] = None
    yield {"type": "response.created", "response": opening}
    yield {"type": "response.in_progress", "response": copy.deepcopy(opening)}
    for index, item in enumerate(response.get("output") or []):
        yield from _item_events(index, item)
    final = FINAL_EVENT.get(str(response.get("status")), "response.completed")
    yield {"type": final, "response": response}


def _item_events(index: int, item: dict[str, Any]) -> Iterator[dict[str, Any]]:
    kind = item.get("type")
    item_id = item.get("id")
    where = {"item_id": item_id, "output_index": index}
    if kind == "message":
        yield {"type": "response.output_item.added", "output_index": index, "item": _opened(item, content=[])}
        for content_index, part in enumerate(item.get("content") or []):
            yield from _part_events(where, content_index, part)
    elif kind == "function_call":
        yield {"type": "response.output_item.added", "output_index": index, "item": _opened(item, arguments="")}
        arguments = item.get("arguments") or ""
        yield {"type": "response.function_call_arguments.delta", **where, "delta": arguments}
        yield {"type": "response.function_call_arguments.done", **where, "arguments": arguments}
    else:  # reasoning and other items: announced, then given whole
        yield {"type": "response.output_item.added", "output_index": index, "item": item}
    yield {"type": "response.output_item.done", "output_index": index, "item": item}


def _opened(item: dict[str, Any], **empty: Any) -> dict[str, Any]:
    """An item as output_item.added shows it: in progress, its content still empty."""
    return {**item, **empty, "status": "in_progress"}


def _part_events(where: dict[str, Any], content_index: int, part: dict[str, Any]) -> Iterator[dict[str, Any]]:
    at = {**where, "content_index": content_index}
    kind = part.get("type")
    if kind == "output_text":
        text = part.get("text") or ""
        yield {"type": "response.content_part.added", **at, "part": {**part, "text": "", "annotations": []}}
        yield {"type": "response.output_text.delta", **at, "delta": text, "logprobs": []}
        yield {"type": "response.output_text.done", **at, "text": text, "logprobs": []}
    elif kind == "refusal":
        refusal = part.get("refusal") or ""
        yield {"type": "response.content_part.added", **at, "part": {**part, "refusal": ""}}
        yield {"type": "response.refusal.delta", **at, "delta": refusal}
        yield {"type": "response.refusal.done", **at, "refusal": refusal}
    else:
        yield {"type": "response.content_part.added", **at, "part": part}
    yield {"type": "response.content_part.done", **at, "part": part}
