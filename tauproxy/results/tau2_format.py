"""τ²-bench's simulations file (`tau2 run --save-to NAME` writes `NAME.json`) read into our Results.

Shapes follow ../shared/reference/tau2-facts.md. Reading is lenient (τ² adds fields release after
release) and says in `notes` what it dropped, when what it dropped held something. It is the one
reader every command uses for τ² files (through tauproxy.results.load), so that `report`, `diff`,
`check`, `view` and `estimate` give a τ² run the meaning τ² gives it:

- pass^k counts what `tau2.metrics` counts: every simulation in the file. A simulation τ² marked
  `skipped` (`--skip-failed-samples`: it failed to run) is kept, as the agent_error with reward 0
  that τ² writes for it, because τ²'s own pass^k scores it as a failure.
- τ² writes 0.0 as the cost of a model it has no price for. A cost of exactly 0.0 is read as unknown
  unless the role's model is free by declaration.
- τ²'s git commit and timestamps say when and by what the file was made, not how the run was set
  up: they go to `made_by`, never into the settings that `diff` compares.

τ² keeps no per-call records, so runs read from it have an empty `calls` list (a serve run log beside
the file fills them in; see tauproxy.results.load). The usage τ² keeps per message is kept as
`observed_calls`, which is what `estimate --history` learns from.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tauproxy.data_model.call import CallRole, Usage
from tauproxy.data_model.message import Message
from tauproxy.data_model.result import ModelInfo, RewardInfo, RunInfo, SimulationRun, TerminationReason
from tauproxy.data_model.task import Task
from tauproxy.errors import ConfigError
from tauproxy.redact import redact_llm_args
from tauproxy.results.lenient import validate_dropping_extras
from tauproxy.results.provenance import ObservedCall, SourcedResults

UNKNOWN = "unknown"
TAU2 = "τ²-bench"
# RunInfo.tauproxy_version of a file tauproxy did not write: the same for every τ² file, so that two
# τ² runs never differ on it (what made the file is `made_by`).
NOT_TAUPROXY = f"none ({TAU2})"
# Models that cost nothing by declaration: the same prefixes as tauproxy.proxy.pricing.FREE_PREFIXES
# (a layer above this one; tests/reports/test_tau2_commands.py keeps the two equal).
FREE_BY_DECLARATION = ("scripted/", "local/")
SKIPPED = f"skipped by {TAU2} (--skip-failed-samples): the simulation failed to run and τ² scores it 0"
# τ² reasons we do not have, mapped so that pass^k stays τ²'s: τ² drops context_window_exceeded
# from its metrics as we drop infrastructure errors, and counts the other two as failures.
_TERMINATION_ALIASES = {
    "timeout": TerminationReason.MAX_STEPS,
    "context_window_exceeded": TerminationReason.INFRASTRUCTURE_ERROR,
    "unexpected_error": TerminationReason.AGENT_ERROR,
}
_ROLES: dict[str, CallRole] = {"assistant": "agent", "user": "user"}


def looks_like_tau2_simulations(data: Any) -> bool:
    """A τ² simulations file: {info, simulations} whose info has τ²'s environment_info, not our version."""
    if not isinstance(data, dict) or not isinstance(data.get("info"), dict):
        return False
    info = data["info"]
    return "simulations" in data and "tauproxy_version" not in info and "environment_info" in info


def looks_like_tau2_metrics(data: Any) -> bool:
    """τ²'s `NAME_results.json` (its metrics), which people pass by mistake for the simulations."""
    return isinstance(data, dict) and isinstance(data.get("metrics"), dict) and "pass_at_k" in data["metrics"]


