"""What every trial of one τ²-bench run shares: the `tau2 run` flags tauproxy passes on, as one value.

τ²'s domain source (tauproxy/sources/tau2.py) builds it from the run's config and its own options
(`Tau2Options`, what a run sets only for a tau2/ domain) and hands it whole to each trial, so
tauproxy/tau2bench stays below the sources and no trial takes a long argument list.
"""

from __future__ import annotations

from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from tauproxy.engine.llm_config import LLMConfig

# Re-exported: the names every module of this package reads from here.
from tauproxy.tau2bench.names import (
    DUMMY_USER as DUMMY_USER,
)
from tauproxy.tau2bench.names import (
    GT_AGENT as GT_AGENT,
)
from tauproxy.tau2bench.names import (
    LLM_AGENT as LLM_AGENT,
)
from tauproxy.tau2bench.names import (
    NO_JUDGE as NO_JUDGE,
)
from tauproxy.tau2bench.names import (
    OUR_ORCHESTRATOR as OUR_ORCHESTRATOR,
)
from tauproxy.tau2bench.names import (
    SOLO_AGENT as SOLO_AGENT,
)
from tauproxy.tau2bench.names import (
    TAU2_JUDGE_WINDOW_SIZE as TAU2_JUDGE_WINDOW_SIZE,
)
from tauproxy.tau2bench.names import (
    TAU2_MAX_RETRIES as TAU2_MAX_RETRIES,
)
from tauproxy.tau2bench.names import (
    TAU2_ORCHESTRATOR as TAU2_ORCHESTRATOR,
)
from tauproxy.tau2bench.names import (
    USER_SIMULATOR as USER_SIMULATOR,
)
from tauproxy.tau2bench.names import (
    Tau2AgentName as Tau2AgentName,
)
from tauproxy.tau2bench.names import (
    Tau2Orchestrator as Tau2Orchestrator,
)
from tauproxy.tau2bench.names import (
    Tau2UserName as Tau2UserName,
)


class Tau2Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    domain: str  # tauproxy's name, "tau2/<domain>[:<split>]"
    agent: LLMConfig
    user: LLMConfig
    # τ²'s repetition judge (`tau2 run --judge-llm`): asked after every step whether the agent is stuck
    # in a loop, and "yes" ends the trial (JUDGE_STOP). None: off, as `tau2 run` without the flag.
    judge: LLMConfig | None = None
    judge_window_size: int = Field(default=TAU2_JUDGE_WINDOW_SIZE, ge=1)
    judge_system_prompt: str | None = None  # τ²'s default: the judge's request has no system message
    max_steps: int
    max_errors: int
    agent_implementation: Tau2AgentName = LLM_AGENT  # `tau2 run --agent`
    user_implementation: Tau2UserName = USER_SIMULATOR  # `tau2 run --user`
    # τ²'s solo agent: `agent_implementation` llm_agent_solo; `solo=True` alone is `--solo`, τ²'s solo
    # agent with its dummy user.
    solo: bool = False
    task_set_name: str | None = None  # `tau2 run --task-set-name`; None: the domain's own
    enforce_communication_protocol: bool = False
    max_retries: int = Field(default=TAU2_MAX_RETRIES, ge=0)
    orchestrator: Tau2Orchestrator = OUR_ORCHESTRATOR

    @model_validator(mode="before")
    @classmethod
    def _solo_is_the_solo_agent(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        if values.get("solo"):
            return {"agent_implementation": SOLO_AGENT, "user_implementation": DUMMY_USER, **values}
        if values.get("agent_implementation") == SOLO_AGENT:
            return {**values, "solo": True}
        return values

    def needs_tau2_orchestrator(self) -> bool:
        """Whether every trial runs on τ²'s own orchestrator (tau2bench/trial.py): tauproxy's runs τ²'s
        LLM agent and user simulator, without the repetition judge."""
        return (
            self.orchestrator == TAU2_ORCHESTRATOR
            or self.agent_implementation != LLM_AGENT
            or self.user_implementation != USER_SIMULATOR
            or self.judge is not None
        )


class Tau2Options(BaseModel):
    """The options of a run that only a τ²-bench domain takes; their names are `tauproxy run`'s flags."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tau2_orchestrator: Tau2Orchestrator = OUR_ORCHESTRATOR
    judge_window_size: int = Field(default=TAU2_JUDGE_WINDOW_SIZE, ge=1)
    judge_system_prompt: str | None = None  # `tau2 run --judge-system-prompt`
    # `tau2 run`'s own flags, under its names (`--agent`, `--user`, ...), so a τ² command line carries over.
    agent: Tau2AgentName = LLM_AGENT
    user: Tau2UserName = USER_SIMULATOR
    task_set_name: str | None = None
    enforce_communication_protocol: bool = False
    max_retries: int = Field(default=TAU2_MAX_RETRIES, ge=0)

    @field_validator("tau2_orchestrator", "agent", "user", mode="before")
    @classmethod
    def _known_choice(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, str):
            return value
        field = info.field_name or ""
        choices = get_args(cls.model_fields[field].annotation)
        name = value.strip().lower() if field == "tau2_orchestrator" else value.strip()
        if name not in choices:
            flag = "--" + field.replace("_", "-")
            raise ValueError(f"unknown {flag} {name!r} (choose from: {', '.join(choices)})")
        return name


# The options that are `tau2 run`'s own flags, by field, with their `tauproxy run` flag.
TAU2_RUN_FLAGS = {
    "agent": "--agent",
    "user": "--user",
    "task_set_name": "--task-set-name",
    "enforce_communication_protocol": "--enforce-communication-protocol",
    "max_retries": "--max-retries",
}


def misplaced_options(options: Tau2Options, domain: str) -> str | None:
    """The one-line error for τ²'s own options set on a domain of tauproxy's engine; None if all default."""
    defaults = Tau2Options()
    for field, flag in TAU2_RUN_FLAGS.items():
        if getattr(options, field) != getattr(defaults, field):
            return f"{flag} is `tau2 run`'s option, for tau2/ domains; {domain!r} runs on tauproxy's engine"
    if options.judge_window_size != TAU2_JUDGE_WINDOW_SIZE or options.judge_system_prompt is not None:
        flag = "--judge-window-size" if options.judge_system_prompt is None else "--judge-system-prompt"
        return (
            f"{flag} sets τ²-bench's repetition judge, for tau2/ domains; {domain!r} "
            "is graded by tauproxy's NL-assertion judge"
        )
    if options.tau2_orchestrator != OUR_ORCHESTRATOR:
        return f"--tau2-orchestrator picks what runs a tau2/ domain's trials; {domain!r} runs on tauproxy's engine"
    return None
