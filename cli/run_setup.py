"""Turns `run`-style flags into one RunConfig; `run`, `estimate`, `bisect` and `demo` share it.

The options that are RunConfig fields pass through as they are; the flag-only ones are parsed or merged
here, each into the fields its `sets` names in run_flags.py.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from tauproxy.engine.agent import AgentPrompt
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.proxy.model_options import ModelOptionsError
from tauproxy.proxy.modes import parse_record_mode
from tauproxy.runner.config import (
    RunConfig,
    load_agent_config,
    parse_executor,
    parse_llm_args,
)
from tauproxy_cli.run_flags import SOURCE, RunFlags, as_is_options, run_options, source_options


def build_run_config(flags: RunFlags) -> RunConfig:
    check_decide_flags(flags)
    agent = _agent_fields(flags)
    executor = parse_executor(flags.executor)
    if flags.ray_address is not None and executor != "ray":
        raise ConfigError("--ray-address needs --executor ray")
    try:
        return RunConfig(
            **{name: getattr(flags, name) for name in as_is_options()},
            **agent,
            user=_llm(
                flags.user_llm, parse_llm_args(flags.user_llm_args, "--user-llm-args"), "user", "--user-llm-args"
            ),
            judge=_llm(
                flags.judge_llm, parse_llm_args(flags.judge_llm_args, "--judge-llm-args"), "judge", "--judge-llm-args"
            ),
            task_ids=_split_task_ids(flags.task_ids),
            record_mode=parse_record_mode(flags.record_mode),
            executor=executor,
            source_options=source_options(flags),
        )
    except ValidationError as exc:
        raise ConfigError(_flag_error(exc.errors()[0])) from None


UNDECIDED_CHOICES = ("good", "bad", "skip")


def check_decide_flags(flags: RunFlags) -> None:
    """The "Compare and decide" flags, one line each for what cannot work, before anything is loaded."""
    if flags.until_decided and (flags.against is None or flags.max_cost is None):
        missing = " and ".join(
            name
            for name, value in (("--against BASE", flags.against), ("--max-cost USD", flags.max_cost))
            if value is None
        )
        raise ConfigError(f"--until-decided needs {missing}: the baseline to judge against and a budget")
    if flags.against is not None and not flags.until_decided:
        raise ConfigError(
            "--against judges the run only with --until-decided (or use `tauproxy check RUN "
            "--baseline BASE` after the run)"
        )
    if flags.against is not None and not flags.against.exists():
        raise ConfigError(f"--against {flags.against}: no such file or directory")
    if not 0.0 < flags.confidence < 1.0:
        raise ConfigError(f"--confidence {_number(flags.confidence)}: give a number between 0 and 1 (exclusive)")
    if flags.undecided not in UNDECIDED_CHOICES:
        raise ConfigError(f"--undecided must be good, bad or skip, not {flags.undecided!r}")
    if not math.isfinite(flags.max_drop):
        raise ConfigError(f"--max-drop {flags.max_drop}: give a finite number")


def run_until_decided(config: RunConfig, flags: RunFlags, json_output: bool = False) -> int:
    """`run --until-decided` (workflows/adaptive.py): the rounds as they finish, the verdict, and the exit
    code check gives that verdict (0 good, 1 bad, --undecided's code when undecided, 125 cannot test);
    a run stopped by the infrastructure or Ctrl-C exits as `run` does (4, 130)."""
    from tauproxy.reports.paired import render_paired
    from tauproxy.results.load import load_any_results
    from tauproxy.runner.executor import StopKind
    from tauproxy.workflows.adaptive import AdaptiveRound, AdaptiveSettings, RunnerTrials, until_decided
    from tauproxy.workflows.sequential import LookSchedule
    from tauproxy_cli import exit_codes
    from tauproxy_cli.output import note, out_console, print_json, warn

    assert flags.against is not None  # check_decide_flags
    baseline = load_any_results(flags.against)
    schedule = LookSchedule(confidence=flags.confidence)
    settings = AdaptiveSettings(max_drop=flags.max_drop, schedule=schedule, max_cost=config.max_cost)

    def show(done: AdaptiveRound) -> None:
        ci = "" if done.drop_ci is None else f" [{done.drop_ci[0]:.3f}, {done.drop_ci[1]:.3f}]"
        drop = "" if done.drop is None else f", drop {done.drop:.3f}{ci}"
        where = "every task" if done.look == 1 else f"{len(done.tasks)} task(s): {', '.join(done.tasks)}"
        note(
            f"look {done.look}/{schedule.looks} (at {done.confidence:.2%}): +{done.trials_added} trials on "
            f"{where}; {done.trials} trials, spend {_money(done.spend_usd)} (live {_money(done.live_usd)})"
            f"{drop}: {done.verdict.value}"
        )

    runner = RunnerTrials(config)
    outcome = until_decided(runner, baseline, runner.initial_plan(), settings, on_round=show)
    from tauproxy_cli.check import verdict_exit_code

    code = verdict_exit_code(outcome.final.verdict.value, flags.undecided)
    if outcome.runner_stop == StopKind.INFRASTRUCTURE.value:
        code = exit_codes.INFRASTRUCTURE_STOP
    elif outcome.runner_stop == StopKind.INTERRUPTED.value:
        code = exit_codes.INTERRUPTED
    if json_output:
        print_json({**outcome.model_dump(mode="json"), "exit_code": code})
        return code
    if outcome.stop.kind not in ("decided", "cannot test"):
        warn(f"stopped ({outcome.stop.kind}): {outcome.stop.detail}")
    label = "cannot test" if outcome.final.verdict.value == "skip" else outcome.final.verdict.value
    out_console.print(f"{label}: {outcome.final.reason}", markup=False, soft_wrap=True)
    if outcome.final.paired is not None:
        out_console.print(render_paired(outcome.final.paired, "run", "baseline"), markup=False, soft_wrap=True)
    out_console.print(
        f"{len(outcome.rounds)} of {schedule.looks} looks at {schedule.confidence:.0%} overall; "
        f"{outcome.trials} trials ({outcome.mean_trials_per_task:.1f} per task), spend "
        f"{_money(outcome.spend_usd)} of --max-cost {_money(outcome.max_cost)} (live {_money(outcome.live_usd)})"
        + (f"; saved to {config.save_to}" if config.save_to else ""),
        markup=False,
        soft_wrap=True,
    )
    return code


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def _flag_error(error: ErrorDetails) -> str:
    """One line naming the flag behind a RunConfig field that refused its value."""
    field = str(error["loc"][0]) if error["loc"] else ""
    flag = next((f"--{o.name.replace('_', '-')}" for o in run_options() if field in o.config_fields), field)
    shown = _number(error.get("input"))
    ctx = error.get("ctx", {})
    if (field,) == SOURCE:  # a domain source's option: its model names the option, its own message says the rest
        if error["type"] == "value_error":
            return str(ctx["error"])
        flag = f"--{str(error['loc'][-1]).replace('_', '-')}"
    if error["type"] == "less_than_equal":
        return f"{flag} {shown} is over the limit of {_number(ctx['le'])}"
    if error["type"] == "greater_than_equal":
        return f"{flag} {shown} is below the minimum of {_number(ctx['ge'])}"
    if error["type"] == "finite_number":
        return f"{flag} {shown}: give a finite number"
    if error["type"] == "value_error":
        return f"{flag} {ctx['error']}"
    return f"{flag} {shown}: {error['msg']}"


def _number(value: Any) -> str:
    """-5.0 as -5, as it was typed."""
    return str(int(value)) if isinstance(value, float) and math.isfinite(value) and value.is_integer() else str(value)


def _agent_fields(flags: RunFlags) -> dict[str, Any]:
    """`agent` and `agent_prompt`: the flags win over the agent config file, args merged key by key."""
    agent_args = parse_llm_args(flags.agent_llm_args, "--agent-llm-args")
    prompt = AgentPrompt()
    model = flags.agent_llm
    if flags.agent_config is not None:
        config_file = load_agent_config(flags.agent_config)
        model = model or config_file.model
        agent_args = {**config_file.llm_args, **agent_args}
        prompt = config_file.prompt()
    if model is None:
        raise ConfigError("no agent model: pass --agent-llm or --agent-config")
    source = "--agent-llm-args" if flags.agent_config is None else f"--agent-llm-args or {flags.agent_config}"
    return {"agent": _llm(model, agent_args, "agent", source), "agent_prompt": prompt}


def _llm(model: str, args: dict[str, Any], role: str, source: str) -> LLMConfig:
    """A role's model and args, checked now: its family's options and args (proxy/families.py) and its
    connection settings (api_base, timeout, ...). A bad one is a one-line error naming the flag, not a
    run that ignores it or a traceback when the first call is made."""
    try:
        config = LLMConfig(model=model, args=args)
    except ModelOptionsError as exc:
        raise ConfigError(f"{source}: {exc}" if exc.in_args else f"--{role}-llm {exc}") from None
    except ConfigError as exc:
        raise ConfigError(f"--{role}-llm {_shown(model)}: {exc}") from None
    try:
        config.connection()
    except ValidationError as exc:
        from tauproxy.validation import first_problem

        field, message = first_problem(exc)  # the value is not shown: it may be a key
        raise ConfigError(f"{source}: {field}: {message}") from None
    return config


def _shown(value: str) -> str:
    """A value as typed, or its start when it is long, or '' when empty: an error stays one short line."""
    return repr(value) if not value else value if len(value) <= 60 else f"{value[:40]}... ({len(value):,} characters)"


def _split_task_ids(items: list[str] | None) -> list[str] | None:
    if not items:
        return None
    ids = [t.strip() for item in items for t in item.split(",") if t.strip()]
    if not ids:  # `--task-ids "$IDS"` with nothing in it must not run every task
        raise ConfigError("--task-ids names no task; give ids (comma-separated or repeated) or leave the flag out")
    return ids
