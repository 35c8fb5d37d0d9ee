"""The pricing step (proxy/priced.py) returns a priced copy of an answer: its fields as they were,
the usage it already parsed handed over, the original left unpriced."""

from __future__ import annotations

from tauproxy.data_model.call import Cost, ModelCall
from tauproxy.data_model.completion import Completion
from tauproxy.data_model.key import Occurrences, TrialScope, identify
from tauproxy.proxy.mock import text_body
from tauproxy.proxy.priced import PriceStep
from tauproxy.proxy.pricing import ModelPrice, Pricing

PRICING = Pricing({"gpt-test": ModelPrice(input_cost_per_token=1e-6, output_cost_per_token=2e-6)}, "test")


def a_call(model: str) -> ModelCall:
    wire = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    identity, index = identify(wire, TrialScope(task_id="t", trial=0), Occurrences())
    return ModelCall(wire, identity, "agent", index)


def an_answer() -> Completion:
    body = text_body("hello", model="gpt-test")
    body["usage"] = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return Completion(body, "replay", latency_s=0.25, raw_body='{"raw": 1}', content_type="text/plain")


def test_the_priced_copy_keeps_every_field_and_the_parsed_usage() -> None:
    answer = an_answer()
    priced = PriceStep(PRICING).apply(a_call("gpt-test"), answer)
    assert priced.cost is not None and priced.cost.usd == 10 * 1e-6 + 5 * 2e-6
    assert (priced.body, priced.source, priced.latency_s, priced.raw_body, priced.content_type) == (
        answer.body,
        "replay",
        0.25,
        '{"raw": 1}',
        "text/plain",
    )
    assert priced.usage is answer.usage  # parsed once, not again for the client
    assert answer.cost is None  # the original is not changed
    assert type(priced) is Completion and priced == Completion(
        answer.body, "replay", 0.25, priced.cost, '{"raw": 1}', "text/plain"
    )


def test_an_unpriced_model_keeps_the_cost_it_was_recorded_with() -> None:
    recorded = Cost(0.5, "recorded")
    priced = PriceStep(PRICING).apply(a_call("unknown-model"), an_answer(), recorded)
    assert priced.cost == recorded
    assert PriceStep(PRICING).apply(a_call("unknown-model"), an_answer()).cost == Cost(None, "unknown")
