"""τ²-bench interop: read its simulations files into our Results, and export ours in its shape.

Shapes follow ../shared/reference/tau2-facts.md. Reading is lenient (τ² adds fields release after
release) and says what it dropped in `notes`. τ² keeps no per-call records, so runs read from it
have an empty `calls` list: whether a call was live or replayed is unknown, and their cost is only
the per-role totals τ² wrote (agent_cost, user_cost).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path
from typing import Any

from tauproxy import __version__
from tauproxy.data_model.message import Message, ToolCall
from tauproxy.data_model.result import (
    ModelInfo,
    Results,
    RewardInfo,
    RunInfo,
    SimulationRun,
    TerminationReason,
)
from tauproxy.data_model.task import Task
from tauproxy.errors import ConfigError
from tauproxy.redact import redact_llm_args
from tauproxy.reports.lenient import validate_dropping_extras
from tauproxy.reports.provenance import SourcedResults

UNKNOWN = "unknown"
# τ² reasons we do not have, mapped so that pass^k stays τ²'s: τ² drops context_window_exceeded
# from its metrics as we drop infrastructure errors, and counts the other two as failures.
_TERMINATION_ALIASES = {
    "timeout": TerminationReason.MAX_STEPS,
    "context_window_exceeded": TerminationReason.INFRASTRUCTURE_ERROR,
    "unexpected_error": TerminationReason.AGENT_ERROR,
}


def is_tau2_document(data: Any) -> bool:
    """A τ² simulations file: {info, simulations} whose info has τ²'s environment_info, not our version."""
    if not isinstance(data, dict) or not isinstance(data.get("info"), dict):
        return False
    info = data["info"]
    return "simulations" in data and "tauproxy_version" not in info and "environment_info" in info


