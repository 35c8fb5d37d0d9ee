"""One trial of a τ²-bench task, run by τ²-bench itself: `tau2.run.run_task`, as `tau2 run` calls it.

τ²'s orchestrator, agent (`llm_agent`), user simulator (`user_simulator`), environment and evaluator
(`EvaluationType.ALL`, as `tau2 run` uses), and its repetition judge when the run names one, run
unchanged in this thread; only their model calls go through tauproxy (tauproxy/tau2bench/bridge.py).
τ² swallows a failed judge call ("repetition checker failed"), but the bridge keeps the failure, so
the trial still ends as an infrastructure error, never as a score. Its SimulationRun is read into ours with the reader
`report` uses for τ²'s files, so reports, diff and check treat it like any trial; the calls, costs
and duration are ours.

When the trial fails:
- under the seam (a strict-replay miss, a cassette that cannot be written): raised, as for our own
  trials, so the run stops;
- any other model-call failure: an infrastructure error, excluded from scores and re-run on resume;
- τ²-bench itself raised (its evaluator, or an answer it cannot parse): saved as `tau2 run
  --skip-failed-samples` saves it, agent_error with reward 0, the exception in `error`.
"""

from __future__ import annotations

import time

from tauproxy.data_model.call import CallRecord, role_cost
from tauproxy.data_model.key import TrialScope
from tauproxy.data_model.result import RewardInfo, SimulationRun, TerminationReason
from tauproxy.errors import CassetteWriteError, InfrastructureError, ModelCallError, ReplayMissError
from tauproxy.proxy.client import ModelClient
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.transport import Transport
from tauproxy.redact import redact_text
from tauproxy.results.tau2_format import tau2_to_results
from tauproxy.tau2bench.bridge import TrialBridge, tau2_model_name
from tauproxy.tau2bench.domain import load_catalog
from tauproxy.tau2bench.settings import Tau2Settings


def run_tau2_trial(
    settings: Tau2Settings, task_id: str, trial: int, seed: int, transport: Transport, pricing: Pricing
) -> SimulationRun:
    from tau2.evaluator.evaluator import EvaluationType
    from tau2.run import run_task

    started = time.perf_counter()
    catalog = load_catalog(settings.domain)
    task = catalog.task(task_id)
    client = ModelClient(transport, pricing, TrialScope(task_id=task_id, trial=trial))
    bridge = TrialBridge(client)
    judge = settings.judge
    error: str | None = None
    try:
        simulation = run_task(
            domain=catalog.domain.domain,
            task=task,
            agent="llm_agent_solo" if settings.solo else "llm_agent",
            user="dummy_user" if settings.solo else "user_simulator",
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
        )
    except Exception as exc:
        simulation = None
        error = redact_text(f"τ²-bench raised {type(exc).__name__}: {exc}")
    finally:
        bridge.close()
    failure = bridge.failure
    if isinstance(failure, ReplayMissError | CassetteWriteError):
        raise failure
    if failure is not None:
        cause = failure if isinstance(failure, InfrastructureError) else ModelCallError(str(failure))
        return _unscored(task_id, trial, seed, TerminationReason.INFRASTRUCTURE_ERROR, redact_text(str(cause)),
                         client.records, started)
    if simulation is None:
        run = _unscored(task_id, trial, seed, TerminationReason.AGENT_ERROR, error, client.records, started)
        return run.model_copy(update={"reward_info": RewardInfo(reward=0.0)})
    simulation.trial = trial
    document = {
        "info": {"environment_info": {"domain_name": catalog.domain.domain}},
        "tasks": [],
        "simulations": [simulation.model_dump(mode="json")],
    }
    ours = tau2_to_results(document, source=settings.domain).simulations[0]
    return ours.model_copy(
        update={
            "id": f"{task_id}:{trial}",
            "seed": seed,
            "calls": client.records,
            "agent_cost": role_cost(client.records, "agent"),
            "user_cost": role_cost(client.records, "user"),
            "judge_cost": role_cost(client.records, "judge"),
            "duration": round(time.perf_counter() - started, 6),
        }
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

