"""Why a request missed: the nearest recorded call and a short, readable diff against it."""

from __future__ import annotations

import difflib
from typing import Any

from tauproxy.data_model.call import CallRole
from tauproxy.data_model.key import canonical_json, canonical_request, message_hash, request_key, seed_of
from tauproxy.store.cassette import Cassette, flat_wire
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.format import chain_nodes, chain_refs, short_ref

MAX_LINES = 40
MAX_WIDTH = 160
CONTEXT = 40


def _clip(text: str, start: int = 0, width: int = MAX_WIDTH) -> str:
    """`text` cut to `width` characters from `start`, with ellipses where something was cut."""
    start = max(0, min(start, len(text) - width)) if len(text) > width else 0
    piece = text[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(text) else "")


def _show(value: Any) -> str:
    return _clip(value if isinstance(value, str) else canonical_json(value))


def _params_diff(wanted: dict[str, Any], recorded: dict[str, Any]) -> list[str]:
    lines = []
    for name in sorted(set(wanted) | set(recorded)):
        if name not in recorded:
            lines.append(f"param {name} added: {_show(wanted[name])}")
        elif name not in wanted:
            lines.append(f"param {name} removed (was {_show(recorded[name])})")
        elif wanted[name] != recorded[name]:
            lines.append(f"param {name} changed: {_show(recorded[name])} -> {_show(wanted[name])}")
    return lines


def _tool_name(tool: Any, index: int) -> str:
    if isinstance(tool, dict):
        function = tool.get("function") or {}
        if isinstance(function, dict) and function.get("name"):
            return str(function["name"])
    return f"#{index}"


def _tools_diff(wanted: list[Any] | None, recorded: list[Any] | None) -> list[str]:
    new = {_tool_name(tool, i): tool for i, tool in enumerate(wanted or [])}
    old = {_tool_name(tool, i): tool for i, tool in enumerate(recorded or [])}
    lines = [f"tool {name} added" for name in new if name not in old]
    lines += [f"tool {name} removed" for name in old if name not in new]
    lines += [f"tool {name} changed" for name in new if name in old and new[name] != old[name]]
    if not lines and (wanted or []) != (recorded or []):
        lines.append("tools reordered")
    return lines


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


def _message_diff(index: int, wanted: dict[str, Any], recorded: dict[str, Any]) -> list[str]:
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
    return [head, *body]


def _messages_diff(wanted: list[dict[str, Any]], recorded: list[dict[str, Any]]) -> list[str]:
    for index, (new, old) in enumerate(zip(wanted, recorded, strict=False)):
        if new != old:
            return _message_diff(index, new, old)
    if len(wanted) == len(recorded):
        return []
    shorter = min(len(wanted), len(recorded))
    return [f"recorded request has {len(recorded)} messages, this one has {len(wanted)}; first {shorter} equal"]


def describe_request_difference(wanted: dict[str, Any], recorded: dict[str, Any]) -> str:
    """What differs between two wire requests (this one and a recorded one), in at most ~40 lines."""
    new, old = canonical_request(flat_wire(wanted)), canonical_request(flat_wire(recorded))
    lines: list[str] = []
    if new["model"] != old["model"]:
        lines.append(f"model changed: {old['model']} -> {new['model']}")
    lines += _params_diff(new["params"], old["params"])
    if new["tool_choice"] != old["tool_choice"]:
        lines.append(f"tool_choice changed: {_show(old['tool_choice'])} -> {_show(new['tool_choice'])}")
    lines += _tools_diff(new["tools"], old["tools"])
    lines += _messages_diff(new["messages"], old["messages"])
    if not lines:
        lines.append("the requests are identical (the sample differs: seed, trial or occurrence)")
    if len(lines) > MAX_LINES:
        lines = [*lines[: MAX_LINES - 1], f"… {len(lines) - MAX_LINES + 1} more lines"]
    return "\n".join(lines)


