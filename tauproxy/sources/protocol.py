"""What a domain source provides, as one protocol, and the small types it is handed and returns.

A source owns a set of domain names (all names under its prefix; tauproxy's packs take the rest)
and, for a run of one of them: its tasks (`load`), the trials' seeds, its facts in run info (which
also carry the domain's content hash, from the loaded pack), the models it will call, one trial on
a fresh environment with its own orchestrator and grader, and its own typed options (`options`).
Sources take the run's config as `SourceConfig`, the part of `runner.config.RunConfig` they read,
so a source needs nothing from the runner above it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from tauproxy.data_model.result import RunInfo, SimulationRun
from tauproxy.data_model.task import Task
from tauproxy.domain.pack import DomainPack
from tauproxy.engine.agent import AgentPrompt
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.transport import Transport


class SourceConfig(Protocol):
    """The run settings a source reads; `RunConfig` is one."""

    @property
    def domain(self) -> str: ...
    @property
    def agent(self) -> LLMConfig: ...
    @property
    def agent_prompt(self) -> AgentPrompt: ...
    @property
    def agent_impl(self) -> str | None: ...
    @property
    def user(self) -> LLMConfig: ...
    @property
    def judge(self) -> LLMConfig: ...
    @property
    def judge_chosen(self) -> bool:
        """Whether the judge model was named, rather than left at the run's default."""
        ...

    @property
    def tasks_file(self) -> Path | None: ...
    @property
    def task_ids(self) -> list[str] | None: ...
    @property
    def num_tasks(self) -> int | None: ...
    @property
    def max_steps(self) -> int: ...
    @property
    def max_errors(self) -> int: ...
    @property
    def solo(self) -> bool: ...
    @property
    def executor(self) -> str: ...
    @property
    def source_options(self) -> Mapping[str, Any]:
        """Options of the domain's source, by name; the source reads them into its `options` model."""
        ...


@dataclass(frozen=True)
class TrialSpec:
    """One planned trial: a task, the trial's number and its seed."""

    task: Task
    trial: int
    seed: int

    @property
    def run_id(self) -> str:
        return f"{self.task.id}:{self.trial}"


class DomainSummary(BaseModel):
    """One line of `tauproxy domains list`: a domain's counts, or why this install cannot run it."""

    name: str
    tasks: int | None = None  # None with `unavailable`: not known without what it needs
    agent_tools: int | None = None
    user_tools: int | None = None
    dual_control: bool | None = None
    engine: str | None = None  # what runs its trials, when not tauproxy's own engine
    unavailable: str | None = None  # why it cannot run here, with the line that installs what it needs


class Tau2FileParts(BaseModel):
    """What a source adds to an export in τ²-bench's results-file shape (`report --format tau2`)."""

    environment_info: dict[str, Any]
    tasks: dict[str, dict[str, Any]]  # the source's own dump of each task, by id
    agent_implementation: str
    user_implementation: str


class DomainSource(Protocol):
    """A provider of domains; registry.py maps domain names to one."""

    name: str  # the registry's name for it
    prefix: str  # the domain names it owns start with this; "" for the default source (our packs)
    options: type[BaseModel]  # its own options: their field names are the option names

    def misplaced(self, options: Mapping[str, Any], domain: str) -> str | None:
        """The one-line error when `options` (this source's own) are given for `domain`, another
        source's; None when they are only defaults and can be ignored."""
        ...

    def check(self, config: SourceConfig) -> None:
        """Refuse, in one line, what this source cannot run, before anything is loaded."""
        ...

    def load(self, domain: str, config: SourceConfig) -> DomainPack:
        """The domain's tasks, policy, tools and content hash. `domain` is `config.domain` as this
        process should read it (a Ray worker gets a pack's absolute path)."""
        ...

    def trial_seeds(self, run_seed: int, num_trials: int) -> list[int]: ...

    def run_info(self, info: RunInfo, config: SourceConfig) -> RunInfo:
        """The runner's run info with what this source adds (its engine, prompt hashes, judge)."""
        ...

    def models(self, config: SourceConfig, tasks: list[Task]) -> list[tuple[str, LLMConfig]]:
        """(role, model) for each model the run will call, checked before the first trial."""
        ...

    def run_trial(
        self, spec: TrialSpec, pack: DomainPack, config: SourceConfig, transport: Transport, pricing: Pricing
    ) -> SimulationRun:
        """One trial on a fresh environment, on this source's orchestrator, graded by its grader."""
        ...

    def domains(self) -> list[DomainSummary]:
        """The domains this install offers, for `domains list`."""
        ...

    def describe(self, domain: str) -> dict[str, Any]:
        """What `domains show` prints: name, root, content_sha256, agent_tools, user_tools, tasks."""
        ...

    def tau2_file_parts(self, domain: str, solo: bool) -> Tau2FileParts | None:
        """The source's own parts of a τ²-bench results file; None: the export's defaults."""
        ...
