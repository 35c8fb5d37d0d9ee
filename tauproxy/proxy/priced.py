"""The pricing step: the one place where a call's cost is decided (`Pricing.call_cost` is its rule).

Every answer leaves the transport stack priced, exactly once: a live answer by the step nearest the
provider (under the cassette layer, so the cost is recorded with it), a replay by the cassette layer
through the same step (at this run's prices, falling back to the price recorded with it). An answer
that already carries a cost passes through a further step as it is, so the client and serve never
price anything themselves.
"""

from __future__ import annotations

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
        cost = self.pricing.call_cost(call, completion.usage, recorded)
        # A copy of its fields and cached properties (the usage just parsed from the body, which the
        # client reads next) with the cost set: `dataclasses.replace` runs the frozen class's
        # __init__ field by field, a fifth of this step in a replay, and drops the parsed usage.
        priced = object.__new__(type(completion))
        priced.__dict__.update(completion.__dict__, cost=cost)
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
