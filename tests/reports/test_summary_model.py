"""ReportSummary from results built in memory: typed fields, unknown money, and the JSON dump."""

from __future__ import annotations

import json
import math

from report_runs import tiny_results

from tauproxy.data_model.call import CallRecord, CallRole, CallSource, Usage
from tauproxy.data_model.result import Results, RewardInfo, SimulationRun, TerminationReason
from tauproxy.data_model.task import RewardType
from tauproxy.reports.costs import Tally
from tauproxy.reports.summary import CallCounts, ReportSummary, summarize

TOP_LEVEL_KEYS = [
    "domain",
    "pass_hat_k",
    "pass_hat_k_ci",
    "num_tasks",
    "num_trials",
    "avg_reward",
    "tasks",
    "termination_reasons",
    "excluded_simulations",
    "excluded_reasons",
    "reward_breakdown",
    "grid",
    "calls",
    "cost",
    "models",
    "price_source",
    "tauproxy_version",
    "domain_sha256",
    "seed",
    "trial_seeds",
    "origin",
    "sources",
    "notes",
    "made_by",
]


def call(index: int, role: CallRole, source: CallSource, cost: float | None, model: str = "m") -> CallRecord:
    return CallRecord(
        index=index,
        role=role,
        model=model,
        key=f"k{index}",
        sample_key=f"s{index}",
        source=source,
        usage=Usage(prompt_tokens=100, completion_tokens=10),
        cost_usd=cost,
        latency_s=0.5,
    )


def with_runs(results: Results, *runs: SimulationRun) -> Results:
    return results.model_copy(update={"simulations": [*results.simulations, *runs]})


def two_trials() -> Results:
    """Trial 0 passes with one replayed and one unpriced live call; trial 1 fails, one priced live call."""
    results = tiny_results(calls=[call(0, "agent", "replay", 0.25), call(1, "user", "live", None, model="u")])
    first = results.simulations[0]
    failed = first.model_copy(
        update={
            "id": f"{first.task_id}:1",
            "trial": 1,
            "seed": 4,
            "termination_reason": TerminationReason.MAX_STEPS,
            "reward_info": RewardInfo(reward=0.0, reward_breakdown={RewardType.DB: 0.0}),
            "calls": [call(2, "agent", "live", 0.125)],
        }
    )
    return with_runs(results, failed)


def test_fields_are_typed_and_hold_the_counts() -> None:
    summary = summarize(two_trials())
    assert summary.pass_hat_k == {1: 0.5, 2: 0.0}
    assert list(summary.pass_hat_k_ci) == [1, 2]
    assert (summary.num_tasks, summary.num_trials, summary.avg_reward) == (1, 2, 0.5)
    assert [(t.successes, t.trials) for t in summary.tasks] == [(1, 2)]
    assert summary.termination_reasons == {"max_steps": 1, "user_stop": 1} and summary.excluded_simulations == 0
    assert list(summary.reward_breakdown) == [RewardType.DB]
    assert summary.reward_breakdown[RewardType.DB].runs == 1
    assert [(c.trial, c.success, c.source) for c in summary.grid[0].trials] == [(0, True, "mixed"), (1, False, "live")]
    assert summary.calls == CallCounts(live=2, replayed=1)
    assert summary.models.agent.llm == "agent-model"
    assert [role for role, _ in summary.models.by_role()] == ["agent", "user", "judge"]


def test_an_unpriced_call_makes_its_side_unknown_and_keeps_the_priced_part() -> None:
    cost = summarize(two_trials()).cost
    assert cost.live == Tally(
        usd=None, known_usd=0.125, unknown_price_calls=1, calls=2, prompt_tokens=200, completion_tokens=20
    )
    assert cost.live_usd is None and cost.replayed_usd == 0.25 and cost.unknown_price_calls == 1
    assert list(cost.by_role) == ["agent", "user"]
    assert cost.by_role["agent"].live_usd == 0.125 and cost.by_role["user"].live_usd is None
    assert list(cost.by_model) == ["m", "u"] and cost.by_task["create_task"].replayed.calls == 1
    assert (cost.latency_s.live, cost.latency_s.replayed) == (1.0, 0.5)
    assert cost.unattributed.simulations == 0


