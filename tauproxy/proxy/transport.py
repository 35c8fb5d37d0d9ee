"""The transport contract: every way of answering a model call is a Transport.

Live providers, scripted and local models, and the cassette layer (which wraps another transport)
all implement the same one method, so the engine and `serve` are handed a transport and never know
whether caching exists. The call (`ModelCall`) and the answer (`Completion`) are data_model types.
"""

from __future__ import annotations

from typing import Protocol

from tauproxy.data_model.call import ModelCall
from tauproxy.data_model.completion import Completion


class Transport(Protocol):
    def complete(self, call: ModelCall) -> Completion: ...

    def close(self) -> None: ...
