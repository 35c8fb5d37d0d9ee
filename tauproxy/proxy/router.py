"""Routes a request to a transport by its model name: scripted/..., local/..., or litellm."""

from __future__ import annotations

from collections.abc import Mapping

from tauproxy.data_model.call import ModelCall
from tauproxy.data_model.completion import Completion
from tauproxy.data_model.task import Task
from tauproxy.proxy.scripted import PREFIX as SCRIPTED_PREFIX
from tauproxy.proxy.scripted import ScriptedTransport
from tauproxy.proxy.transport import Transport

LOCAL_PREFIX = "local/"


class ProviderRouter:
    """The innermost live layer. Providers are built on first use, so unused SDKs are never imported."""

    def __init__(self, tasks: Mapping[str, Task]) -> None:
        self._scripted = ScriptedTransport(tasks)
        self._local: Transport | None = None
        self._litellm: Transport | None = None

    def complete(self, call: ModelCall) -> Completion:
        model = call.model
        if model.startswith(SCRIPTED_PREFIX):
            return self._scripted.complete(call)
        if model.startswith(LOCAL_PREFIX):
            if self._local is None:
                from tauproxy.proxy.local import LocalTransport

                self._local = LocalTransport()
            return self._local.complete(call)
        if self._litellm is None:
            from tauproxy.proxy.live import LiteLLMTransport

            self._litellm = LiteLLMTransport()
        return self._litellm.complete(call)

    def close(self) -> None:
        for transport in (self._local, self._litellm):
            if transport is not None:
                transport.close()