def test_without_call_records_money_is_unknown_and_the_runs_own_costs_are_kept() -> None:
    results = tiny_results()
    results.simulations[0].agent_cost = 0.5
    cost = summarize(results).cost
    assert cost.live_usd is None and cost.replayed_usd is None
    assert cost.unattributed.simulations == 1
    assert cost.unattributed.by_role == {"agent": 0.5, "user": None, "judge": None}


def test_the_dump_is_json_with_the_contract_keys_and_reads_back() -> None:
    summary = summarize(two_trials())
    dump = summary.model_dump(mode="json")
    assert list(dump) == TOP_LEVEL_KEYS
    assert dump["reward_breakdown"] == {"DB": {"mean": 0.0, "runs": 1}}
    assert dump["pass_hat_k_ci"]["1"] == list(summary.pass_hat_k_ci[1])
    assert dump["cost"]["by_role"]["agent"]["live"]["calls"] == 1
    assert ReportSummary.model_validate_json(json.dumps(dump)) == summary


def test_an_undefined_average_is_nan_in_python_and_null_in_json() -> None:
    first = tiny_results().simulations[0]
    results = tiny_results().model_copy(
        update={
            "simulations": [
                first.model_copy(
                    update={"termination_reason": TerminationReason.INFRASTRUCTURE_ERROR, "reward_info": None}
                ),
            ]
        }
    )
    summary = summarize(results)
    assert math.isnan(summary.avg_reward) and summary.pass_hat_k == {} and summary.excluded_simulations == 1
    text = json.dumps(summary.model_dump(mode="json"))
    assert json.loads(text, parse_constant=_no_constants)["avg_reward"] is None
    assert math.isnan(ReportSummary.model_validate_json(text).avg_reward)


def _no_constants(name: str) -> float:
    raise AssertionError(f"{name} is not JSON")


def test_shared_calls_are_counted_and_costed_apart_from_replayed_ones() -> None:
    """A shared call got this run's own live answer to an identical sample: saved, but not replayed."""
    results = tiny_results(calls=[call(0, "user", "live", 0.25), call(1, "user", "shared", 0.25)])
    summary = summarize(results)
    assert summary.calls == CallCounts(live=1, replayed=0, shared=1)
    assert summary.calls.text() == "1 live / 0 replayed / 1 shared"
    cost = summary.cost
    assert (cost.live.calls, cost.replayed.calls, cost.shared.calls) == (1, 0, 1)
    assert cost.live_usd == 0.25 and cost.replayed_usd == 0.0 and cost.shared.usd == 0.25
    assert cost.by_role["user"].shared.calls == 1 and cost.latency_s.shared == 0.5
    # Its answers are new, not read from a cassette: the trial is a live one in the grid.
    assert [c.source for c in summary.grid[0].trials] == ["live"]
    from tauproxy.reports.trial_rows import trial_rows

    [row] = trial_rows(results)
    assert (row.live_calls, row.replayed_calls, row.shared_calls) == (1, 0, 1)

    from tauproxy_cli.report_view import cost_line

    assert "$0.2500 saved by sharing; calls 1 live / 0 replayed / 1 shared" in cost_line(summary)


def test_a_report_dumped_before_shared_calls_were_counted_reads_back_with_none() -> None:
    dump = summarize(two_trials()).model_dump(mode="json")
    del dump["calls"]["shared"]
    del dump["cost"]["shared"]
    del dump["cost"]["latency_s"]["shared"]
    for table in ("by_role", "by_model", "by_task"):
        for split in dump["cost"][table].values():
            del split["shared"]
    older = ReportSummary.model_validate_json(json.dumps(dump))
    assert older.calls.shared == 0 and older.cost.shared.calls == 0
    assert older.cost.by_role["agent"].shared == Tally.none()
