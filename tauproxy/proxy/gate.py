"""A limit on live model calls: the live transport asks a gate for a slot around each call.

Replayed calls never reach the live transport, so they are never limited. Scripted models answer
in-process from the task, with no provider behind them, so they skip the gate too: a slot would only
cost a round trip to wherever the gate lives (a Ray actor, see runner/ray_slots.py).
"""

from __future__ import annotations

from typing import Protocol

from tauproxy.data_model.call import ModelCall
from tauproxy.data_model.completion import Completion
from tauproxy.proxy.scripted import PREFIX as SCRIPTED_PREFIX
from tauproxy.proxy.transport import Transport


class LiveGate(Protocol):
    def acquire(self) -> None: ...

    def release(self) -> None: ...


class GatedTransport:
    def __init__(self, inner: Transport, gate: LiveGate) -> None:
        self._inner = inner
        self._gate = gate

    def complete(self, call: ModelCall) -> Completion:
        if call.model.startswith(SCRIPTED_PREFIX):
            return self._inner.complete(call)
        self._gate.acquire()
        try:
            return self._inner.complete(call)
        finally:
            self._gate.release()

    def close(self) -> None:
        self._inner.close()
