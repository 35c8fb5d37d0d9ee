"""One trial of a τ²-bench task: τ²'s conversation, environment and reward, its model calls through tauproxy.

Two orchestrators run it, and both send the requests `tau2 run` sends, so a cassette is shared
between them and with `tau2 run` through serve:
- tauproxy's (tau2bench/loop.py), the default: τ²'s orchestrator rules over τ²'s environment and
  messages, graded by τ²'s evaluators (tau2bench/grade.py) on forked environments
  (tau2bench/cow.py). It imports none of τ²'s modules that import litellm, so a strict replay
  stays offline and a trial costs milliseconds;
- τ²'s own (`tau2.run.run_task`, as `tau2 run` calls it), with `--tau2-orchestrator tau2`, and for
  what the first does not cover: another agent or user (`--agent llm_agent_gt | llm_agent_solo`,
  `--user dummy_user`, solo mode), the repetition judge, a task with a message history.
  Its agent, user simulator, environment and evaluator (`EvaluationType.ALL`) run unchanged; only
  their model calls go through tauproxy (tau2bench/bridge.py). τ² swallows a failed judge call
  ("repetition checker failed"), but the bridge keeps the failure, so the trial still ends as an
  infrastructure error, never as a score.
τ²'s SimulationRun is read into ours with the reader `report` uses for τ²'s files, so reports,
diff and check treat it like any trial; the calls, costs and duration are ours.

When the trial fails:
- under the seam (a strict-replay miss, a cassette that cannot be written): raised, as for our own
  trials, so the run stops;
- any other model-call failure: an infrastructure error, excluded from scores and re-run on resume;
- τ²-bench itself raised (its evaluator, an answer it cannot parse, or in solo mode any answer
  without a tool call): saved as `tau2 run --skip-failed-samples` saves it, agent_error with reward
  0 and no messages, the exception in `error`. Without that flag `tau2 run` stops the whole run
  there (docs/tau2bench.md, "Solo mode against `tau2 run`").
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from tauproxy.data_model.call import CallRecord, CallRole, role_cost
from tauproxy.data_model.key import ConversationKeys, TrialScope
from tauproxy.data_model.result import RewardInfo, SimulationRun, TerminationReason
from tauproxy.errors import CassetteWriteError, InfrastructureError, ModelCallError, ReplayMissError
from tauproxy.proxy.client import ModelClient
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.transport import Transport
from tauproxy.redact import redact_text
from tauproxy.results.tau2_format import tau2_simulation
from tauproxy.tau2bench.bridge import TrialBridge, tau2_model_name
from tauproxy.tau2bench.domain import Tau2Catalog, load_catalog
from tauproxy.tau2bench.environments import environment_factory
from tauproxy.tau2bench.grade import grade
from tauproxy.tau2bench.loop import AGENT, Conversation, Side
from tauproxy.tau2bench.settings import Tau2Settings
from tauproxy.tau2bench.source import tau2_prompts
from tauproxy.tau2bench.wire import wire_params


def run_tau2_trial(
    settings: Tau2Settings, task_id: str, trial: int, seed: int, transport: Transport, pricing: Pricing
) -> SimulationRun:
    catalog = load_catalog(settings.domain, settings.task_set_name)
    task = catalog.task(task_id)
    client = ModelClient(transport, pricing, TrialScope(task_id=task_id, trial=trial))
    started = time.perf_counter()
    if runs_on_tau2_orchestrator(settings, task):
        simulation, error, failure = _on_tau2_orchestrator(settings, catalog, task, seed, client)
    else:
        simulation, error, failure = _on_our_orchestrator(settings, catalog, task, seed, client)
    return _result(task_id, trial, seed, client, simulation, error, failure, started)


def runs_on_tau2_orchestrator(settings: Tau2Settings, task: Any) -> bool:
    """What tauproxy's orchestrator leaves to τ²'s: another agent or user than τ²'s LLM agent and user
    simulator (solo mode, the ground-truth agent), the communication protocol, the judge, a task's
    message history."""
    history = task.initial_state.message_history if task.initial_state is not None else None
    return settings.needs_tau2_orchestrator() or bool(history)


Outcome = tuple[Any, str | None, BaseException | None]  # τ²'s SimulationRun, τ²'s error, the seam's failure


def _on_our_orchestrator(
    settings: Tau2Settings, catalog: Tau2Catalog, task: Any, seed: int, client: ModelClient
) -> Outcome:
    from tau2.data_model.simulation import SimulationRun as Tau2Simulation
    from tau2.utils.utils import get_now

    prompts = tau2_prompts()
    failure: list[BaseException] = []
    connections = {AGENT: settings.agent.connection(), "user": settings.user.connection()}
    keys = {AGENT: ConversationKeys(), "user": ConversationKeys()}

    def ask(role: str, body: dict[str, Any]) -> dict[str, Any]:
        config = settings.agent if role == AGENT else settings.user
        try:
            return client.complete_wire(body, role_of(role), connections[role], config.model, keys[role]).body
        except BaseException as exc:
            failure.append(exc)
            raise

    agent_params, agent_retries = wire_params(settings.agent, "agent", seed, settings.max_retries)
    user_params, user_retries = wire_params(settings.user, "user", seed, settings.max_retries)
    factory = environment_factory(catalog.domain.domain)
    conversation = Conversation(
        environment=factory(),
        agent=Side(
            settings.agent.model, catalog.agent_system_prompt, agent_params, agent_retries, catalog.agent_tools or None
        ),
        user=Side(
            settings.user.model,
            prompts.user_system_prompt(str(task.user_scenario), catalog.has_user_tools),
            user_params,
            user_retries,
            catalog.user_tools if catalog.has_user_tools else None,
        ),
        ask=ask,
        max_steps=settings.max_steps,
        max_errors=settings.max_errors,
        enforce_communication_protocol=settings.enforce_communication_protocol,
    )
    start_time, start = get_now(), time.perf_counter()
    try:
        conversation.run(task, prompts.greeting)
        messages = sorted(conversation.trajectory, key=lambda message: message.timestamp)
        for index, message in enumerate(messages):
            message.turn_idx = index
        simulation = Tau2Simulation(
            id=str(uuid.uuid4()),
            task_id=task.id,
            start_time=start_time,
            end_time=get_now(),
            duration=time.perf_counter() - start,
            termination_reason=conversation.termination_reason.value,
            reward_info=None,
            agent_cost=None,
            user_cost=None,
            messages=messages,
            seed=seed,
        )
        simulation.reward_info = grade(simulation, task, factory)
    except Exception as exc:
        return None, redact_text(f"τ²-bench raised {type(exc).__name__}: {exc}"), failure[0] if failure else None
    return simulation, None, failure[0] if failure else None


def role_of(role: str) -> CallRole:
    return "agent" if role == AGENT else "user"


def _on_tau2_orchestrator(
    settings: Tau2Settings, catalog: Tau2Catalog, task: Any, seed: int, client: ModelClient
) -> Outcome:
    from tau2.evaluator.evaluator import EvaluationType
    from tau2.run import run_task

    bridge = TrialBridge(client, settings.max_retries)
    judge = settings.judge
    try:
        simulation = run_task(
            domain=catalog.domain.domain,
            task=task,
            agent=settings.agent_implementation,
            user=settings.user_implementation,
            llm_agent=tau2_model_name(settings.agent.model),
            llm_args_agent=bridge.llm_args("agent", settings.agent),
            llm_user=tau2_model_name(settings.user.model),
            llm_args_user=bridge.llm_args("user", settings.user),
            judge_llm=tau2_model_name(judge.model) if judge is not None else None,
            judge_llm_args=bridge.llm_args("judge", judge) if judge is not None else None,
            judge_window_size=settings.judge_window_size,
            judge_system_prompt=settings.judge_system_prompt,
            max_steps=settings.max_steps,
            max_errors=settings.max_errors,
            evaluation_type=EvaluationType.ALL,
            seed=seed,
            enforce_communication_protocol=settings.enforce_communication_protocol,
        )
    except Exception as exc:
        return None, redact_text(f"τ²-bench raised {type(exc).__name__}: {exc}"), bridge.failure
    finally:
        bridge.close()
    return simulation, None, bridge.failure


def _result(
    task_id: str,
    trial: int,
    seed: int,
    client: ModelClient,
    simulation: Any,
    error: str | None,
    failure: BaseException | None,
    started: float,
) -> SimulationRun:
    if isinstance(failure, ReplayMissError | CassetteWriteError):
        raise failure
    if failure is not None:
        cause = failure if isinstance(failure, InfrastructureError) else ModelCallError(str(failure))
        return _unscored(
            task_id,
            trial,
            seed,
            TerminationReason.INFRASTRUCTURE_ERROR,
            redact_text(str(cause)),
            client.records,
            started,
        )
    if simulation is None:
        run = _unscored(task_id, trial, seed, TerminationReason.AGENT_ERROR, error, client.records, started)
        return run.model_copy(update={"reward_info": RewardInfo(reward=0.0)})
    simulation.trial = trial
    return tau2_simulation(
        simulation.model_dump(mode="json"),
        {
            "id": f"{task_id}:{trial}",
            "seed": seed,
            "calls": client.records,
            "agent_cost": role_cost(client.records, "agent"),
            "user_cost": role_cost(client.records, "user"),
            "judge_cost": role_cost(client.records, "judge"),
            "duration": round(time.perf_counter() - started, 6),
        },
    )


def _unscored(
    task_id: str,
    trial: int,
    seed: int,
    reason: TerminationReason,
    error: str | None,
    records: list[CallRecord],
    started: float,
) -> SimulationRun:
    return SimulationRun(
        id=f"{task_id}:{trial}",
        task_id=task_id,
        trial=trial,
        seed=seed,
        termination_reason=reason,
        messages=[],
        calls=records,
        error=error,
        agent_cost=role_cost(records, "agent"),
        user_cost=role_cost(records, "user"),
        judge_cost=role_cost(records, "judge"),
        duration=round(time.perf_counter() - started, 6),
    )
