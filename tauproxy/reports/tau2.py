"""Export our results in τ²-bench's simulations-file shape, for τ²'s own viewers and scripts.

Reading τ²'s files is tauproxy.results.tau2_format (below every command, so all of them read τ²
files the same way); this module is the report side only: `report --format tau2`.
"""

from __future__ import annotations

from typing import Any

from tauproxy.data_model.message import Message
from tauproxy.data_model.result import Results, SimulationRun, TerminationReason
from tauproxy.data_model.task import Task
from tauproxy.sources.registry import source_for_domain


def to_tau2(results: Results) -> dict[str, Any]:
    """Our results in τ²-bench's simulations-file shape, for τ²'s own viewers and scripts.

    For a run of our own domain the policy and tool definitions are not in our results, so
    environment_info carries the domain name only (policy "", tool_defs None). A domain source that
    has its own (`DomainSource.tau2_file_parts`) gives them and the original tasks: for a `tau2/` run,
    the installed τ²-bench (tauproxy/tau2bench/export.py), so τ²'s metrics, `tau2 view` and its
    evaluator read the file as one of their own.
    Infrastructure errors are left out: τ² has no such termination reason, and excluding them is
    what both sides' pass^k does. Per-message cost and usage stay None: our costs are per call, and
    the per-role totals are in agent_cost/user_cost.
    """
    info = results.info
    stamp = results.timestamp or ""
    environment: dict[str, Any] = {"domain_name": info.domain, "policy": "", "tool_defs": None}
    tasks = [_tau2_task(task) for task in results.tasks]
    agent_impl, user_impl = "llm_agent", "user_simulator"
    theirs = source_for_domain(info.domain).tau2_file_parts(info.domain, info.solo)
    if theirs is not None:
        environment = theirs.environment_info
        tasks = [theirs.tasks.get(task.id) or _tau2_task(task) for task in results.tasks]
        agent_impl, user_impl = theirs.agent_implementation, theirs.user_implementation
    return {
        "timestamp": stamp,
        "info": {
            "git_commit": f"tauproxy {info.tauproxy_version}",
            "num_trials": info.num_trials,
            "max_steps": info.max_steps,
            "max_errors": info.max_errors,
            "user_info": {"implementation": user_impl, "llm": info.user_info.llm, "llm_args": info.user_info.llm_args},
            "agent_info": {
                "implementation": agent_impl,
                "llm": info.agent_info.llm,
                "llm_args": info.agent_info.llm_args,
            },
            "environment_info": environment,
            "seed": info.seed,
        },
        "tasks": tasks,
        "simulations": [
            _tau2_simulation(sim, stamp)
            for sim in results.simulations
            if sim.termination_reason != TerminationReason.INFRASTRUCTURE_ERROR
        ],
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
        return {
            "id": message.tool_call_id or "",
            "role": "tool",
            "content": message.content,
            "requestor": message.requestor or "assistant",
            "error": message.error,
            "turn_idx": message.turn_idx,
            "timestamp": None,
        }
    calls = [tc.model_dump(mode="json") for tc in message.tool_calls] if message.tool_calls else None
    return {
        "role": message.role,
        "content": message.content,
        "tool_calls": calls,
        "turn_idx": message.turn_idx,
        "timestamp": None,
        "cost": None,
        "usage": None,
    }
