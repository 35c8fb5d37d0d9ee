"""The pricing step: the one place where a call's cost is decided (`Pricing.call_cost` is its rule).

Every answer leaves the transport stack priced, exactly once: a live answer by the step nearest the
provider (under the cassette layer, so the cost is recorded with it), a replay by the cassette layer
through the same step (at this run's prices, falling back to the price recorded with it). An answer
that already carries a cost passes through a further step as it is, so the client and serve never
price anything themselves.
"""

from __future__ import annotations

from dataclasses import replace

from tauproxy.data_model.call import Cost, ModelCall
from tauproxy.data_model.completion import Completion
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.transport import Transport


class PriceStep:
    """Prices one completion of one call."""

    def __init__(self, pricing: Pricing) -> None:
        self.pricing = pricing

    def apply(self, call: ModelCall, completion: Completion, recorded: Cost | None = None) -> Completion:
        """`completion` with its cost: what `call` costs now, else what it was `recorded` with."""
        usage = completion.usage
        priced = replace(completion, cost=self.pricing.call_cost(call, usage, recorded))
        # The copy starts without the usage its original just parsed from the body (a cached
        # property); handed over, so the client does not parse it again for every call.
        priced.__dict__["usage"] = usage
        return priced


class PricedTransport:
    """A transport whose answers leave priced; answers priced below it pass unchanged."""

    def __init__(self, inner: Transport, pricing: Pricing) -> None:
        self._inner = inner
        self._step = PriceStep(pricing)

    def complete(self, call: ModelCall) -> Completion:
        completion = self._inner.complete(call)
        return completion if completion.cost is not None else self._step.apply(call, completion)

    def close(self) -> None:
        self._inner.close()


def cost_of(completion: Completion) -> Cost:
    """The cost of a completion that left a transport stack (which always prices it)."""
    if completion.cost is None:
        raise RuntimeError("an unpriced completion left the transport stack (it has no pricing step)")
    return completion.cost
