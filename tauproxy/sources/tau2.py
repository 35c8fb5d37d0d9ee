"""τ²-bench's own domains (`tau2/<domain>[:<split>]`, tauproxy/tau2bench) as a domain source.

Its tasks, policy, tools, environment, grader and prompts come from the installed τ²-bench; its
trials run on the orchestrator its `tau2_orchestrator` option names; its seeds are `tau2 run`'s.
What it needs from τ²-bench is imported inside the methods: a run of our own packs never loads it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from tauproxy.data_model.result import ModelInfo, RunInfo, SimulationRun
from tauproxy.data_model.task import Task
from tauproxy.domain.pack import DomainPack
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.proxy.pricing import Pricing
from tauproxy.proxy.transport import Transport
from tauproxy.sources.protocol import DomainSummary, SourceConfig, Tau2FileParts, TrialSpec
from tauproxy.tau2bench.peer import PREFIX
from tauproxy.tau2bench.settings import (
    DUMMY_USER,
    LLM_AGENT,
    NO_JUDGE,
    SOLO_AGENT,
    Tau2Options,
    Tau2Settings,
    misplaced_options,
)


def tau2_settings(config: SourceConfig) -> Tau2Settings:
    """The `tau2 run` flags of a τ²-bench domain's run. Its judge is τ²'s repetition judge, off unless
    the run names a judge model: the default judge is our scripted one, which cannot answer τ².
    `--solo` is τ²'s `--agent llm_agent_solo --user dummy_user`."""
    options = Tau2Options.model_validate(dict(config.source_options))
    agent, user = options.agent, options.user
    if config.solo:
        if agent not in (LLM_AGENT, SOLO_AGENT):
            raise ConfigError(f"--solo is τ²'s --agent {SOLO_AGENT} --user {DUMMY_USER}; it cannot run --agent {agent}")
        agent, user = SOLO_AGENT, DUMMY_USER
    return Tau2Settings(
        domain=config.domain,
        agent=config.agent,
        user=config.user,
        judge=config.judge if config.judge_chosen else None,
        judge_window_size=options.judge_window_size,
        judge_system_prompt=options.judge_system_prompt,
        max_steps=config.max_steps,
        max_errors=config.max_errors,
        agent_implementation=agent,
        user_implementation=user,
        task_set_name=options.task_set_name,
        enforce_communication_protocol=options.enforce_communication_protocol,
        max_retries=options.max_retries,
        orchestrator=options.tau2_orchestrator,
    )


