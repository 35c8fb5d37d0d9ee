"""What every trial of one τ²-bench run shares: the `tau2 run` flags tauproxy passes on, as one value.

The runner builds it once per run from its RunConfig (runner/trial.py) and hands it whole to each
trial, so tauproxy/tau2bench stays below the runner and no trial takes a long argument list.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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