def _common_prefix(cassette: Cassette, entry: CassetteEntry, hashes: list[str], depths: dict[str, int]) -> int:
    """How many leading messages the entry's request shares with the request whose messages are `hashes`.

    `depths` maps each node of that request's chain to its depth. A node names its whole prefix, so
    the first node of the entry's chain (walking back from its end) found there is the shared prefix.
    """
    if entry.request.messages is not None:  # a version-1 entry lists its messages
        count = 0
        for mine, theirs in zip(hashes, entry.request.messages, strict=False):
            if not mine.startswith(theirs):
                break
            count += 1
        return count
    node = entry.request.chain
    while node is not None and node not in depths:
        node = cassette.node(node)[0]
    return 0 if node is None else depths[node]


def nearest_entry(
    cassette: Cassette,
    wire_request: dict[str, Any],
    task_id: str,
    trial: int,
    role: CallRole,
    call_index: int,
) -> CassetteEntry | None:
    """The recorded call this request most likely meant to match, judged by content.

    The same request recorded as another sample first (same key: another seed, scope or
    occurrence); else, among calls of the same role (of any role if there are none), the longest
    common message prefix, then the same model, the same task and trial, the same call index, and
    the closest message count. The call index only breaks ties: under `serve` it counts a whole
    server's calls, not a conversation's. None for an empty cassette.
    """
    same_key = cassette.by_key(request_key(wire_request))
    if same_key:
        return next((e for e in same_key if (e.task_id, e.trial) == (task_id, trial)), same_key[0])
    entries = cassette.entries()
    hashes = [message_hash(m) for m in wire_request.get("messages") or []]
    # The request's chain as a v2 cassette names it (full references) and as v3 does (short ones).
    depths = {node: index + 1 for index, (node, _, _) in enumerate(chain_nodes(hashes))}
    depths.update({node: index + 1 for index, (node, _, _) in enumerate(chain_refs([short_ref(h) for h in hashes]))})
    model = wire_request.get("model")
    for candidates in ([e for e in entries if e.role == role], entries):
        if candidates:
            return max(
                candidates,
                key=lambda e: (
                    _common_prefix(cassette, e, hashes, depths),
                    int(e.request.model == model),
                    int((e.task_id, e.trial) == (task_id, trial)),
                    int(e.call_index == call_index),
                    -abs(cassette.message_count(e) - len(hashes)),
                ),
            )
    return None


def miss_message(
    cassette: Cassette,
    wire_request: dict[str, Any],
    *,
    task_id: str,
    trial: int,
    role: CallRole,
    call_index: int,
    occurrence: int = 0,
) -> str:
    """The whole strict-replay miss explanation: what was asked, what is nearest, and how they differ."""
    key = request_key(wire_request)
    nearest = nearest_entry(cassette, wire_request, task_id, trial, role, call_index)
    if nearest is not None and nearest.key == key:
        samples = cassette.by_key(key)
        shown = ", ".join(
            f"task {e.task_id} trial {e.trial} occurrence {e.occurrence} seed {e.seed}" for e in samples[:4]
        )
        return (
            f"replay miss: task {task_id}, trial {trial}, call #{call_index} ({role}): this request is recorded "
            f"in {cassette.directory} (key {key[:12]}), but not as this sample (seed {seed_of(wire_request)}, "
            f"occurrence {occurrence}); recorded as: {shown}{' ...' if len(samples) > 4 else ''}"
        )
    lines = [
        f"replay miss: task {task_id}, trial {trial}, call #{call_index} ({role}) was never recorded "
        f"in {cassette.directory} (key {key[:12]})"
    ]
    if nearest is None or (nearest.task_id, nearest.trial) != (task_id, trial):
        in_scope = any((e.task_id, e.trial) == (task_id, trial) for e in cassette.entries())
        lines.append(f"the cassette holds no {role + ' ' if in_scope else ''}call for this task/trial")
    if nearest is not None:
        lines.append(
            f"nearest recorded call: key {nearest.key[:12]}, task {nearest.task_id}, trial {nearest.trial}, "
            f"call #{nearest.call_index} ({nearest.role})"
        )
        lines.append(describe_request_difference(wire_request, cassette.request_of(nearest)))
    if cassette.problems:
        lines.append(
            f"note: the cassette has {len(cassette.problems)} damaged line(s), first "
            f"{cassette.problems[0]}; run `tauproxy cassette verify`"
        )
    return "\n".join(lines)
