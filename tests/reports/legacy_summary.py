"""The report summary as the plain dict it was before `ReportSummary`: the reference for its JSON shape.

Frozen on purpose. `report --json` and `run --json` print the summary's dump, and users parse it, so
the dump must keep these keys, in this order, with these values. The numbers come from the same
metric functions the model uses; what is frozen here is the shape built around them.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tauproxy.data_model.call import CallRecord
from tauproxy.data_model.result import Results, SimulationRun
from tauproxy.reports.grid import trial_grid
from tauproxy.reports.metrics import (
    average_reward,
    bootstrap_pass_hat_k_ci,
    pass_hat_ks,
    reward_breakdown,
    task_counts,
    termination_counts,
)
from tauproxy.results.provenance import made_by_of, notes_of, origin_of, sources_of, task_order


def legacy_summary(results: Results) -> dict[str, Any]:
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
        "num_trials": min((c.trials for c in counts), default=0),
        "avg_reward": average_reward(runs),
        "tasks": [c.model_dump() for c in counts],
        "termination_reasons": dict(sorted({**terminations.counted, **terminations.excluded}.items())),
        "excluded_simulations": sum(terminations.excluded.values()),
        "excluded_reasons": terminations.excluded,
        "reward_breakdown": {b.value: {"mean": m.mean, "runs": m.runs} for b, m in reward_breakdown(runs).items()},
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
        "made_by": made_by_of(results),  # added after the freeze: keys are only ever added, at the end
    }


class _Tally:
    def __init__(self) -> None:
        self.usd = 0.0
        self.unknown = 0
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.latency_s = 0.0

    def add(self, call: CallRecord) -> None:
        self.calls += 1
        self.prompt_tokens += call.usage.prompt_tokens
        self.completion_tokens += call.usage.completion_tokens
        self.latency_s += call.latency_s
        if call.cost_usd is None:
            self.unknown += 1
        else:
            self.usd += call.cost_usd

    def dump(self) -> dict[str, Any]:
        return {
            "usd": None if self.unknown else round(self.usd, 10),
            "known_usd": round(self.usd, 10),
            "unknown_price_calls": self.unknown,
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


def _cost_summary(runs: list[SimulationRun]) -> dict[str, Any]:
    live, replayed = _Tally(), _Tally()
    by_role: dict[str, dict[str, _Tally]] = defaultdict(lambda: {"live": _Tally(), "replayed": _Tally()})
    by_model: dict[str, dict[str, _Tally]] = defaultdict(lambda: {"live": _Tally(), "replayed": _Tally()})
    by_task: dict[str, dict[str, _Tally]] = defaultdict(lambda: {"live": _Tally(), "replayed": _Tally()})
    for run in runs:
        for call in run.calls:
            side = "live" if call.source == "live" else "replayed"
            (live if side == "live" else replayed).add(call)
            by_role[call.role][side].add(call)
            by_model[call.model][side].add(call)
            by_task[run.task_id][side].add(call)

    def split(table: dict[str, dict[str, _Tally]]) -> dict[str, Any]:
        return {
            name: {
                "live_usd": t["live"].dump()["usd"],
                "replayed_usd": t["replayed"].dump()["usd"],
                "live": t["live"].dump(),
                "replayed": t["replayed"].dump(),
            }
            for name, t in sorted(table.items())
        }

    return {
        "live_usd": live.dump()["usd"],
        "replayed_usd": replayed.dump()["usd"],
        "unknown_price_calls": live.unknown + replayed.unknown,
        "live": live.dump(),
        "replayed": replayed.dump(),
        "by_role": split(by_role),
        "by_model": split(by_model),
        "by_task": split(by_task),
        "latency_s": {"live": round(live.latency_s, 6), "replayed": round(replayed.latency_s, 6)},
    }


def _costs(runs: list[SimulationRun]) -> dict[str, Any]:
    cost = _cost_summary(runs)
    unrecorded = [run for run in runs if not run.calls]
    if runs and len(unrecorded) == len(runs):
        cost["live_usd"] = None
        cost["replayed_usd"] = None
    cost["unattributed"] = _unattributed(unrecorded)
    return cost


def _unattributed(runs: list[SimulationRun]) -> dict[str, Any]:
    def total(values: list[float | None]) -> float | None:
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
