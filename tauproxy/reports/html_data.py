"""What the HTML report shows on demand: one JSON block holding each distinct value once.

The requests of one trial repeat the conversation so far, and every trial of a run repeats the same
system prompt and tools, so writing each call's request out would grow a 50x4 report by the square
of a conversation's length. Instead the page carries one `<script type="application/json">` block:
`values` (each distinct message, tool list, response or text, once) and `requests` (each call's
request with its messages and tools given as indexes into `values`). A folded `<pre>` names the
value it shows (`data-value`); a call's folded `<details>` names its request, its first new message
and its response (`data-request`, `data-from`, `data-response`). The page's script fills them in
when they are unfolded (html_assets.py); until then the style sheet writes a placeholder into an
empty `<pre>`, so the page carries no placeholder text per body.
"""

from __future__ import annotations

import json
from typing import Any

from tauproxy.reports.markup import element
from tauproxy.reports.recorded_calls import RecordedCall

DATA_ID = "page-data"


class PageData:
    """The distinct values and the requests the page's folded bodies refer to."""

    def __init__(self) -> None:
        self._values: list[Any] = []
        self._index: dict[str, int] = {}
        self._requests: list[dict[str, Any]] = []

    def value(self, value: Any, content_hash: str | None = None) -> int:
        """The index of `value`, added if no equal value is there yet. Values are told apart by their
        canonical JSON, or by a content hash the caller has (the cassette's), which is cheaper."""
        key = "#" + content_hash if content_hash is not None else json.dumps(value, sort_keys=True, ensure_ascii=False)
        index = self._index.get(key)
        if index is None:
            index = self._index[key] = len(self._values)
            self._values.append(value)
        return index

    def request(self, call: RecordedCall) -> int:
        """The index of a call's request, its messages and tools stored as values, each once."""
        stored = dict(call.request)
        messages = call.request.get("messages")
        if isinstance(messages, list):
            hashes: list[str | None] = list(call.message_keys) if len(call.message_keys) == len(messages) else []
            stored["messages"] = [
                self.value(message, hashes[n] if hashes else None) for n, message in enumerate(messages)
            ]
        if isinstance(call.request.get("tools"), list):
            stored["tools"] = self.value(call.request["tools"], call.tools_key)
        self._requests.append(stored)
        return len(self._requests) - 1

    def is_empty(self) -> bool:
        return not self._values and not self._requests

    def element(self) -> str:
        """The data block. `<`, `>` and `&` are written as JSON escapes, so no text in it can close
        the block or start markup, whatever a recorded message says."""
        text = json.dumps({"values": self._values, "requests": self._requests}, ensure_ascii=False)
        safe = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
        return f'<script type="application/json" id="{DATA_ID}">{safe}</script>'


def lazy_value(data: PageData, value: Any) -> str:
    """A `<pre>` the script fills with `value` (text as it is, JSON pretty-printed)."""
    return element("pre", class_="lazy", data_value=data.value(value))
