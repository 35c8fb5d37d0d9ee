"""One trial of one of tauproxy's packs: build the parties around a fresh environment, run, grade."""

from __future__ import annotations

import time

from tauproxy.data_model.call import role_cost
from tauproxy.data_model.key import TrialScope
from tauproxy.data_model.result import SimulationRun, TerminationReason
from tauproxy.domain.pack import DomainPack
from tauproxy.engine.agent import AgentSetup, llm_agent, load_agent_factory
from tauproxy.engine.environment import Environment
from tauproxy.engine.evaluator import evaluate
from tauproxy.engine.judge import Judge
from tauproxy.engine.limits import Limits
from tauproxy.engine.orchestrator import Orchestrator
from tauproxy.engine.user import UserSimulator, user_system_prompt
from tauproxy.errors import CassetteWriteError, InfrastructureError, ReplayMissError
from tauproxy.proxy.client import ModelClient
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.transport import Transport
from tauproxy.redact import redact_text
from tauproxy.sources.protocol import SourceConfig, TrialSpec


def run_pack_trial(
    spec: TrialSpec, pack: DomainPack, config: SourceConfig, transport: Transport, pricing: Pricing
) -> SimulationRun:
    started = time.perf_counter()
    client = ModelClient(transport, pricing, TrialScope(task_id=spec.task.id, trial=spec.trial))
    factory = load_agent_factory(config.agent_impl) if config.agent_impl else llm_agent
    agent = factory(AgentSetup(config.agent_prompt.render(pack.policy), config.agent, client, spec.seed))
    user = None
    agent_tools = list(pack.agent_tool_schemas)
    if config.solo:
        agent_tools.extend(pack.user_tool_schemas)
    else:
        system = user_system_prompt(spec.task, pack.is_dual_control, pack.user_policy)
        user = UserSimulator(config.user, client, system, list(pack.user_tool_schemas), spec.seed)
    orchestrator = Orchestrator(
        task=spec.task,
        environment=Environment(pack, spec.task),
        agent=agent,
        agent_tools=agent_tools,
        user=user,
        limits=Limits(config.max_steps, config.max_errors),
        user_tool_names=frozenset(f.name for f in pack.user_tools()),
    )
    trajectory = orchestrator.run()
    termination, error = trajectory.termination_reason, trajectory.error
    judge = Judge(config.judge, client, spec.seed)
    reward_info = None  # an infrastructure error is never graded: it is excluded, not scored 0
    try:
        if termination != TerminationReason.INFRASTRUCTURE_ERROR:
            reward_info = evaluate(pack, spec.task, trajectory.messages, termination, judge.evaluate)
    except (ReplayMissError, CassetteWriteError):
        raise
    except InfrastructureError as exc:  # the judge's model call failed: the trial cannot be graded
        termination, error = TerminationReason.INFRASTRUCTURE_ERROR, redact_text(str(exc))
    return SimulationRun(
        id=spec.run_id,
        task_id=spec.task.id,
        trial=spec.trial,
        seed=spec.seed,
        termination_reason=termination,
        messages=trajectory.messages,
        reward_info=reward_info,
        calls=client.records,
        error=error,
        agent_cost=role_cost(client.records, "agent"),
        user_cost=role_cost(client.records, "user"),
        judge_cost=role_cost(client.records, "judge"),
        duration=round(time.perf_counter() - started, 6),
    )
