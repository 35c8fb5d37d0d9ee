"""`tauproxy run`: k trials of a domain's tasks, with a progress bar and a summary at the end."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

AGENT_PANEL = "Agent, user and judge"
RUN_PANEL = "Tasks and trials"
CASSETTE_PANEL = "Cassette and cost"


def run_command(
    domain: Annotated[str, typer.Option(help="Domain pack name or path.", rich_help_panel=RUN_PANEL)] = "mock",
    agent_llm: Annotated[str | None, typer.Option(help="Agent model.", rich_help_panel=AGENT_PANEL)] = None,
    agent_llm_args: Annotated[
        str | None, typer.Option(help="Agent model args as JSON.", rich_help_panel=AGENT_PANEL)
    ] = None,
    agent_config: Annotated[
        Path | None, typer.Option(help="Agent TOML: model, llm_args, system prompt.", rich_help_panel=AGENT_PANEL)
    ] = None,
    user_llm: Annotated[str, typer.Option(help="User simulator model.", rich_help_panel=AGENT_PANEL)] = "scripted/user",
    user_llm_args: Annotated[str | None, typer.Option(help="User model args as JSON.", rich_help_panel=AGENT_PANEL)] = None,
    judge_llm: Annotated[str, typer.Option(help="NL-assertion judge model.", rich_help_panel=AGENT_PANEL)] = "scripted/judge",
    judge_llm_args: Annotated[
        str | None, typer.Option(help="Judge model args as JSON.", rich_help_panel=AGENT_PANEL)
    ] = None,
    num_trials: Annotated[int, typer.Option(min=1, help="Trials per task.", rich_help_panel=RUN_PANEL)] = 1,
    num_tasks: Annotated[int | None, typer.Option(min=1, help="First N tasks only.", rich_help_panel=RUN_PANEL)] = None,
    task_ids: Annotated[
        list[str] | None, typer.Option("--task-ids", help="Only these task ids (repeat or comma-separate).",
                                       rich_help_panel=RUN_PANEL)
    ] = None,
    tasks_file: Annotated[Path | None, typer.Option(help="Use this tasks.json.", rich_help_panel=RUN_PANEL)] = None,
    seed: Annotated[int, typer.Option(help="Run seed; per-trial seeds derive from it.", rich_help_panel=RUN_PANEL)] = 300,
    max_concurrency: Annotated[int, typer.Option(min=1, help="Trials at once.", rich_help_panel=RUN_PANEL)] = 1,
    max_steps: Annotated[int, typer.Option(min=1, rich_help_panel=RUN_PANEL)] = 200,
    max_errors: Annotated[int, typer.Option(min=1, rich_help_panel=RUN_PANEL)] = 10,
    solo: Annotated[bool, typer.Option(help="No user simulator; the agent holds both tool sets.",
                                       rich_help_panel=RUN_PANEL)] = False,
    save_to: Annotated[Path | None, typer.Option(help="Run directory; an existing one resumes.",
                                                 rich_help_panel=RUN_PANEL)] = None,
    cassette: Annotated[Path | None, typer.Option(help="Cassette directory.", rich_help_panel=CASSETTE_PANEL)] = None,
    record_mode: Annotated[
        str, typer.Option(help="replay | record | auto | off | once (vcrpy names too).", rich_help_panel=CASSETTE_PANEL)
    ] = "auto",
    prices: Annotated[Path | None, typer.Option(help="Prices file (YAML/JSON, USD per token).",
                                                rich_help_panel=CASSETTE_PANEL)] = None,
    max_cost: Annotated[float | None, typer.Option(help="Stop starting trials past this live spend (USD).",
                                                   rich_help_panel=CASSETTE_PANEL)] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Run every selected task num-trials times and report pass^k."""
    from tauproxy_cli.run_setup import RunFlags, build_run_config
    from tauproxy_cli.run_view import run_with_progress

    flags = RunFlags(**{name: value for name, value in locals().items() if name != "json_output"})
    config = build_run_config(flags)
    run_with_progress(config, json_output=json_output)
