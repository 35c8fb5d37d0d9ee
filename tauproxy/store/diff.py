"""How a request differs from a recorded one, as typed differences and as short, readable text."""

from __future__ import annotations

import difflib
from typing import Any

from tauproxy.data_model.key import canonical_json, canonical_request
from tauproxy.errors import RequestDifference, render_differences
from tauproxy.store.wire_form import flat_wire

MAX_WIDTH = 160
CONTEXT = 40


def _clip(text: str, start: int = 0, width: int = MAX_WIDTH) -> str:
    """`text` cut to `width` characters from `start`, with ellipses where something was cut."""
    start = max(0, min(start, len(text) - width)) if len(text) > width else 0
    piece = text[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(text) else "")


def _show(value: Any) -> str:
    return _clip(value if isinstance(value, str) else canonical_json(value))


def _params_diff(wanted: dict[str, Any], recorded: dict[str, Any]) -> list[RequestDifference]:
    found = []
    for name in sorted(set(wanted) | set(recorded)):
        if name not in recorded:
            line = f"param {name} added: {_show(wanted[name])}"
        elif name not in wanted:
            line = f"param {name} removed (was {_show(recorded[name])})"
        elif wanted[name] != recorded[name]:
            line = f"param {name} changed: {_show(recorded[name])} -> {_show(wanted[name])}"
        else:
            continue
        found.append(RequestDifference("param", name, (line,)))
    return found


def _tool_name(tool: Any, index: int) -> str:
    if isinstance(tool, dict):
        function = tool.get("function") or {}
        if isinstance(function, dict) and function.get("name"):
            return str(function["name"])
    return f"#{index}"


def _tools_diff(wanted: list[Any] | None, recorded: list[Any] | None) -> list[RequestDifference]:
    new = {_tool_name(tool, i): tool for i, tool in enumerate(wanted or [])}
    old = {_tool_name(tool, i): tool for i, tool in enumerate(recorded or [])}
    changes = [(name, "added") for name in new if name not in old]
    changes += [(name, "removed") for name in old if name not in new]
    changes += [(name, "changed") for name in new if name in old and new[name] != old[name]]
    found = [RequestDifference("tool", name, (f"tool {name} {change}",)) for name, change in changes]
    if not found and (wanted or []) != (recorded or []):
        found.append(RequestDifference("tools", None, ("tools reordered",)))
    return found


def _message_text(message: dict[str, Any]) -> list[str]:
    """A message as lines to diff: its content, then one line per tool call, then other fields."""
    content = message.get("content")
    lines = (content if isinstance(content, str) else canonical_json(content)).splitlines() if content else []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        lines.append(f"tool call {call.get('id')}: {function.get('name')}({function.get('arguments')})")
    skip = {"role", "content", "tool_calls"}
    lines += [f"{name}: {_show(value)}" for name, value in sorted(message.items()) if name not in skip]
    return lines


def _first_change(old: list[str], new: list[str]) -> int:
    """Where the first changed line pair starts to differ, so clipping keeps the difference in view."""
    for a, b in zip(old, new, strict=False):
        if a != b:
            return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return 0


def _message_diff(index: int, wanted: dict[str, Any], recorded: dict[str, Any]) -> RequestDifference:
    role_old, role_new = recorded.get("role"), wanted.get("role")
    head = f"message #{index} ({role_new}) differs"
    if role_old != role_new:
        head = f"message #{index} differs: role {role_old} -> {role_new}"
    old, new = _message_text(recorded), _message_text(wanted)
    start = max(0, _first_change(old, new) - CONTEXT)
    body = [
        line if line.startswith(("---", "+++", "@@")) else line[:1] + _clip(line[1:], start)
        for line in difflib.unified_diff(old, new, "recorded", "this request", n=1, lineterm="")
    ]
    return RequestDifference("message", str(index), (head, *body))


def _messages_diff(wanted: list[dict[str, Any]], recorded: list[dict[str, Any]]) -> list[RequestDifference]:
    for index, (new, old) in enumerate(zip(wanted, recorded, strict=False)):
        if new != old:
            return [_message_diff(index, new, old)]
    if len(wanted) == len(recorded):
        return []
    shorter = min(len(wanted), len(recorded))
    line = f"recorded request has {len(recorded)} messages, this one has {len(wanted)}; first {shorter} equal"
    return [RequestDifference("messages", None, (line,))]


def request_differences(wanted: dict[str, Any], recorded: dict[str, Any]) -> list[RequestDifference]:
    """What differs between two wire requests (this one and a recorded one), part by part."""
    new, old = canonical_request(flat_wire(wanted)), canonical_request(flat_wire(recorded))
    found: list[RequestDifference] = []
    if new["model"] != old["model"]:
        found.append(RequestDifference("model", None, (f"model changed: {old['model']} -> {new['model']}",)))
    found += _params_diff(new["params"], old["params"])
    if new["tool_choice"] != old["tool_choice"]:
        line = f"tool_choice changed: {_show(old['tool_choice'])} -> {_show(new['tool_choice'])}"
        found.append(RequestDifference("tool_choice", None, (line,)))
    found += _tools_diff(new["tools"], old["tools"])
    found += _messages_diff(new["messages"], old["messages"])
    if not found:
        line = "the requests are identical (the sample differs: seed, trial or occurrence)"
        found.append(RequestDifference("sample", None, (line,)))
    return found


def describe_request_difference(wanted: dict[str, Any], recorded: dict[str, Any]) -> str:
    """What differs between two wire requests (this one and a recorded one), in at most ~40 lines."""
    return render_differences(request_differences(wanted, recorded))
