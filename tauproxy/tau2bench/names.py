"""`tau2 run`'s names and defaults that tauproxy's flags show: a module that imports nothing heavy, so
`tauproxy --help` does not load the settings model (settings.py) or anything under it."""

from __future__ import annotations

from typing import Literal

# `tau2 run --judge-window-size`'s default: the judge looks once the trajectory holds this many messages.
TAU2_JUDGE_WINDOW_SIZE = 30
# Which orchestrator runs a trial's conversation (tau2bench/trial.py): tauproxy's re-expression of
# τ²'s rules (fast, no litellm import), or τ²'s own `run_task` (`--tau2-orchestrator tau2`).
Tau2Orchestrator = Literal["tauproxy", "tau2"]
OUR_ORCHESTRATOR: Tau2Orchestrator = "tauproxy"
TAU2_ORCHESTRATOR: Tau2Orchestrator = "tau2"
# The judge model run info names when no judge runs (`tau2 run` without --judge-llm).
NO_JUDGE = "none"
# `tau2 run --agent` and `--user`: the implementations τ²'s registry offers (tau2bench/registry.py).
Tau2AgentName = Literal["llm_agent", "llm_agent_gt", "llm_agent_solo"]
Tau2UserName = Literal["user_simulator", "dummy_user"]
LLM_AGENT: Tau2AgentName = "llm_agent"
GT_AGENT: Tau2AgentName = "llm_agent_gt"  # sees the task's expected actions; only tasks that have some
SOLO_AGENT: Tau2AgentName = "llm_agent_solo"
USER_SIMULATOR: Tau2UserName = "user_simulator"
DUMMY_USER: Tau2UserName = "dummy_user"  # never called; τ² allows it with the solo agent only
# `tau2 run --max-retries`'s default: litellm's num_retries for every role, and τ²'s retries of an
# empty answer. Never sent, so it never changes a request's key.
TAU2_MAX_RETRIES = 3
