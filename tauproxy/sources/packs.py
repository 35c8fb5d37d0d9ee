"""tauproxy's own domain packs (tauproxy/domain/pack.py) as a domain source: the default one.

Every domain name no other source claims is one of ours: a built-in pack's name or a pack's path.
Its trials run on tauproxy's engine (packs_trial.py), graded by the pack's own checks and, for NL
assertions, the judge model.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from tauproxy.data_model.result import RunInfo, SimulationRun
from tauproxy.data_model.task import Task
from tauproxy.domain.pack import DomainPack, available_domains, load_pack
from tauproxy.domain.tools import DomainFunction
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.transport import Transport
from tauproxy.sources.packs_trial import run_pack_trial
from tauproxy.sources.protocol import DomainSummary, SourceConfig, Tau2FileParts, TrialSpec


class PackOptions(BaseModel):
    """Our packs take no options of their own: everything they need is a RunConfig field."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def trial_seeds(run_seed: int, num_trials: int) -> list[int]:
    """One seed per trial from the run seed, with a private RNG: no global state, no races."""
    rng = random.Random(run_seed)
    return [rng.randint(0, 2**31 - 1) for _ in range(num_trials)]


class PackSource:
    """A `DomainSource` (protocol.py) of the packs under domains/ and any pack given by path."""

    name = "tauproxy"
    prefix = ""
    options: type[BaseModel] = PackOptions

    def misplaced(self, options: Mapping[str, Any], domain: str) -> str | None:
        return None  # it has no options to misplace

    def check(self, config: SourceConfig) -> None:
        return None  # everything a pack run needs is checked as it loads

    def load(self, domain: str, config: SourceConfig) -> DomainPack:
        return load_pack(domain, config.tasks_file)

    def trial_seeds(self, run_seed: int, num_trials: int) -> list[int]:
        return trial_seeds(run_seed, num_trials)

    def run_info(self, info: RunInfo, config: SourceConfig) -> RunInfo:
        return info

    def models(self, config: SourceConfig, tasks: list[Task]) -> list[tuple[str, LLMConfig]]:
        models = [] if config.agent_impl is not None else [("agent", config.agent)]  # your agent calls its own
        models += [] if config.solo else [("user", config.user)]
        if any(task.evaluation_criteria and task.evaluation_criteria.nl_assertions for task in tasks):
            models.append(("judge", config.judge))
        return models

    def run_trial(
        self, spec: TrialSpec, pack: DomainPack, config: SourceConfig, transport: Transport, pricing: Pricing
    ) -> SimulationRun:
        return run_pack_trial(spec, pack, config, transport, pricing)

    def domains(self) -> list[DomainSummary]:
        summaries = []
        for name in available_domains():
            pack = load_pack(name)
            summaries.append(
                DomainSummary(
                    name=name,
                    tasks=len(pack.tasks),
                    agent_tools=len(pack.agent_tools()),
                    user_tools=len(pack.user_tools()),
                    dual_control=pack.is_dual_control,
                )
            )
        return summaries

    def describe(self, domain: str) -> dict[str, Any]:
        pack = load_pack(domain)
        return {
            "name": pack.name,
            "root": str(pack.root),
            "content_sha256": pack.content_sha256,
            "agent_tools": [_tool_row(f) for f in pack.agent_tools()],
            "user_tools": [_tool_row(f) for f in pack.user_tools()],
            "tasks": [t.id for t in pack.tasks],
        }

    def tau2_file_parts(self, domain: str, solo: bool) -> Tau2FileParts | None:
        return None  # our results hold no policy or tool definitions to export


def _tool_row(function: DomainFunction) -> dict[str, str]:
    return {"name": function.name, "kind": function.mark.kind, "description": function.description}
