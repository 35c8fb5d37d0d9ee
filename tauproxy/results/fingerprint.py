"""Role-blind fingerprints of messages, to find a served call inside a harness's saved conversation.

A harness saves its conversation in its own shape, and its user simulator sees the conversation with
roles flipped and tool traffic dropped, so neither a message hash nor the role can be compared.
What survives every view is a message's text, or, for a message that is only tool calls, the ids
of those calls. A fingerprint is a short hash of that and nothing else; it holds no content.

It is the contract between the run log's writer (`tauproxy serve`, from wire messages) and its
reader (tauproxy.results.run_log_join, from saved messages), so it lives below both.
"""

from __future__ import annotations

import hashlib
from typing import Any

from tauproxy.data_model.message import Message

FINGERPRINT_CHARS = 16


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:FINGERPRINT_CHARS]


def fingerprint(text: str | None, call_ids: list[str]) -> str | None:
    """'t:<hash of stripped text>', else 'c:<hash of call ids>', else None (nothing to match on)."""
    if text and text.strip():
        return "t:" + _digest(text.strip())
    ids = [i for i in call_ids if i]
    if ids:
        return "c:" + _digest(",".join(ids))
    return None


def _wire_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: the text parts are what a transcript keeps
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return None


def wire_fingerprint(message: dict[str, Any]) -> str | None:
    """Fingerprint of an OpenAI wire message (request or response)."""
    ids = [str(c.get("id") or "") for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    return fingerprint(_wire_text(message.get("content")), ids)


def message_fingerprint(message: Message) -> str | None:
    """Fingerprint of a saved trajectory message."""
    return fingerprint(message.content, [call.id for call in message.tool_calls or []])


def request_fingerprints(messages: list[dict[str, Any]]) -> list[str]:
    """Fingerprints of a request's non-system messages, in order, skipping the empty ones."""
    prints = (wire_fingerprint(m) for m in messages if isinstance(m, dict) and m.get("role") != "system")
    return [p for p in prints if p is not None]


def system_sha256(messages: list[dict[str, Any]]) -> str | None:
    """sha256 of the first system message's text: the same digest as RunInfo's system_prompt_sha256."""
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "system":
            text = _wire_text(message.get("content"))
            return hashlib.sha256((text or "").encode("utf-8")).hexdigest()
    return None
