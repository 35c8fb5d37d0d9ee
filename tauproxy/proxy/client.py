"""ModelClient: the one seam that the agent, the user simulator and the judge call.

One client serves one trial. It gives every call its identity (key, occurrence, sample key), hands
it to the transport stack, prices the answer and keeps a CallRecord, so results show per call
whether it was live or replayed and what it cost.
"""

from __future__ import annotations

from collections import Counter

from tauproxy.data_model.call import CallContext, CallRecord, CallRole, ModelRequest, ModelResponse, TrialScope
from tauproxy.data_model.key import request_key, sample_key
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.transport import PreparedCall, Transport
from tauproxy.data_model.wire import request_to_wire


class ModelClient:
    def __init__(self, transport: Transport, pricing: Pricing, scope: TrialScope) -> None:
        self._transport = transport
        self._pricing = pricing
        self.scope = scope
        self._occurrences: Counter[str] = Counter()
        self.records: list[CallRecord] = []

    def complete(self, request: ModelRequest, role: CallRole) -> ModelResponse:
        call = self.prepare(request, role)
        completion = self._transport.complete(call)
        usage = completion.response.usage
        cost = self._pricing.cost(request.model, usage)
        self.records.append(
            CallRecord(
                index=call.context.call_index,
                role=role,
                model=request.model,
                key=call.key,
                sample_key=call.sample_key,
                source=completion.source,
                usage=usage,
                cost_usd=cost.usd,
                price_source=cost.source,
                latency_s=round(completion.latency_s, 6),
            )
        )
        return completion.response

    def prepare(self, request: ModelRequest, role: CallRole) -> PreparedCall:
        wire = request_to_wire(request)
        key = request_key(wire)
        occurrence = self._occurrences[key]
        self._occurrences[key] += 1
        context = CallContext(role=role, scope=self.scope, call_index=len(self.records))
        skey = sample_key(key, request.seed, self.scope.task_id, self.scope.trial, occurrence)
        return PreparedCall(request, wire, context, key, skey, occurrence)
