"""Every option of `tauproxy run`, declared once: name, type, default, help text and help panel.

`with_run_options` (run_options.py) makes the typer options of `run`, `estimate` and `bisect` from
these fields, and `build_run_config` (run_setup.py) the RunConfig. Most options are the RunConfig field
of the same name; the flag-only ones (`sets=...`) name the RunConfig fields they decide, and
`build_run_config` parses or merges them into those. A domain source's own options (`sets=SOURCE`)
go into RunConfig.source_options under their own names, when given, for the source to check.

Imports nothing heavy, so `--help` stays fast: the defaults come from the tiny modules that RunConfig
reads them from too (tests/cli/test_run_options.py checks that both agree).
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tauproxy.engine.limits import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from tauproxy.runner.defaults import (
    DEFAULT_EXECUTOR,
    DEFAULT_JUDGE_LLM,
    DEFAULT_MAX_CONCURRENCY,
    DEFAULT_MAX_INFRA_ERRORS,
    DEFAULT_NUM_TRIALS,
    DEFAULT_RECORD_MODE,
    DEFAULT_SEED,
    DEFAULT_USER_LLM,
    MAX_CONCURRENCY_LIMIT,
    NUM_TRIALS_LIMIT,
)
from tauproxy.tau2bench.names import (
    LLM_AGENT,
    OUR_ORCHESTRATOR,
    TAU2_JUDGE_WINDOW_SIZE,
    TAU2_MAX_RETRIES,
    USER_SIMULATOR,
)

AGENT = "Agent, user and judge"
TAU2 = "τ²-bench domains (tau2/...): `tau2 run`'s own options"
RUN = "Tasks and trials"
CASSETTE = "Cassette and cost"
DECIDE = "Compare and decide"
SHOW = "Output"

_SPEC = "run_option"
SOURCE = ("source_options",)  # the `sets` of a domain source's own option


@dataclass(frozen=True)
class OptionSpec:
    help: str
    panel: str
    min: int | None
    # Checked by RunConfig, not typer, so the error is one line naming the limit (run_setup.py).
    max: int | None
    # The RunConfig fields this option decides. None: the field of the option's own name, value as is.
    sets: tuple[str, ...] | None


def spec(
    help: str, panel: str, *, min: int | None = None, max: int | None = None, sets: tuple[str, ...] | None = None
) -> dict[str, Any]:
    """The `metadata` of a RunFlags field; a `max` is named in the help text."""
    if max is not None:
        help = f"{help.removesuffix('.')}; at most {max}."
    return {_SPEC: OptionSpec(help, panel, min, max, sets)}


@dataclass
class RunFlags:
    """The flags of one run as given; the demo, shipped-cassette checks and tests build it directly too."""

    # RunConfig has no default domain (a library caller must pick one); the CLI offers the small mock pack.
    domain: str = field(default="mock", metadata=spec("Domain pack name or path.", RUN))
    agent_llm: str | None = field(default=None, metadata=spec("Agent model.", AGENT, sets=("agent",)))
    agent_llm_args: str | None = field(default=None, metadata=spec("Agent model args as JSON.", AGENT, sets=("agent",)))
    agent_config: Path | None = field(
        default=None,
        metadata=spec("Agent TOML: model, llm_args, system prompt.", AGENT, sets=("agent", "agent_prompt")),
    )
    agent_impl: str | None = field(default=None, metadata=spec("Your own agent: 'module:factory' (see README).", AGENT))
    user_llm: str = field(default=DEFAULT_USER_LLM, metadata=spec("User simulator model.", AGENT, sets=("user",)))
    user_llm_args: str | None = field(default=None, metadata=spec("User model args as JSON.", AGENT, sets=("user",)))
    judge_llm: str = field(
        default=DEFAULT_JUDGE_LLM,
        metadata=spec(
            "NL-assertion judge model; on a tau2/ domain, τ²'s repetition judge (off by default).",
            AGENT,
            sets=("judge",),
        ),
    )
    judge_llm_args: str | None = field(default=None, metadata=spec("Judge model args as JSON.", AGENT, sets=("judge",)))
    judge_window_size: int = field(
        default=TAU2_JUDGE_WINDOW_SIZE,
        metadata=spec("Messages τ²'s repetition judge looks at (tau2/ domains).", AGENT, min=1, sets=SOURCE),
    )
    judge_system_prompt: str | None = field(
        default=None, metadata=spec("System prompt of τ²'s repetition judge (tau2/ domains).", AGENT, sets=SOURCE)
    )
    tau2_orchestrator: str = field(
        default=OUR_ORCHESTRATOR,
        metadata=spec(
            "tau2/ domains: tauproxy (fast, τ²'s rules) | tau2 (τ²'s own run_task); both send the same requests.",
            TAU2,
            sets=SOURCE,
        ),
    )
    # `tau2 run`'s flags under its names (the τ² source's options, tau2bench/settings.py: Tau2Options).
    agent: str = field(
        default=LLM_AGENT,
        metadata=spec(
            "τ²'s agent: llm_agent | llm_agent_gt | llm_agent_solo (as `tau2 run --agent`).", TAU2, sets=SOURCE
        ),
    )
    user: str = field(
        default=USER_SIMULATOR,
        metadata=spec("τ²'s user: user_simulator | dummy_user (as `tau2 run --user`).", TAU2, sets=SOURCE),
    )
    task_set_name: str | None = field(
        default=None,
        metadata=spec("τ²'s registered task set (default: the domain's own), as `tau2 run`.", TAU2, sets=SOURCE),
    )
    enforce_communication_protocol: bool = field(
        default=False,
        metadata=spec(
            "End a trial on an empty message or one with both text and tool calls, as `tau2 run`.", TAU2, sets=SOURCE
        ),
    )
    max_retries: int = field(
        default=TAU2_MAX_RETRIES,
        metadata=spec(
            "Retries of a failed or empty model answer (never part of a key), as `tau2 run`.", TAU2, min=0, sets=SOURCE
        ),
    )
    num_trials: int = field(
        default=DEFAULT_NUM_TRIALS, metadata=spec("Trials per task.", RUN, min=1, max=NUM_TRIALS_LIMIT)
    )
    num_tasks: int | None = field(default=None, metadata=spec("First N tasks only.", RUN, min=1))
    # Flag-only because comma-separated items are split: a list pasted from elsewhere fits in one flag.
    task_ids: list[str] | None = field(
        default=None, metadata=spec("Only these task ids (repeat or comma-separate).", RUN, sets=("task_ids",))
    )
    tasks_file: Path | None = field(default=None, metadata=spec("Use this tasks.json.", RUN))
    seed: int = field(default=DEFAULT_SEED, metadata=spec("Run seed; per-trial seeds derive from it.", RUN))
    max_concurrency: int = field(
        default=DEFAULT_MAX_CONCURRENCY,
        metadata=spec(
            "Trials at once (thread); live calls at once, cluster-wide (ray).", RUN, min=1, max=MAX_CONCURRENCY_LIMIT
        ),
    )
    max_steps: int = field(default=DEFAULT_MAX_STEPS, metadata=spec("Messages per trial before it stops.", RUN, min=1))
    max_errors: int = field(
        default=DEFAULT_MAX_ERRORS, metadata=spec("Tool errors per trial before it stops.", RUN, min=1)
    )
    solo: bool = field(
        default=False,
        metadata=spec(
            "No user simulator; the agent holds both tool sets (tau2/: --agent llm_agent_solo --user dummy_user).", RUN
        ),
    )
    save_to: Path | None = field(default=None, metadata=spec("Run directory; an existing one resumes.", RUN))
    cassette: Path | None = field(default=None, metadata=spec("Cassette directory.", CASSETTE))
    record_mode: str = field(
        default=DEFAULT_RECORD_MODE,
        metadata=spec("replay | record | auto | off | once (vcrpy names too).", CASSETTE, sets=("record_mode",)),
    )
    prices: Path | None = field(default=None, metadata=spec("Prices file (YAML/JSON, USD per token).", CASSETTE))
    max_cost: float | None = field(
        default=None,
        metadata=spec(
            "Stop starting trials past this live spend (USD); with --until-decided, the budget of the run's trials.",
            CASSETTE,
        ),
    )
    max_infra_errors: int = field(
        default=DEFAULT_MAX_INFRA_ERRORS,
        metadata=spec("Stop the run after this many trials in a row end in the same infrastructure error.", RUN, min=1),
    )
    executor: str = field(
        default=DEFAULT_EXECUTOR,
        metadata=spec("thread | ray (Ray: the optional ray extra of tauproxy).", RUN, sets=("executor",)),
    )
    ray_address: str | None = field(
        default=None, metadata=spec("Ray cluster to join (default: start a local instance).", RUN)
    )
    # Flag-only (`sets=()`): they decide how `run` compares and shows, not what a trial is.
    against: Path | None = field(
        default=None,
        metadata=spec(
            "Baseline to judge the run against (run directory, results.json or τ²-bench file); needs --until-decided.",
            DECIDE,
            sets=(),
        ),
    )
    until_decided: bool = field(
        default=False,
        metadata=spec(
            "Add trials where they decide the verdict against --against until good or bad, or --max-cost "
            "is reached (needs both).",
            DECIDE,
            sets=(),
        ),
    )
    max_drop: float = field(
        default=0.05,
        metadata=spec("Largest allowed drop of the score below the baseline (as check's --max-drop).", DECIDE, sets=()),
    )
    confidence: float = field(
        default=0.95, metadata=spec("Confidence of the verdict over all its looks (as check).", DECIDE, sets=())
    )
    undecided: str = field(
        default="skip",
        metadata=spec("Exit code when still undecided: good (0), bad (1) or skip (125), as check.", DECIDE, sets=()),
    )
    full: bool = field(default=False, metadata=spec("show the full task grid and per-task table", SHOW, sets=()))


@dataclass(frozen=True)
class RunOption:
    """One field of RunFlags with what typer and build_run_config need to know about it."""

    name: str
    annotation: Any
    default: Any
    spec: OptionSpec

    @property
    def config_fields(self) -> tuple[str, ...]:
        return (self.name,) if self.spec.sets is None else self.spec.sets


def run_options() -> list[RunOption]:
    hints = typing.get_type_hints(RunFlags)
    return [RunOption(f.name, hints[f.name], f.default, f.metadata[_SPEC]) for f in dataclasses.fields(RunFlags)]


def as_is_options() -> list[str]:
    """The options that are the RunConfig field of the same name, value passed unchanged."""
    return [o.name for o in run_options() if o.spec.sets is None]


def source_options(flags: RunFlags) -> dict[str, Any]:
    """The domain source options given (off their defaults), by name, for RunConfig.source_options."""
    return {
        o.name: getattr(flags, o.name)
        for o in run_options()
        if o.spec.sets == SOURCE and getattr(flags, o.name) != o.default
    }