def read_tau2_results(path: Path) -> SourcedResults:
    """A τ²-bench simulations file (`NAME.json`, not `NAME_results.json`) as our Results."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return tau2_to_results(data, source=str(path))


def tau2_to_results(data: dict[str, Any], source: str) -> SourcedResults:
    if not is_tau2_document(data):
        raise ConfigError(
            f"{source}: not a τ²-bench simulations file (needs info.environment_info and simulations)"
        )
    notes: list[str] = []
    raw_tasks = [t for t in data.get("tasks") or [] if isinstance(t, dict)]
    tasks = _tasks(raw_tasks, notes)
    simulations = _simulations(data["simulations"], notes)
    task_ids = [str(t.get("id")) for t in raw_tasks]
    if not task_ids:
        task_ids = list(OrderedDict.fromkeys(s.task_id for s in simulations))
    return SourcedResults(
        timestamp=data.get("timestamp"),
        info=_run_info(data["info"], simulations),
        tasks=tasks,
        simulations=simulations,
        origin="tau2",
        sources=[source],
        task_ids=task_ids,
        notes=notes,
    )


def _run_info(info: dict[str, Any], simulations: list[SimulationRun]) -> RunInfo:
    seeds_by_trial: dict[int, int] = {}
    for sim in simulations:
        seeds_by_trial.setdefault(sim.trial, sim.seed)
    environment = info.get("environment_info") or {}
    return RunInfo(
        # Not made by tauproxy: say what made it, and which tauproxy read it.
        tauproxy_version=f"none (τ²-bench, git {info.get('git_commit', UNKNOWN)}); read by {__version__}",
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
        price_source="τ²-bench's own agent_cost/user_cost (litellm prices at run time)",
    )


def _model_info(raw: Any) -> ModelInfo:
    raw = raw if isinstance(raw, dict) else {}
    args = raw.get("llm_args") if isinstance(raw.get("llm_args"), dict) else {}
    name = raw.get("llm") or raw.get("implementation") or UNKNOWN
    return ModelInfo(llm=str(name), llm_args=redact_llm_args(args))


def _tasks(raw_tasks: list[dict[str, Any]], notes: list[str]) -> list[Task]:
    tasks: list[Task] = []
    dropped_fields: set[str] = set()
    for raw in raw_tasks:
        task, dropped = validate_dropping_extras(Task, raw)
        dropped_fields.update(path.split(".")[-1] for path in dropped)
        if task is None:
            notes.append(f"task {raw.get('id')}: definition does not validate; kept its id only")
        else:
            tasks.append(task)
    if dropped_fields:
        notes.append("task fields not modelled, dropped: " + ", ".join(sorted(dropped_fields)))
    return tasks


def _simulations(raw_sims: Any, notes: list[str]) -> list[SimulationRun]:
    runs: list[SimulationRun] = []
    next_trial: dict[str, int] = {}
    skipped = 0
    for raw in raw_sims if isinstance(raw_sims, list) else []:
        if raw.get("skipped"):
            skipped += 1  # never ran: τ² leaves them out of its metrics too
            continue
        task_id = str(raw.get("task_id"))
        trial = raw.get("trial")
        if not isinstance(trial, int):
            trial = next_trial.get(task_id, 0)
        next_trial[task_id] = max(next_trial.get(task_id, 0), trial + 1)
        reason, error = _termination(raw.get("termination_reason"))
        runs.append(
            SimulationRun(
                id=str(raw.get("id") or f"{task_id}:{trial}"),
                task_id=task_id,
                trial=trial,
                seed=int(raw.get("seed") or 0),
                termination_reason=reason,
                messages=[m for item in raw.get("messages") or [] for m in _messages(item)],
                reward_info=_reward_info(raw.get("reward_info"), notes),
                error=error,
                agent_cost=raw.get("agent_cost"),
                user_cost=raw.get("user_cost"),
                duration=float(raw.get("duration") or 0.0),
            )
        )
    if skipped:
        notes.append(f"{skipped} simulations marked skipped by τ²-bench were left out")
    return runs


def _termination(raw: Any) -> tuple[TerminationReason, str | None]:
    try:
        return TerminationReason(raw), None
    except ValueError:
        mapped = _TERMINATION_ALIASES.get(str(raw), TerminationReason.AGENT_ERROR)
        return mapped, f"τ²-bench termination_reason {raw!r}"


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
    breakdown, _ = validate_dropping_extras(RewardInfo, {"reward": raw["reward"],
                                                        "reward_breakdown": raw.get("reward_breakdown")})
    return breakdown or RewardInfo(reward=float(raw["reward"]))


def _messages(raw: Any) -> list[Message]:
    if not isinstance(raw, dict):
        return []
    role = raw.get("role")
    if role == "tool" and isinstance(raw.get("tool_messages"), list):
        return [m for inner in raw["tool_messages"] for m in _messages(inner)]
    content = raw.get("content")
    content = content if content is None or isinstance(content, str) else json.dumps(content)
    if role == "tool":
        answered = raw.get("id") or raw.get("tool_call_id")
        return [Message(role="tool", content=content, tool_call_id=answered, turn_idx=raw.get("turn_idx"),
                        requestor=raw.get("requestor") or "assistant", error=bool(raw.get("error")))]
    if role not in ("assistant", "user", "system"):
        return []
    side = "user" if role == "user" else "assistant"
    calls = [_tool_call(tc, side) for tc in raw.get("tool_calls") or [] if isinstance(tc, dict)]
    return [Message(role=role, content=content, tool_calls=calls or None, turn_idx=raw.get("turn_idx"))]


def _tool_call(raw: dict[str, Any], side: str) -> ToolCall:
    arguments = raw.get("arguments")
    if isinstance(arguments, str):
        # Some providers hand arguments back as a JSON string; ours are always an object.
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            arguments = {"_raw": arguments}
    return ToolCall(
        id=str(raw.get("id") or ""),
        name=str(raw.get("name")),
        arguments=arguments if isinstance(arguments, dict) else {},
        requestor="user" if (raw.get("requestor") or side) == "user" else "assistant",
    )


def to_tau2(results: Results) -> dict[str, Any]:
    """Our results in τ²-bench's simulations-file shape, for τ²'s own viewers and scripts.

    The policy and tool definitions are not in our results, so environment_info carries the
    domain name only (policy "", tool_defs None). Per-message cost and usage stay None: our costs
    are per call, and the per-role totals are in agent_cost/user_cost.
    """
    info = results.info
    stamp = results.timestamp or ""
    return {
        "timestamp": stamp,
        "info": {
            "git_commit": f"tauproxy {info.tauproxy_version}",
            "num_trials": info.num_trials,
            "max_steps": info.max_steps,
            "max_errors": info.max_errors,
            "user_info": {"implementation": "user_simulator", "llm": info.user_info.llm,
                          "llm_args": info.user_info.llm_args},
            "agent_info": {"implementation": "llm_agent", "llm": info.agent_info.llm,
                           "llm_args": info.agent_info.llm_args},
            "environment_info": {"domain_name": info.domain, "policy": "", "tool_defs": None},
            "seed": info.seed,
        },
        "tasks": [_tau2_task(task) for task in results.tasks],
        "simulations": [_tau2_simulation(sim, stamp) for sim in results.simulations],
    }


def _tau2_task(task: Task) -> dict[str, Any]:
    data = task.model_dump(mode="json")
    # τ² models a description as {purpose, relevant_policies, notes}; ours may be a bare string.
    if isinstance(data.get("description"), str):
        data["description"] = {"purpose": data["description"]}
    return data


def _tau2_simulation(sim: SimulationRun, stamp: str) -> dict[str, Any]:
    return {
        "id": sim.id,
        "task_id": sim.task_id,
        "timestamp": stamp,
        "start_time": stamp,
        "end_time": stamp,
        "duration": sim.duration,
        "termination_reason": sim.termination_reason.value,
        "agent_cost": sim.agent_cost,
        "user_cost": sim.user_cost,
        "reward_info": sim.reward_info.model_dump(mode="json") if sim.reward_info else None,
        "messages": [_tau2_message(m) for m in sim.messages],
        "trial": sim.trial,
        "seed": sim.seed,
    }


def _tau2_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        # τ² names the answered call's id `id` on tool messages.
        return {"id": message.tool_call_id or "", "role": "tool", "content": message.content,
                "requestor": message.requestor or "assistant", "error": message.error,
                "turn_idx": message.turn_idx, "timestamp": None}
    calls = [tc.model_dump(mode="json") for tc in message.tool_calls] if message.tool_calls else None
    return {"role": message.role, "content": message.content, "tool_calls": calls,
            "turn_idx": message.turn_idx, "timestamp": None, "cost": None, "usage": None}
