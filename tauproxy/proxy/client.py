"""ModelClient: the one seam that the agent, the user simulator and the judge call.

One client serves one trial. It gives every call its identity (`key.identify`: key, occurrence,
sample key), hands it to the transport stack and keeps a CallRecord, so results show per call
whether it was live or replayed and what it cost. The stack prices every answer (priced.py); the
client puts a pricing step on top of the transport it is given, which prices only what no step
below did (a bare transport: a test's mock, a local model).
"""

from __future__ import annotations

from typing import Any

from tauproxy.data_model.call import (
    CallRecord,
    CallRole,
    ConnectionSettings,
    ModelCall,
    ModelRequest,
    ModelResponse,
)
from tauproxy.data_model.completion import Completion
from tauproxy.data_model.key import ConversationKeys, Occurrences, TrialScope, identify, identify_unscoped
from tauproxy.data_model.wire import request_to_wire
from tauproxy.errors import InfrastructureError, ModelCallError
from tauproxy.proxy.priced import PricedTransport, cost_of
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.transport import Transport


class ModelClient:
    def __init__(self, transport: Transport, pricing: Pricing, scope: TrialScope) -> None:
        self._transport = PricedTransport(transport, pricing)
        self.scope = scope
        self._occurrences = Occurrences()
        self.records: list[CallRecord] = []

    def complete(self, request: ModelRequest, role: CallRole) -> ModelResponse:
        return self._send(self.prepare(request, role), request.model).response

    def complete_wire(
        self,
        wire: dict[str, Any],
        role: CallRole,
        connection: ConnectionSettings,
        upstream_model: str | None = None,
        keys: ConversationKeys | None = None,
    ) -> Completion:
        """A request body another harness built (τ²-bench's own agent, user and judge, tauproxy/tau2bench),
        identified as `tauproxy serve` identifies a seeded harness's requests without a scope header
        (`identify_unscoped`, no counter): one sample per request, so the two share one cassette."""
        identity, _ = identify_unscoped(wire, keys)
        call = ModelCall(
            wire,
            identity,
            role,
            len(self.records),
            connection=connection,
            upstream_model=upstream_model,
            made_in=self.scope,  # so a miss report names this trial, though the key names none
        )
        return self._send(call, upstream_model or str(wire["model"]))

    def _send(self, call: ModelCall, model: str) -> Completion:
        try:
            completion = self._transport.complete(call)
        except InfrastructureError:
            raise
        except Exception as exc:
            # Whatever goes wrong under this seam (an unknown model name, a provider SDK's own
            # exception, a transport's bug) is the infrastructure's failure, never the agent's: the
            # trial must be excluded, not scored 0 as if the agent had erred.
            raise ModelCallError(f"{model}: {type(exc).__name__}: {exc}") from exc
        usage = completion.usage
        cost = cost_of(completion)
        self.records.append(
            CallRecord(
                index=call.call_index,
                role=call.role,
                model=model,
                key=call.key,
                sample_key=call.sample_key,
                source=completion.source,
                usage=usage,
                cost_usd=cost.usd,
                price_source=cost.source,
                latency_s=round(completion.latency_s, 6),
            )
        )
        return completion

    def prepare(self, request: ModelRequest, role: CallRole) -> ModelCall:
        wire = request_to_wire(request)
        identity, call_index = identify(wire, self.scope, self._occurrences)
        return ModelCall(wire, identity, role, call_index, request=request, connection=request.connection)