def read_tau2_results(path: Path) -> SourcedResults:
    """A τ²-bench simulations file (`NAME.json`, not `NAME_results.json`) as our Results."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return tau2_to_results(data, source=str(path))


def tau2_to_results(data: dict[str, Any], source: str) -> SourcedResults:
    if not looks_like_tau2_simulations(data):
        raise ConfigError(f"{source}: not a τ²-bench simulations file (needs info.environment_info and simulations)")
    notes: list[str] = []
    info = data["info"]
    raw_tasks = [t for t in data.get("tasks") or [] if isinstance(t, dict)]
    tasks = _tasks(raw_tasks, notes)
    prices = _Prices(info)
    simulations, observed = _simulations(data["simulations"], prices, notes)
    notes.extend(prices.notes())
    task_ids = [str(t.get("id")) for t in raw_tasks]
    if not task_ids:
        task_ids = list(OrderedDict.fromkeys(s.task_id for s in simulations))
    return SourcedResults(
        timestamp=data.get("timestamp"),
        info=_run_info(info, simulations),
        tasks=tasks,
        simulations=simulations,
        origin="tau2",
        sources=[source],
        task_ids=task_ids,
        notes=notes,
        made_by=_made_by(info.get("git_commit")),
        observed_calls=observed,
    )


def tau2_simulation(raw: dict[str, Any], ours: Mapping[str, Any] | None = None) -> SimulationRun:
    """One τ² simulation (its JSON form, as `tau2 run` writes it in a file with no model names) read
    as `tau2_to_results` reads it there, without building the rest of the file: what a τ² trial run
    by tauproxy becomes (tau2bench/trial.py). `ours`: fields the caller knows better than τ² (its
    id, seed, calls, costs, duration), which replace what was read.

    It is validated once, as a whole: a trial's messages one model at a time, and its reward through
    the lenient reader, cost a τ² replay more than the rest of keeping the trial. A simulation that
    does not validate so (a reward with fields we do not model) is read piece by piece instead, as
    the file reader reads it, to the same record."""
    prices = _Prices({})
    fields = _simulation_fields(raw, prices, {})
    reward = raw.get("reward_info")
    try:
        return SimulationRun.model_validate(
            {**fields, "reward_info": reward if isinstance(reward, dict) else None, **(ours or {})}
        )
    except ValidationError:
        runs, _ = _simulations([raw], prices, [], observe=False)
        return runs[0].model_copy(update=dict(ours or {}))


def _made_by(git_commit: Any) -> str:
    commit = str(git_commit or UNKNOWN)
    if commit.startswith("tauproxy "):  # our own `report --format tau2` export, read back
        return f"{commit} (exported in {TAU2}'s shape)"
    return TAU2 if commit == UNKNOWN else f"{TAU2} (git {commit[:12]})"


SOLO_AGENT = "llm_agent_solo"


def _run_info(info: dict[str, Any], simulations: list[SimulationRun]) -> RunInfo:
    seeds_by_trial: dict[int, int] = {}
    for sim in simulations:
        seeds_by_trial.setdefault(sim.trial, sim.seed)
    environment = info.get("environment_info") or {}
    return RunInfo(
        tauproxy_version=NOT_TAUPROXY,
        domain=str(environment.get("domain_name") or UNKNOWN),
        # τ² records no content hash of its domain; ours hashes our pack files, so none can be derived.
        domain_sha256=UNKNOWN,
        num_trials=int(info.get("num_trials") or len(seeds_by_trial) or 1),
        seed=int(info.get("seed") or 0),
        trial_seeds=[seeds_by_trial[t] for t in sorted(seeds_by_trial)],
        max_steps=int(info.get("max_steps") or 0),
        max_errors=int(info.get("max_errors") or 0),
        agent_info=_model_info(info.get("agent_info")),
        user_info=_model_info(info.get("user_info")),
        # τ² does not record which model judged NL assertions.
        judge_info=ModelInfo(llm=UNKNOWN),
        # `tau2 run --agent llm_agent_solo` (with --user dummy_user): the agent holds the user's tools.
        solo=(info.get("agent_info") or {}).get("implementation") == SOLO_AGENT,
        price_source=f"{TAU2}'s own agent_cost/user_cost (litellm prices at run time)",
    )


def _model_info(raw: Any) -> ModelInfo:
    raw = raw if isinstance(raw, dict) else {}
    args = raw.get("llm_args") if isinstance(raw.get("llm_args"), dict) else {}
    name = raw.get("llm") or raw.get("implementation") or UNKNOWN
    return ModelInfo(llm=str(name), llm_args=redact_llm_args(args))


class _Prices:
    """Reads τ²'s costs: 0.0 for a model that is not free by declaration is unknown (τ² writes 0.0
    when litellm has no price), and a role without a model costs nothing."""

    def __init__(self, info: dict[str, Any]) -> None:
        self.models: dict[CallRole, str | None] = {role: _llm(info.get(f"{role}_info")) for role in ("agent", "user")}
        self.unpriced: set[CallRole] = set()

    def cost(self, role: CallRole, value: Any) -> float | None:
        if not isinstance(value, int | float) or isinstance(value, bool):
            return None
        model = self.models.get(role)
        if value == 0.0 and model is not None and not model.startswith(FREE_BY_DECLARATION):
            self.unpriced.add(role)
            return None
        return float(value)

    def model(self, role: CallRole) -> str:
        return self.models.get(role) or UNKNOWN

    def notes(self) -> list[str]:
        return [
            f"{TAU2} wrote a cost of 0.0 for the {role} model {self.models[role]}, as it does for a model "
            "it has no price for: read as unknown"
            for role in ("agent", "user")
            if role in self.unpriced
        ]


def _llm(raw: Any) -> str | None:
    llm = raw.get("llm") if isinstance(raw, dict) else None
    return str(llm) if llm else None


def _tasks(raw_tasks: list[dict[str, Any]], notes: list[str]) -> list[Task]:
    tasks: list[Task] = []
    dropped_fields: set[str] = set()
    for raw in raw_tasks:
        task, dropped = validate_dropping_extras(Task, raw)
        # τ² writes every field of its task model; one that is null carries nothing, so dropping it
        # is no loss worth a warning (every airline task has "ticket": null).
        dropped_fields.update(path.split(".")[-1] for path, value in dropped.items() if not _empty(value))
        if task is None:
            notes.append(f"task {raw.get('id')}: definition does not validate; kept its id only")
        else:
            tasks.append(task)
    if dropped_fields:
        notes.append("task fields not modelled, dropped: " + ", ".join(sorted(dropped_fields)))
    return tasks


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _simulations(
    raw_sims: Any, prices: _Prices, notes: list[str], observe: bool = True
) -> tuple[list[SimulationRun], dict[str, list[ObservedCall]]]:
    runs: list[SimulationRun] = []
    observed: dict[str, list[ObservedCall]] = {}
    next_trial: dict[str, int] = {}
    skipped = 0
    for raw in raw_sims if isinstance(raw_sims, list) else []:
        if not isinstance(raw, dict):
            continue
        fields = _simulation_fields(raw, prices, next_trial)
        skipped += bool(raw.get("skipped"))
        fields["messages"] = [Message(**message) for message in fields["messages"]]
        runs.append(SimulationRun(**fields, reward_info=_reward_info(raw.get("reward_info"), notes)))
        if not observe:
            continue
        raw_messages = [m for m in raw.get("messages") or [] if isinstance(m, dict)]
        calls = [call for item in raw_messages if (call := _observed_call(item, prices)) is not None]
        if calls:
            observed[fields["id"]] = calls
    if skipped:
        notes.append(
            f"{skipped} simulations {TAU2} marked skipped (they failed to run) count as failures, "
            f"as in {TAU2}'s own pass^k"
        )
    return runs, observed


def _simulation_fields(raw: dict[str, Any], prices: _Prices, next_trial: dict[str, int]) -> dict[str, Any]:
    """A simulation's fields but its reward, its messages as fields of our Message. `next_trial`: the
    trial after the last one read of each task, for a simulation that has no trial number."""
    task_id = str(raw.get("task_id"))
    trial = raw.get("trial")
    if not isinstance(trial, int):
        trial = next_trial.get(task_id, 0)
    next_trial[task_id] = max(next_trial.get(task_id, 0), trial + 1)
    reason, error = _termination(raw.get("termination_reason"))
    if raw.get("skipped"):
        error = SKIPPED if error is None else f"{SKIPPED}; {error}"
    return {
        "id": str(raw.get("id") or f"{task_id}:{trial}"),
        "task_id": task_id,
        "trial": trial,
        "seed": int(raw.get("seed") or 0),
        "termination_reason": reason,
        "messages": [m for item in raw.get("messages") or [] if isinstance(item, dict) for m in _messages(item)],
        "error": error,
        "agent_cost": prices.cost("agent", raw.get("agent_cost")),
        "user_cost": prices.cost("user", raw.get("user_cost")),
        "duration": float(raw.get("duration") or 0.0),
    }


def _observed_call(raw: dict[str, Any], prices: _Prices) -> ObservedCall | None:
    """The call behind an agent or user message, when τ² kept its usage (the fixed greeting has none)."""
    role = _ROLES.get(str(raw.get("role")))
    usage = raw.get("usage")
    if role is None or not isinstance(usage, dict):
        return None
    try:
        tokens = Usage.model_validate({k: v for k, v in usage.items() if k in Usage.model_fields and v is not None})
    except ValidationError:
        return None
    return ObservedCall(role=role, model=prices.model(role), usage=tokens)


def _termination(raw: Any) -> tuple[TerminationReason, str | None]:
    try:
        return TerminationReason(raw), None
    except ValueError:
        mapped = _TERMINATION_ALIASES.get(str(raw), TerminationReason.AGENT_ERROR)
        return mapped, f"{TAU2} termination_reason {raw!r}"


def _reward_info(raw: Any, notes: list[str]) -> RewardInfo | None:
    if not isinstance(raw, dict):
        return None
    info, _ = validate_dropping_extras(RewardInfo, raw)
    if info is not None:
        return info
    # Keep the number pass^k needs even when the details are in a shape we do not know.
    if "reward" not in raw:
        return None
    notes.append("a reward_info did not validate; kept its reward and breakdown only")
    breakdown, _ = validate_dropping_extras(
        RewardInfo, {"reward": raw["reward"], "reward_breakdown": raw.get("reward_breakdown")}
    )
    return breakdown or RewardInfo(reward=float(raw["reward"]))


def _messages(raw: Any) -> list[dict[str, Any]]:
    """The fields of our Messages behind one τ² message (a multi-tool message holds several)."""
    if not isinstance(raw, dict):
        return []
    role = raw.get("role")
    if role == "tool" and isinstance(raw.get("tool_messages"), list):
        return [m for inner in raw["tool_messages"] for m in _messages(inner)]
    content = raw.get("content")
    content = content if content is None or isinstance(content, str) else json.dumps(content)
    if role == "tool":
        answered = raw.get("id") or raw.get("tool_call_id")
        return [
            {
                "role": "tool",
                "content": content,
                "tool_call_id": answered,
                "turn_idx": raw.get("turn_idx"),
                "requestor": raw.get("requestor") or "assistant",
                "error": bool(raw.get("error")),
            }
        ]
    if role not in ("assistant", "user", "system"):
        return []
    side = "user" if role == "user" else "assistant"
    calls = [_tool_call(tc, side) for tc in raw.get("tool_calls") or [] if isinstance(tc, dict)]
    return [{"role": role, "content": content, "tool_calls": calls or None, "turn_idx": raw.get("turn_idx")}]


def _tool_call(raw: dict[str, Any], side: str) -> dict[str, Any]:
    arguments = raw.get("arguments")
    if isinstance(arguments, str):
        # Some providers hand arguments back as a JSON string; ours are always an object.
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            arguments = {"_raw": arguments}
    return {
        "id": str(raw.get("id") or ""),
        "name": str(raw.get("name")),
        "arguments": arguments if isinstance(arguments, dict) else {},
        "requestor": "user" if (raw.get("requestor") or side) == "user" else "assistant",
    }
