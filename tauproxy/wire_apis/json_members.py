"""A request body's JSON object read member by member, so that the member every call repeats (its tool
schemas: τ²'s airline agent sends the same 14, about 8 KB, with every call) is copied from memory
instead of parsed, and walked for its depth, again.

json's own result or none: each member is parsed by the scanner of the decoder json_body.py uses
(its hooks, its errors), and the object is built as json's parser builds it (a repeated key keeps its
first place and takes its last value). Anything this does not expect (an empty object, a trailing
comma, a member that does not parse) gives None, and the caller parses the body as json does, which
refuses it with json's own message. A remembered member is found by its exact text where the scanner
would start to parse it: an array's text ends at its closing bracket, so the same text there is the
same value, ending at the same place. It is handed out as a fresh copy (marshal: the same types and
values, every float's bits included), so no request can change what another gets, with its depth.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable
from typing import Any

REMEMBERED = frozenset({"tools"})  # the members a harness repeats unchanged call after call
MIN_CHARS = 1024  # a shorter member parses in less time than a copy from memory takes
ENTRIES = 16  # texts kept; when full it starts again (a harness runs a handful of tool lists at a time)
_WHITESPACE = " \t\n\r"  # what json skips between tokens

Scanner = Callable[[str, int], tuple[Any, int]]
Depth = Callable[[Any], int]


class RememberedMembers:
    """Member texts with their values (marshalled) and nesting depths; thread-safe, since readers
    see one tuple and a writer replaces it whole."""

    def __init__(self) -> None:
        self._entries: tuple[tuple[str, bytes, int], ...] = ()

    def find(self, text: str, at: int) -> tuple[Any, int, int] | None:
        """(a fresh copy of the value, where its text ends, its depth) of a remembered member whose
        text starts at `at`, or None."""
        for member, plain, depth in self._entries:
            if text.startswith(member, at):
                return marshal.loads(plain), at + len(member), depth
        return None

    def remember(self, member: str, value: Any, depth: int) -> None:
        try:
            plain = marshal.dumps(value)
        except ValueError:  # not a value json makes: never the case, and then simply not remembered
            return
        kept = self._entries if len(self._entries) < ENTRIES else ()
        self._entries = (*kept, (member, plain, depth))

    def clear(self) -> None:
        self._entries = ()


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _WHITESPACE:
        at += 1
    return at


def object_members(
    text: str, scan: Scanner, scan_key: Scanner, memory: RememberedMembers, depth_of: Depth, max_depth: int
) -> tuple[dict[str, Any], dict[str, int]] | None:
    """The JSON object `text` holds, with the depth of each member that was remembered (or is now), or
    None where json's own parse must decide (module docstring). `scan` parses a value at an index
    (JSONDecoder.scan_once), `scan_key` a string after its opening quote (json.decoder.scanstring)."""
    try:
        at = _skip(text, 0)
        if text[at : at + 1] != "{":
            return None
        at = _skip(text, at + 1)
        members: dict[str, Any] = {}
        depths: dict[str, int] = {}
        while True:
            if text[at : at + 1] != '"':
                return None
            key, at = scan_key(text, at + 1)
            at = _skip(text, at)
            if text[at : at + 1] != ":":
                return None
            at = _skip(text, at + 1)
            depths.pop(key, None)  # a repeated key: its last value is the one kept
            found = memory.find(text, at) if key in REMEMBERED else None
            if found is not None:
                members[key], at, depths[key] = found
            else:
                start = at
                members[key], at = scan(text, at)
                if key in REMEMBERED and at - start >= MIN_CHARS and text[start] == "[":
                    depths[key] = depth_of(members[key])
                    if depths[key] <= max_depth:  # a deeper one is refused: nothing to remember
                        memory.remember(text[start:at], members[key], depths[key])
            at = _skip(text, at)
            if text[at : at + 1] == ",":
                at = _skip(text, at + 1)
                continue
            if text[at : at + 1] == "}":
                break
            return None
        if _skip(text, at + 1) != len(text):
            return None
    except Exception:  # any failure is json's to name: the caller parses the body again
        return None
    return members, depths