class Tau2Source:
    """A `DomainSource` (protocol.py) of the installed τ²-bench's domains."""

    name = "tau2"
    prefix = PREFIX
    options: type[BaseModel] = Tau2Options

    def __init__(self) -> None:
        # The settings of the run being run, by its config's identity: every trial reads them, and
        # validating the options anew for each was ~0.15 ms a trial (airline 50 x 4: 0.03 s).
        self._settings: tuple[SourceConfig, Tau2Settings] | None = None

    def _trial_settings(self, config: SourceConfig) -> Tau2Settings:
        known = self._settings
        if known is not None and known[0] is config:
            return known[1]
        settings = tau2_settings(config)
        self._settings = (config, settings)
        return settings

    def misplaced(self, options: Mapping[str, Any], domain: str) -> str | None:
        return misplaced_options(Tau2Options.model_validate(dict(options)), domain)

    def check(self, config: SourceConfig) -> None:
        from tauproxy.tau2bench.peer import load_tau2, parse_domain
        from tauproxy.tau2bench.plan import check_implementations, check_tau2_run

        parse_domain(config.domain)  # a misspelt domain is named first, before what its models cannot do
        load_tau2()  # then a missing or unsupported τ²-bench (cheap: it imports nothing of τ²'s)
        settings = tau2_settings(config)
        check_implementations(settings)
        judge = settings.judge
        check_tau2_run(
            agent_model=config.agent.model,
            user_model=config.user.model,
            solo=settings.solo,
            custom_prompt=config.agent_prompt.custom is not None,
            agent_impl=config.agent_impl,
            tasks_file=config.tasks_file,
            executor=config.executor,
            judge_model=judge.model if judge is not None else None,
        )

    def load(self, domain: str, config: SourceConfig) -> DomainPack:
        """Loaded from this process's installed τ², whose version is in the content hash."""
        from tauproxy.tau2bench.plan import load_for_run

        settings = tau2_settings(config)
        return load_for_run(
            domain, settings.agent_implementation, settings.task_set_name, config.task_ids, config.num_tasks
        )

    def trial_seeds(self, run_seed: int, num_trials: int) -> list[int]:
        """τ²-bench's scheme, so requests match `tau2 run`'s."""
        from tauproxy.tau2bench.plan import tau2_trial_seeds

        return tau2_trial_seeds(run_seed, num_trials)

    def run_info(self, info: RunInfo, config: SourceConfig) -> RunInfo:
        from tauproxy.tau2bench.plan import agent_prompt_sha256, engine, run_orchestrator

        settings = tau2_settings(config)
        judge = settings.judge
        agent_info = info.agent_info.model_copy(
            update={
                "system_prompt_sha256": agent_prompt_sha256(config.domain),
                "implementation": settings.agent_implementation,
            }
        )
        user_info = info.user_info.model_copy(update={"implementation": settings.user_implementation})
        return info.model_copy(
            update={
                "engine": engine(run_orchestrator(settings), settings.task_set_name),
                "solo": settings.solo,
                "agent_info": agent_info,
                "user_info": user_info,
                "judge_info": judge.info(_sha256(settings.judge_system_prompt))
                if judge is not None
                else ModelInfo(llm=NO_JUDGE),
                "judge_window_size": settings.judge_window_size if judge is not None else None,
            }
        )

    def models(self, config: SourceConfig, tasks: list[Task]) -> list[tuple[str, LLMConfig]]:
        # `tau2 run` grades no NL assertion; its only judge is the repetition judge, when named.
        settings = tau2_settings(config)
        judge = settings.judge
        models = [] if config.agent_impl is not None else [("agent", config.agent)]
        models += [] if settings.solo else [("user", config.user)]
        return models + ([("judge", judge)] if judge is not None else [])

    def run_trial(
        self, spec: TrialSpec, pack: DomainPack, config: SourceConfig, transport: Transport, pricing: Pricing
    ) -> SimulationRun:
        """τ²-bench runs the trial itself (tauproxy/tau2bench/trial.py)."""
        from tauproxy.tau2bench.trial import run_tau2_trial

        return run_tau2_trial(self._trial_settings(config), spec.task.id, spec.trial, spec.seed, transport, pricing)

    def domains(self) -> list[DomainSummary]:
        """τ²-bench's own domains, when the tau2 extra is installed."""
        from tauproxy.tau2bench.domain import describe
        from tauproxy.tau2bench.peer import (
            INSTALL_HINT,
            KNOWN_DOMAINS,
            available_domains,
            check_version,
            installed_version,
            is_installed,
        )

        try:
            if not is_installed():
                raise ConfigError(INSTALL_HINT)
            check_version(installed_version())
        except ConfigError as missing:  # named, with the line that installs what they need
            return [DomainSummary(name=PREFIX + name, unavailable=str(missing)) for name in KNOWN_DOMAINS]
        summaries = []
        for name in available_domains():
            shown = describe(PREFIX + name)
            summaries.append(
                DomainSummary(
                    name=shown["name"],
                    tasks=len(shown["tasks"]),
                    agent_tools=len(shown["agent_tools"]),
                    user_tools=len(shown["user_tools"]),
                    dual_control=shown["dual_control"],
                    engine=shown["engine"],
                )
            )
        return summaries

    def describe(self, domain: str) -> dict[str, Any]:
        from tauproxy.tau2bench.domain import describe

        return describe(domain)

    def tau2_file_parts(self, domain: str, solo: bool) -> Tau2FileParts | None:
        """τ²'s original tasks, policy and tool signatures, from the installed package."""
        from tauproxy.tau2bench.export import tau2_export

        theirs = tau2_export(domain, solo)
        return Tau2FileParts(
            environment_info=theirs.environment_info,
            tasks=theirs.tasks,
            agent_implementation=theirs.agent_implementation,
            user_implementation=theirs.user_implementation,
        )


def _sha256(text: str | None) -> str | None:
    return hashlib.sha256(text.encode()).hexdigest() if text is not None else None
