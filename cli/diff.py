"""`tauproxy diff A B`: which trials flipped between two runs, where they diverged, and why."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tauproxy_cli.flag import flag
from tauproxy_cli.run_input import RUN_ARGUMENT


def diff_command(
    a: Annotated[Path, typer.Argument(help=f"The earlier run ({RUN_ARGUMENT}).")],
    b: Annotated[Path, typer.Argument(help=f"The later run ({RUN_ARGUMENT}).")],
    cassette: Annotated[
        list[Path] | None,
        typer.Option("--cassette", help="Cassette holding the runs' calls, for exact request diffs (repeatable)."),
    ] = None,
    json_output: Annotated[bool, flag("--json", help="Print the diff as JSON.")] = False,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            help="Show at most N changed tasks and N flipped trials, saying how many were "
            "left out (--json keeps them all).",
        ),
    ] = None,
    task: Annotated[
        list[str] | None,
        typer.Option("--task", help="Only this task (repeatable); the paired comparison is over these tasks too."),
    ] = None,
) -> None:
    """Per-task pass counts in A vs B, and for each flipped trial its first divergence and cause."""
    from tauproxy.errors import ConfigError
    from tauproxy.reports.run_diff import diff_runs, only_tasks, render_diff
    from tauproxy.results.load import load_any_results
    from tauproxy_cli.output import print_json

    if limit is not None and limit < 1:
        raise ConfigError(f"--limit {limit}: give 1 or more")
    run_a, run_b = load_any_results(a), load_any_results(b)
    if task:
        run_a, run_b = only_tasks(run_a, run_b, task)
    diff = diff_runs(run_a, run_b, cassette or [])
    if json_output:
        print_json(diff.model_dump(mode="json"))
    else:
        # Plain print, not rich: diffs are full of brackets that rich would read as markup.
        print(render_diff(diff, limit))
