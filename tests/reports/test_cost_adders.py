"""Adding a run's trials up one at a time (reports/costs.py): the live tally alone is the live tally of
the whole summary, to the last digit, and the summary adds every call to its role, model and task."""

from __future__ import annotations

from tauproxy.data_model.call import CallRecord, CallSource, Usage
from tauproxy.data_model.result import SimulationRun, TerminationReason
from tauproxy.reports.costs import CostAdder, LiveTallyAdder, cost_summary


def call(index: int, source: CallSource, usd: float | None, role: str = "agent") -> CallRecord:
    return CallRecord(
        index=index,
        role="agent" if role == "agent" else "user",
        model=f"{role}-model",
        key=f"k{index}",
        sample_key=f"s{index}",
        source=source,
        usage=Usage(prompt_tokens=100 + index, completion_tokens=7 * index),
        cost_usd=usd,
        latency_s=0.1 * index,
    )


def trial(task_id: str, calls: list[CallRecord]) -> SimulationRun:
    return SimulationRun(
        id=f"{task_id}:0",
        task_id=task_id,
        trial=0,
        seed=1,
        termination_reason=TerminationReason.USER_STOP,
        messages=[],
        calls=calls,
        agent_cost=0.5,
    )


RUNS = [
    trial("a", [call(1, "live", 0.1), call(2, "replay", 0.2, "user"), call(3, "live", 0.7, "user")]),
    trial("b", [call(4, "shared", 0.3), call(5, "live", 1e-9), call(6, "replay", None)]),
    trial("c", []),  # a run without call records adds nothing live
    trial("d", [call(7, "live", 0.2, "user"), call(8, "live", 0.1)]),
]


def test_the_live_tally_alone_is_the_summarys_live_tally() -> None:
    adder = LiveTallyAdder()
    for run in RUNS:
        adder.add(run)
    live = cost_summary(RUNS).live
    assert adder.tally() == live
    assert (live.calls, live.prompt_tokens, live.completion_tokens) == (5, 500 + 24, 7 * 24)
    assert live.usd == round(0.1 + 0.7 + 1e-9 + 0.2 + 0.1, 10)


def test_an_unpriced_live_call_makes_the_live_tally_unknown() -> None:
    adder = LiveTallyAdder()
    adder.add(trial("a", [call(1, "live", 0.4), call(2, "live", None)]))
    assert adder.tally().usd is None
    assert (adder.tally().known_usd, adder.tally().unknown_price_calls) == (0.4, 1)


def test_each_call_is_added_to_its_role_model_and_task() -> None:
    adder = CostAdder()
    for run in RUNS:
        adder.add(run)
    summary = adder.summary()
    assert summary.by_role["user"].live.calls == 2 and summary.by_role["user"].replayed.calls == 1
    assert summary.by_model["agent-model"].shared.calls == 1
    assert summary.by_task["b"].replayed.unknown_price_calls == 1 and "c" not in summary.by_task
    assert summary.latency_s.live == round(0.1 + 0.3 + 0.5 + 0.7 + 0.8, 6)
    assert summary.unattributed.simulations == 1
