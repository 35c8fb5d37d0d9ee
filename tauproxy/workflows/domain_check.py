"""`domains check`: is every task solvable, does the domain discriminate, are golden actions lawful?

- The scripted oracle must pass 100% of the tasks (each task is solvable as written).
- A do-nothing agent must pass at most 10% (silence must not score).
- Every golden action must pass the pack's `policy_check` on the state just before it, and must
  execute without a tool error.
Dual-control packs are checked with the oracle guiding the scripted user.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from tauproxy.data_model.message import ToolCall
from tauproxy.domain.pack import DomainPack, load_pack, policy_check_of
from tauproxy.engine.environment import Environment
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.reports.metrics import is_success
from tauproxy.runner.config import RunConfig
from tauproxy.runner.run import execute

MAX_SILENT_PASS_RATE = 0.10
ORACLE = "scripted/oracle"
SILENT = "scripted/silent"


class DomainCheck(BaseModel):
    domain: str
    tasks: int
    oracle_pass_rate: float
    silent_pass_rate: float
    oracle_failures: list[str]
    silent_passes: list[str]
    policy_violations: list[str]
    ok: bool
    # Tasks the oracle cannot play: no golden actions, yet graded on the state (τ² tasks checked by
    # env assertions alone). Left out of the oracle's rate, and listed.
    unplayable: list[str] = []
    # The do-nothing rate and the golden actions are shown, not held to a limit: a source whose tasks
    # are not ours to change (τ²-bench's). Says how to show the check; not part of its JSON.
    shown_only: bool = Field(default=False, exclude=True)


def golden_action_problems(pack: DomainPack) -> list[str]:
    """Golden actions that break the policy or fail when executed on the task's fresh state."""
    check = policy_check_of(pack)
    problems = []
    for task in pack.tasks:
        env = Environment(pack, task)
        for index, action in enumerate(task.golden_actions()):
            if check is not None:
                reason = check(env.state, action.name, action.arguments)
                if reason:
                    problems.append(f"{task.id}: action {index} {action.name}: {reason}")
            call = ToolCall(
                id=f"check_{index}", name=action.name, arguments=action.arguments, requestor=action.requestor
            )
            result = env.execute(call, action.requestor)
            if result.error:
                problems.append(f"{task.id}: action {index} {action.name} failed: {result.content}")
    return problems


def check_domain(domain: str, tasks_file: Path | None = None, max_concurrency: int = 2) -> DomainCheck:
    pack = load_pack(domain, tasks_file)

    def pass_rate(model: str) -> tuple[float, list[str], list[str]]:
        config = RunConfig(
            domain=domain, tasks_file=tasks_file, agent=LLMConfig(model=model), max_concurrency=max_concurrency
        )
        runs = execute(config).results.simulations
        passed = [run.task_id for run in runs if is_success(run)]
        failed = [run.task_id for run in runs if not is_success(run)]
        return len(passed) / len(runs), passed, failed

    oracle_rate, _, oracle_failures = pass_rate(ORACLE)
    silent_rate, silent_passes, _ = pass_rate(SILENT)
    violations = golden_action_problems(pack)
    ok = oracle_rate == 1.0 and silent_rate <= MAX_SILENT_PASS_RATE and not violations
    return DomainCheck(
        domain=pack.name,
        tasks=len(pack.tasks),
        oracle_pass_rate=oracle_rate,
        silent_pass_rate=silent_rate,
        oracle_failures=oracle_failures,
        silent_passes=silent_passes,
        policy_violations=violations,
        ok=ok,
    )
