"""Money: live spend and replayed (saved) spend, split by role, model and task. Unknown stays unknown."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from tauproxy.data_model.call import CallRecord
from tauproxy.data_model.result import SimulationRun


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
            # A total with any unpriced call in it is unknown; the priced part stays visible apart.
            "usd": None if self.unknown else round(self.usd, 10),
            "known_usd": round(self.usd, 10),
            "unknown_price_calls": self.unknown,
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


def cost_summary(runs: list[SimulationRun]) -> dict[str, Any]:
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
            name: {"live_usd": t["live"].dump()["usd"], "replayed_usd": t["replayed"].dump()["usd"],
                   "live": t["live"].dump(), "replayed": t["replayed"].dump()}
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
