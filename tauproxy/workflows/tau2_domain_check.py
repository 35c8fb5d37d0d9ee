"""`domains check tau2/<name>`: τ²-bench's tasks, played by the scripted oracle through τ²'s own engine.

Each task runs once with the oracle (tauproxy/tau2bench/oracle.py) as agent and user, and once with
the do-nothing agent, on τ²'s orchestrator, environment and evaluator, as a `tau2/` run's trial does
(nothing is recorded: the check needs no cassette). Then every golden action is executed on τ²'s
environment, set up as τ²'s evaluator sets up its gold environment, and one that raises is listed.

The oracle must pass every task it can play (each is solvable as written and graded). The do-nothing
rate and the golden actions that raise are shown but do not fail the check: τ²'s tasks are not ours
to change, some are passed by doing nothing by design (refusals), and some expect a failing call
(retail's lookup of a user who does not exist, tried before the right one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tauproxy.engine.limits import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.proxy.pricing import Pricing
from tauproxy.reports.metrics import is_success
from tauproxy.tau2bench.domain import Tau2Catalog, load_catalog
from tauproxy.tau2bench.environments import environment_factory
from tauproxy.tau2bench.oracle import Tau2Player, Tau2PlayerTransport
from tauproxy.tau2bench.settings import Tau2Settings
from tauproxy.tau2bench.trial import run_tau2_trial
from tauproxy.workflows.domain_check import DomainCheck

ORACLE_MODEL = "tauproxy-oracle"  # names only: the player answers in-process
SEED = 300  # `tau2 run`'s default run seed; the player draws nothing from it


def check_tau2_domain(name: str, tasks_file: Path | None = None) -> DomainCheck:
    if tasks_file is not None:
        raise ConfigError("--tasks-file is for tauproxy's packs; a tau2/ domain's tasks come from the package")
    catalog = load_catalog(name)
    settings = Tau2Settings(
        domain=name,
        agent=LLMConfig(model=ORACLE_MODEL),
        user=LLMConfig(model=ORACLE_MODEL),
        max_steps=DEFAULT_MAX_STEPS,
        max_errors=DEFAULT_MAX_ERRORS,
    )
    pricing = Pricing()
    oracle_failures: list[str] = []
    silent_passes: list[str] = []
    unplayable: list[str] = []
    for task_id, task in catalog.tasks.items():
        can_play = _playable(task)
        if not can_play:
            unplayable.append(f"{task_id}: graded by env assertions alone, which name no action to take")
        for silent in (False, True) if can_play else (True,):
            transport = Tau2PlayerTransport(Tau2Player(task, silent=silent))
            run = run_tau2_trial(settings, task_id, 0, SEED, transport, pricing)
            if silent and is_success(run):
                silent_passes.append(task_id)
            elif not silent and not is_success(run):
                oracle_failures.append(f"{task_id}: {_why(run.reward_info, run.termination_reason, run.error)}")
    tasks = len(catalog.tasks)
    playable = tasks - len(unplayable)
    problems = golden_action_errors(catalog)
    return DomainCheck(
        domain=name,
        tasks=tasks,
        oracle_pass_rate=(playable - len(oracle_failures)) / playable if playable else 0.0,
        silent_pass_rate=len(silent_passes) / tasks,
        oracle_failures=oracle_failures,
        silent_passes=silent_passes,
        policy_violations=problems,
        ok=playable > 0 and not oracle_failures,
        unplayable=unplayable,
        shown_only=True,
    )


def golden_action_errors(catalog: Tau2Catalog) -> list[str]:
    """Golden actions that raise on τ²'s environment, set up for the task as τ²'s gold environment is."""
    constructor = environment_factory(catalog.domain.domain)
    problems = []
    for task_id, task in catalog.tasks.items():
        actions = task.evaluation_criteria.actions if task.evaluation_criteria is not None else None
        if not actions:
            continue
        initial = task.initial_state
        environment = constructor()
        environment.set_state(
            initialization_data=initial.initialization_data if initial is not None else None,
            initialization_actions=initial.initialization_actions if initial is not None else None,
            message_history=(initial.message_history or []) if initial is not None else [],
        )
        for index, action in enumerate(actions):
            try:
                environment.make_tool_call(tool_name=action.name, requestor=action.requestor, **action.arguments)
            except Exception as exc:  # τ²'s tools raise on a bad call; the check lists it, one line
                problems.append(f"{task_id}: action {index} {action.name} failed: {exc}")
    return problems


def _playable(task: Any) -> bool:
    criteria = task.evaluation_criteria
    return criteria is None or bool(criteria.actions) or not criteria.env_assertions


def _why(reward_info: Any, termination: Any, error: str | None) -> str:
    if error:
        return f"{termination}: {error}"
    if reward_info is None:
        return str(termination)
    failed = [name for name, value in (reward_info.reward_breakdown or {}).items() if value < 1.0]
    return f"reward {reward_info.reward:g}" + (f" ({', '.join(failed)})" if failed else "")
