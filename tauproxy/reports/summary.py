"""The report of a results file as a plain dict: the `report --json` contract.

Top level (keys are only ever added, never renamed):
    pass_hat_k {"1".."n": float}, pass_hat_k_ci {"1".."n": [lo, hi]}, num_tasks, num_trials,
    avg_reward, tasks [{task_id, successes, trials}],
    termination_reasons {reason: count} (all runs), excluded_simulations, excluded_reasons {reason: count},
    reward_breakdown {basis: {mean, runs}},
    grid [{task_id, trials [{trial, seed, success, source, reward, termination_reason, excluded}]}],
    calls {live, replayed},
    cost {live_usd, replayed_usd, by_role, by_model, by_task, unknown_price_calls, ..., unattributed},
    models {agent, user, judge}, price_source, tauproxy_version, domain, domain_sha256, seed,
    trial_seeds, origin, sources, notes.
Money that is not known is None ("unknown"), never 0.
"""

from __future__ import annotations

from typing import Any

from tauproxy.data_model.result import Results, SimulationRun
from tauproxy.reports.costs import cost_summary
from tauproxy.reports.grid import trial_grid
from tauproxy.reports.metrics import (
    average_reward,
    bootstrap_pass_hat_k_ci,
    pass_hat_ks,
    reward_breakdown,
    task_counts,
    termination_counts,
)
from tauproxy.reports.provenance import notes_of, origin_of, sources_of, task_order


def summarize(results: Results) -> dict[str, Any]:
    runs = results.simulations
    order = task_order(results)
    counts = task_counts(runs, order)
    info = results.info
    calls = [call for run in runs for call in run.calls]
    terminations = termination_counts(runs)
    return {
        "domain": info.domain,
        "pass_hat_k": {str(k): v for k, v in pass_hat_ks(counts).items()},
        "pass_hat_k_ci": {str(k): [lo, hi] for k, (lo, hi) in bootstrap_pass_hat_k_ci(counts).items()},
        "num_tasks": len(counts),
        # The fewest trials any task has: the largest k that pass^k is defined for.
        "num_trials": min((c.trials for c in counts), default=0),
        "avg_reward": average_reward(runs),
        "tasks": [c.model_dump() for c in counts],
        "termination_reasons": dict(sorted({**terminations.counted, **terminations.excluded}.items())),
        "excluded_simulations": sum(terminations.excluded.values()),
        "excluded_reasons": terminations.excluded,
        "reward_breakdown": {b.basis.value: {"mean": b.mean, "runs": b.runs} for b in reward_breakdown(runs)},
        "grid": [row.model_dump() for row in trial_grid(runs, order)],
        "calls": {
            "live": sum(1 for c in calls if c.source == "live"),
            "replayed": sum(1 for c in calls if c.source == "replay"),
        },
        "cost": _costs(runs),
        "models": {
            "agent": info.agent_info.model_dump(mode="json"),
            "user": info.user_info.model_dump(mode="json"),
            "judge": info.judge_info.model_dump(mode="json"),
        },
        "price_source": info.price_source,
        "tauproxy_version": info.tauproxy_version,
        "domain_sha256": info.domain_sha256,
        "seed": info.seed,
        "trial_seeds": list(info.trial_seeds),
        "origin": origin_of(results),
        "sources": sources_of(results),
        "notes": notes_of(results),
    }


def _costs(runs: list[SimulationRun]) -> dict[str, Any]:
    cost = cost_summary(runs)
    unrecorded = [run for run in runs if not run.calls]
    if runs and len(unrecorded) == len(runs):
        # No call records at all (a τ²-bench file): whether money was spent live or replayed is
        # unknown, and must not read as $0.
        cost["live_usd"] = None
        cost["replayed_usd"] = None
    cost["unattributed"] = _unattributed(unrecorded)
    return cost


def _unattributed(runs: list[SimulationRun]) -> dict[str, Any]:
    """Per-role cost that runs without call records report themselves (τ²'s agent_cost/user_cost)."""

    def total(values: list[float | None]) -> float | None:
        # One missing value makes the total unknown: a partial sum would read as the whole bill.
        if not values or any(v is None for v in values):
            return None
        return round(sum(v for v in values if v is not None), 10)

    return {
        "simulations": len(runs),
        "by_role": {
            "agent": total([r.agent_cost for r in runs]),
            "user": total([r.user_cost for r in runs]),
            "judge": total([r.judge_cost for r in runs]),
        },
    }
