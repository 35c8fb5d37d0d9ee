"""MockTransport: answers calls with a function of yours, in memory (like httpx.MockTransport).

For tests of anything that takes a Transport: the cassette layer, the model client, your own agent.

    transport = MockTransport(lambda call: text_body(f"echo {call.model}"))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tauproxy.data_model.call import ModelCall, Usage
from tauproxy.data_model.completion import Completion
from tauproxy.data_model.wire import completion_body

Handler = Callable[[ModelCall], dict[str, Any]]


def text_body(text: str, usage: Usage | None = None, model: str = "mock") -> dict[str, Any]:
    """A chat.completion body whose answer is `text`."""
    return completion_body(
        {"role": "assistant", "content": text},
        finish_reason="stop",
        usage=usage or Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12),
        response_id="chatcmpl-mock",
        model=model,
        created=0,
    )


class MockTransport:
    """Calls `handler` for every call and keeps each call it saw in `calls`.

    `handler` returns a chat.completion body, or raises (a ModelCallError, say) to fail the call.
    """

    def __init__(self, handler: Handler, latency_s: float = 0.0) -> None:
        self._handler = handler
        self._latency_s = latency_s
        self.calls: list[ModelCall] = []

    def complete(self, call: ModelCall) -> Completion:
        self.calls.append(call)
        return Completion(body=self._handler(call), source="live", latency_s=self._latency_s)

    def close(self) -> None:
        return None
