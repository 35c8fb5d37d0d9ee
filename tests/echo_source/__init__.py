"""A third domain source, in its own package: one `echo/` domain of one task, to show that a source is
added by registering it, without editing the runner.

The task: the agent is greeted once and passes when its one answer contains the source's own option
`echo_expect`. Its trial makes one model call through the run's transport, so it is recorded, priced
and replayed as any other source's.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from tauproxy.data_model.call import ModelRequest, role_cost
from tauproxy.data_model.key import TrialScope
from tauproxy.data_model.message import Message
from tauproxy.data_model.result import RewardInfo, RunInfo, SimulationRun, TerminationReason
from tauproxy.data_model.task import Task, UserScenario
from tauproxy.domain.pack import DomainPack
from tauproxy.domain.state import BaseState
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.proxy.client import ModelClient
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.transport import Transport
from tauproxy.sources.packs import trial_seeds
from tauproxy.sources.protocol import DomainSummary, SourceConfig, Tau2FileParts, TrialSpec

PREFIX = "echo/"
DOMAIN = "echo/hello"
POLICY = "Answer the greeting."
GREETING = "Hello?"


class EchoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    echo_expect: str = "sorry"  # what the agent's answer must contain to pass


class EchoSource:
    """A `DomainSource` with one domain, `echo/hello`."""

    name = "echo"
    prefix = PREFIX
    options: type[BaseModel] = EchoOptions

    def misplaced(self, options: Mapping[str, Any], domain: str) -> str | None:
        return (
            f"--echo-expect is for echo/ domains, not {domain!r}" if EchoOptions(**options) != EchoOptions() else None
        )

    def check(self, config: SourceConfig) -> None:
        if config.domain != DOMAIN:
            raise ConfigError(f"unknown echo domain {config.domain!r} (available: {DOMAIN})")

    def load(self, domain: str, config: SourceConfig) -> DomainPack:
        return _pack()

    def trial_seeds(self, run_seed: int, num_trials: int) -> list[int]:
        return trial_seeds(run_seed, num_trials)

    def run_info(self, info: RunInfo, config: SourceConfig) -> RunInfo:
        return info.model_copy(update={"engine": "echo 1"})

    def models(self, config: SourceConfig, tasks: list[Task]) -> list[tuple[str, LLMConfig]]:
        return [("agent", config.agent)]

    def run_trial(
        self, spec: TrialSpec, pack: DomainPack, config: SourceConfig, transport: Transport, pricing: Pricing
    ) -> SimulationRun:
        started = time.perf_counter()
        client = ModelClient(transport, pricing, TrialScope(task_id=spec.task.id, trial=spec.trial))
        expect = EchoOptions.model_validate(dict(config.source_options)).echo_expect
        messages = [Message(role="system", content=pack.policy), Message(role="user", content=GREETING)]
        request = ModelRequest(
            model=config.agent.model,
            messages=messages,
            params={"seed": spec.seed},
            connection=config.agent.connection(),
        )
        answer = client.complete(request, "agent").message
        passed = expect in (answer.content or "")
        return SimulationRun(
            id=spec.run_id,
            task_id=spec.task.id,
            trial=spec.trial,
            seed=spec.seed,
            termination_reason=TerminationReason.AGENT_STOP,
            messages=[Message(role="user", content=GREETING), answer],
            reward_info=RewardInfo(reward=1.0 if passed else 0.0),
            calls=client.records,
            agent_cost=role_cost(client.records, "agent"),
            duration=round(time.perf_counter() - started, 6),
        )

    def domains(self) -> list[DomainSummary]:
        return [DomainSummary(name=DOMAIN, tasks=1, agent_tools=0, user_tools=0, dual_control=False, engine="echo 1")]

    def describe(self, domain: str) -> dict[str, Any]:
        pack = _pack()
        return {"name": pack.name, "root": str(pack.root), "content_sha256": pack.content_sha256}

    def tau2_file_parts(self, domain: str, solo: bool) -> Tau2FileParts | None:
        return None


def _pack() -> DomainPack:
    task = Task(id="hello", user_scenario=UserScenario(instructions=GREETING))
    digest = hashlib.sha256(f"{POLICY}\n{GREETING}".encode()).hexdigest()
    return DomainPack(
        name=DOMAIN,
        root=Path(__file__).parent,
        policy=POLICY,
        tasks=[task],
        functions={},
        base_state=BaseState({}),
        content_sha256=digest,
    )
