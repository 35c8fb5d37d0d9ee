"""What every trial of one τ²-bench run shares: the `tau2 run` flags tauproxy passes on, as one value.

τ²'s domain source (tauproxy/sources/tau2.py) builds it from the run's config and its own options
(`Tau2Options`, what a run sets only for a tau2/ domain) and hands it whole to each trial, so
tauproxy/tau2bench stays below the sources and no trial takes a long argument list.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tauproxy.engine.llm_config import LLMConfig

# `tau2 run --judge-window-size`'s default: the judge looks once the trajectory holds this many messages.
TAU2_JUDGE_WINDOW_SIZE = 30
# Which orchestrator runs a trial's conversation (tau2bench/trial.py): tauproxy's re-expression of
# τ²'s rules (fast, no litellm import), or τ²'s own `run_task` (`--tau2-orchestrator tau2`).
Tau2Orchestrator = Literal["tauproxy", "tau2"]
OUR_ORCHESTRATOR: Tau2Orchestrator = "tauproxy"
TAU2_ORCHESTRATOR: Tau2Orchestrator = "tau2"
# The judge model run info names when no judge runs (`tau2 run` without --judge-llm).
NO_JUDGE = "none"


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
    solo: bool = False
    orchestrator: Tau2Orchestrator = OUR_ORCHESTRATOR


class Tau2Options(BaseModel):
    """The options of a run that only a τ²-bench domain takes; their names are `tauproxy run`'s flags."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tau2_orchestrator: Tau2Orchestrator = OUR_ORCHESTRATOR
    judge_window_size: int = Field(default=TAU2_JUDGE_WINDOW_SIZE, ge=1)
    judge_system_prompt: str | None = None  # `tau2 run --judge-system-prompt`

    @field_validator("tau2_orchestrator", mode="before")
    @classmethod
    def _known_orchestrator(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        choices = get_args(Tau2Orchestrator)
        name = value.strip().lower()
        if name not in choices:
            raise ValueError(f"unknown --tau2-orchestrator {name!r} (choose from: {', '.join(choices)})")
        return name


def misplaced_options(options: Tau2Options, domain: str) -> str | None:
    """The one-line error for τ²'s own options set on a domain of tauproxy's engine; None if all default."""
    if options.judge_window_size != TAU2_JUDGE_WINDOW_SIZE or options.judge_system_prompt is not None:
        flag = "--judge-window-size" if options.judge_system_prompt is None else "--judge-system-prompt"
        return (
            f"{flag} sets τ²-bench's repetition judge, for tau2/ domains; {domain!r} "
            "is graded by tauproxy's NL-assertion judge"
        )
    if options.tau2_orchestrator != OUR_ORCHESTRATOR:
        return f"--tau2-orchestrator picks what runs a tau2/ domain's trials; {domain!r} runs on tauproxy's engine"
    return None
