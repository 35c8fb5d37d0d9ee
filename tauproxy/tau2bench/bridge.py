"""τ²-bench's own LLM calls, answered through tauproxy's ModelClient and transport stack.

Used when a trial runs on τ²'s own orchestrator (`--tau2-orchestrator tau2`, and what tauproxy's does
not run: tau2bench/trial.py); tauproxy's orchestrator builds the same bodies
itself (tau2bench/wire.py). Its helpers for τ²'s model names and llm args serve both.

τ²-bench's agent and user simulator call `tau2.utils.llm_utils.generate`, which calls
`litellm.completion(model, messages, tools, tool_choice, **llm_args)`. We change nothing in τ²:
each trial hands its agent and user an `llm_args` with a `client` of its own, an OpenAI client whose
HTTP transport never leaves the process (`httpx.MockTransport`). litellm builds the request exactly
as it would for `tau2 run --agent-llm openai/<model> --agent-llm-args '{"api_base": <serve>}'`; the
client catches the JSON body at the HTTP layer, and that body is what is identified and answered:

    wire      the body without connection settings (`without_connection_settings`), as `tauproxy serve` keys it
    identity  `identify_unscoped(wire)`: one sample per request in serve's fixed scope,
              exactly what `tauproxy serve` gives a request without a scope header
    answer    `ModelClient.complete_wire`: the cassette layer, then the provider router, which
              sends the body on through litellm under the model as configured (`upstream_model`)
              and the run's connection settings, as serve does through its upstream map

so a cassette recorded by `tau2 run` through serve replays here with no miss, and the reverse.

Nothing global is patched: the client travels in each trial's own llm_args, so trials on several
threads never share state. A failure under the seam (a replay miss, a provider error) is kept on the
trial's bridge and raised again at once if litellm retries, so the trial ends on the real cause.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from tauproxy.data_model.call import CallRole
from tauproxy.data_model.key import without_connection_settings
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.proxy.client import ModelClient
from tauproxy.tau2bench.settings import TAU2_MAX_RETRIES

# Never contacted: the client's transport answers in-process.
BRIDGE_URL = "http://tauproxy.invalid/v1"
BRIDGE_KEY = "tauproxy-bridge"  # a placeholder the OpenAI client insists on; never sent anywhere
# `tau2 run` adds num_retries (its --max-retries, default TAU2_MAX_RETRIES) to every role's llm args;
# τ²'s generate also retries an empty answer that many times.
# `tau2 run`'s --agent-llm-args / --user-llm-args when the flag is not given; its --judge-llm-args
# default is no args at all.
TAU2_DEFAULT_LLM_ARGS: dict[str, Any] = {"temperature": 0.0}
TAU2_DEFAULT_LLM_ARGS_BY_ROLE: dict[CallRole, dict[str, Any]] = {
    "agent": TAU2_DEFAULT_LLM_ARGS,
    "user": TAU2_DEFAULT_LLM_ARGS,
    "judge": {},
}
OPENAI_PREFIX = "openai/"


def tau2_model_name(model: str) -> str:
    """The name τ² is handed: the OpenAI-compatible route `tau2 run` takes to reach `tauproxy serve`.

    `openai/gpt-4.1` stays; any other name M is sent as `openai/M`, so litellm puts M itself on the
    wire, as it does for `tau2 run --agent-llm openai/M` pointed at serve (which routes M upstream).
    """
    return model if model.startswith(OPENAI_PREFIX) else OPENAI_PREFIX + model


def tau2_llm_args(config: LLMConfig, role: CallRole = "agent", max_retries: int = TAU2_MAX_RETRIES) -> dict[str, Any]:
    """The llm args a `tau2 run --max-retries N` with these args gives this role, connection settings aside."""
    params = config.params(seed=None) if config.args else dict(TAU2_DEFAULT_LLM_ARGS_BY_ROLE[role])
    return {**params, "num_retries": max_retries}


@cache
def _client_class() -> Any:
    """An OpenAI client that τ²'s agent can deepcopy with its llm args (it does): the copy is itself."""
    import openai

    class BridgeClient(openai.OpenAI):
        def __deepcopy__(self, memo: dict[int, Any]) -> BridgeClient:
            return self

    return BridgeClient


class BridgeFailure(Exception):
    """Raised into litellm when a call under the seam failed; the trial reads the real cause."""


class TrialBridge:
    """One trial's bridge: both roles' OpenAI clients over one ModelClient."""

    def __init__(self, client: ModelClient, max_retries: int = TAU2_MAX_RETRIES) -> None:
        self.client = client
        self.max_retries = max_retries
        self.failure: BaseException | None = None
        self._closers: list[Any] = []

    def llm_args(self, role: CallRole, config: LLMConfig) -> dict[str, Any]:
        """`llm_args` for τ²'s agent, user or judge: τ²'s own args plus a client that answers through us."""
        import httpx

        connection = config.connection()

        def handle(request: httpx.Request) -> httpx.Response:
            if self.failure is not None:
                raise BridgeFailure(str(self.failure))
            body = json.loads(request.content)
            wire = without_connection_settings(body)
            try:
                completion = self.client.complete_wire(wire, role, connection, config.model)
            except BaseException as exc:
                self.failure = exc
                raise BridgeFailure(str(exc)) from exc
            return httpx.Response(200, json=completion.body)

        http = httpx.Client(transport=httpx.MockTransport(handle))
        client = _client_class()(api_key=BRIDGE_KEY, base_url=BRIDGE_URL, max_retries=0, http_client=http)
        self._closers.append(client)
        return {**tau2_llm_args(config, role, self.max_retries), "client": client}

    def close(self) -> None:
        for client in self._closers:
            client.close()
        self._closers.clear()
