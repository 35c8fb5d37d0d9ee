from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import Field

from tauproxy.domain.state import BaseState
from tauproxy.domain.tools import build_function, tool
from tauproxy.errors import DomainError, ToolExecutionError


@tool("write")
def sample_tool(
    db: object, order_id: Annotated[str, Field(max_length=8)], mode: Literal["a", "b"] = "a", count: int = 1
) -> str:
    """Do a thing to an order.

    Args:
        order_id: The order's id.
        mode: Which way.
        count: How many
            times, at most 3.
    """
    return f"{order_id}:{mode}:{count}"


def test_schema_comes_from_signature_and_docstring() -> None:
    function = build_function(sample_tool, sample_tool.__tauproxy_tool__, "test")
    schema = function.schema.model_dump()["function"]
    assert schema["name"] == "sample_tool" and schema["description"] == "Do a thing to an order."
    props = schema["parameters"]["properties"]
    assert props["order_id"] == {"type": "string", "maxLength": 8, "description": "The order's id."}
    assert props["mode"]["enum"] == ["a", "b"] and props["count"]["description"] == "How many times, at most 3."
    assert schema["parameters"]["required"] == ["order_id"]
    assert function.is_write
    assert function.call(None, {"order_id": "o1", "count": 2}) == "o1:a:2"
    with pytest.raises(ToolExecutionError, match="order_id"):
        function.call(None, {"order_id": "way-too-long-id"})
    with pytest.raises(ToolExecutionError, match="Extra inputs"):
        function.call(None, {"order_id": "o1", "surprise": 1})


def test_tool_without_docstring_is_rejected() -> None:
    @tool()
    def nodoc(db: object) -> None:
        return None

    with pytest.raises(DomainError, match="no docstring"):
        build_function(nodoc, nodoc.__tauproxy_tool__, "x.py")


def test_copy_on_write_state_never_changes_the_base() -> None:
    base = BaseState({"t": {"a": {"n": [1]}}})
    first = base.fresh()
    first.t["a"]["n"].append(2)
    first.t.put("b", {"n": []})
    second = base.fresh()
    assert second.t["a"] == {"n": [1]} and "b" not in second.t
    assert first.t.ids() == ["a", "b"] and len(second.t) == 1


def test_same_as_agrees_with_the_full_hash() -> None:
    import random

    from tauproxy.domain.pack import load_pack

    base = load_pack("retail").base_state
    rng = random.Random(5)
    orders = base.ids("orders")
    for _ in range(40):
        left, right = base.fresh(), base.fresh()
        for state in (left, right):
            for rid in rng.sample(orders, 3):
                record = state.orders[rid]
                if rng.random() < 0.5:
                    record["status"] = rng.choice(["pending", "cancelled"])
            if rng.random() < 0.2:
                state.orders.delete(rng.choice(orders[:5]))
            if rng.random() < 0.2:
                state.table("notes").put("n1", {"x": rng.randint(0, 1)})
            state.table("never_written").get("nothing")  # a read alone changes nothing
        assert left.same_as(right) == (left.sha256() == right.sha256())
    assert base.fresh().same_as(base.fresh())
