"""The report of one results file as a plain dict: the `report --json` contract.

Top level: pass_hat_k {"1".."n": float}, num_tasks, num_trials, avg_reward,
tasks [{task_id, successes, trials}], termination_reasons {reason: count},
calls {live, replayed}, cost {live_usd, replayed_usd, by_role, by_model, unknown_price_calls},
models {agent, user, judge}, price_source, tauproxy_version.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tauproxy.data_model.result import Results
from tauproxy.reports.costs import cost_summary
from tauproxy.reports.metrics import average_reward, counted_runs, pass_hat_ks, task_counts


def summarize(results: Results) -> dict[str, Any]:
    runs = results.simulations
    counts = task_counts(runs, [t.id for t in results.tasks])
    trials_per_task = sorted({c.trials for c in counts})
    info = results.info
    calls = [call for run in runs for call in run.calls]
    return {
        "domain": info.domain,
        "pass_hat_k": {str(k): v for k, v in pass_hat_ks(counts).items()},
        "num_tasks": len(counts),
        "num_trials": trials_per_task[0] if len(trials_per_task) == 1 else (trials_per_task[0] if counts else 0),
        "avg_reward": average_reward(runs),
        "tasks": [c.model_dump() for c in counts],
        "termination_reasons": dict(sorted(Counter(r.termination_reason.value for r in runs).items())),
        "excluded_simulations": len(runs) - len(counted_runs(runs)),
        "calls": {
            "live": sum(1 for c in calls if c.source == "live"),
            "replayed": sum(1 for c in calls if c.source == "replay"),
        },
        "cost": cost_summary(runs),
        "models": {
            "agent": info.agent_info.model_dump(mode="json"),
            "user": info.user_info.model_dump(mode="json"),
            "judge": info.judge_info.model_dump(mode="json"),
        },
        "price_source": info.price_source,
        "tauproxy_version": info.tauproxy_version,
    }
