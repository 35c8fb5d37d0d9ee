"""The options of `run`, declared once and shared by every command that plans a run (`estimate`)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from tauproxy_cli.run_flags import RunFlags

AGENT = "Agent, user and judge"
RUN = "Tasks and trials"
CASSETTE = "Cassette and cost"


def _option(default: Any, annotation: Any, *names: str, **kwargs: Any) -> tuple[Any, Any]:
    return default, Annotated[annotation, typer.Option(*names, **kwargs)]


RUN_OPTIONS: dict[str, tuple[Any, Any]] = {
    "domain": _option("mock", str, help="Domain pack name or path.", rich_help_panel=RUN),
    "agent_llm": _option(None, str | None, help="Agent model.", rich_help_panel=AGENT),
    "agent_llm_args": _option(None, str | None, help="Agent model args as JSON.", rich_help_panel=AGENT),
    "agent_config": _option(None, Path | None, help="Agent TOML: model, llm_args, system prompt.",
                            rich_help_panel=AGENT),
    "agent_impl": _option(None, str | None, help="Your own agent: 'module:factory' (see README).",
                          rich_help_panel=AGENT),
    "user_llm": _option("scripted/user", str, help="User simulator model.", rich_help_panel=AGENT),
    "user_llm_args": _option(None, str | None, help="User model args as JSON.", rich_help_panel=AGENT),
    "judge_llm": _option("scripted/judge", str, help="NL-assertion judge model.", rich_help_panel=AGENT),
    "judge_llm_args": _option(None, str | None, help="Judge model args as JSON.", rich_help_panel=AGENT),
    "num_trials": _option(1, int, min=1, help="Trials per task.", rich_help_panel=RUN),
    "num_tasks": _option(None, int | None, min=1, help="First N tasks only.", rich_help_panel=RUN),
    "task_ids": _option(None, list[str] | None, "--task-ids", help="Only these task ids (repeat or comma-separate).",
                        rich_help_panel=RUN),
    "tasks_file": _option(None, Path | None, help="Use this tasks.json.", rich_help_panel=RUN),
    "seed": _option(300, int, help="Run seed; per-trial seeds derive from it.", rich_help_panel=RUN),
    "max_concurrency": _option(1, int, min=1, help="Trials at once (thread); live calls at once, cluster-wide (ray).",
                               rich_help_panel=RUN),
    "max_steps": _option(200, int, min=1, help="Messages per trial before it stops.", rich_help_panel=RUN),
    "max_errors": _option(10, int, min=1, help="Tool errors per trial before it stops.", rich_help_panel=RUN),
    "solo": _option(False, bool, help="No user simulator; the agent holds both tool sets.", rich_help_panel=RUN),
    "save_to": _option(None, Path | None, help="Run directory; an existing one resumes.", rich_help_panel=RUN),
    "cassette": _option(None, Path | None, help="Cassette directory.", rich_help_panel=CASSETTE),
    "record_mode": _option("auto", str, help="replay | record | auto | off | once (vcrpy names too).",
                           rich_help_panel=CASSETTE),
    "prices": _option(None, Path | None, help="Prices file (YAML/JSON, USD per token).", rich_help_panel=CASSETTE),
    "max_cost": _option(None, float | None, help="Stop starting trials past this live spend (USD).",
                        rich_help_panel=CASSETTE),
    "executor": _option("thread", str, help="thread | ray (Ray: the optional ray extra of tauproxy).",
                        rich_help_panel=RUN),
    "ray_address": _option(None, str | None, help="Ray cluster to join (default: start a local instance).",
                           rich_help_panel=RUN),
}


def with_run_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give `command(flags: RunFlags, **own)` every run option as well as its own options."""
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "flags"]
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        for name, (default, annotation) in RUN_OPTIONS.items()
    ]

    @functools.wraps(command)
    def wrapper(**values: Any) -> None:
        flags = RunFlags(**{name: values.pop(name) for name in RUN_OPTIONS})
        command(flags=flags, **values)

    wrapper.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [*shared, *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own)]
    )
    return wrapper
