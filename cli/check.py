"""`tauproxy check RUN --baseline BASE`: exit 0 (good), 1 (bad) or 125 (cannot test), for `git bisect run`.

Every failure to judge the run is 125 so that `git bisect run` skips the commit instead of
blaming it: a missing or unreadable file, an unknown metric, no task in common, or a run that is
mostly infrastructure errors. A real regression is always 1, never 125. Either side may be a
τ²-bench simulations file (read as `report` reads it), so `git bisect run` works over a τ²-based
agent's repository too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tauproxy_cli.flag import flag
from tauproxy_cli.run_input import RUN_ARGUMENT

GOOD, BAD, CANNOT_TEST = 0, 1, 125


def check_command(
    run: Annotated[Path, typer.Argument(help=f"The run to judge ({RUN_ARGUMENT}).")],
    baseline: Annotated[Path | None, typer.Option(
        "--baseline", help=f"The known-good run ({RUN_ARGUMENT}).")] = None,
    max_drop: Annotated[float, typer.Option(
        "--max-drop", help="Largest allowed drop of the metric below the baseline.")] = 0.05,
    metric: Annotated[str, typer.Option(
        "--metric", help="pass^1 | pass^k (largest k both runs have) | avg_reward.")] = "pass^1",
    json_output: Annotated[bool, flag("--json", help="Print the numbers as JSON.")] = False,
) -> None:
    """Compare a run with a baseline on their common tasks; the exit code is the verdict."""
    from rich.markup import escape

    from tauproxy.errors import TauproxyError
    from tauproxy.reports.regression import Verdict, check_metric, compare_scores
    from tauproxy.results.load import load_any_results
    from tauproxy_cli.output import error, out_console, print_json

    # Options are validated here rather than by typer: a usage error exits 2, which
    # `git bisect run` would read as "bad".
    try:
        if baseline is None:
            raise TauproxyError("--baseline is required")
        check_metric(metric)
        result = compare_scores(load_any_results(run), load_any_results(baseline), metric, max_drop)
    except (TauproxyError, ValueError) as exc:  # ValueError: a results file that is not UTF-8
        error(f"cannot test: {exc}")
        if json_output:
            print_json({"verdict": Verdict.SKIP.value, "reason": str(exc), "exit_code": CANNOT_TEST})
        raise typer.Exit(CANNOT_TEST) from None
    code = {Verdict.GOOD: GOOD, Verdict.BAD: BAD, Verdict.SKIP: CANNOT_TEST}[result.verdict]
    if json_output:
        print_json({**result.model_dump(mode="json"), "exit_code": code})
    else:
        style = {Verdict.GOOD: "green", Verdict.BAD: "bold red", Verdict.SKIP: "yellow"}[result.verdict]
        label = "cannot test" if result.verdict is Verdict.SKIP else result.verdict.value
        out_console.print(f"[{style}]{label}[/]: {escape(result.reason)}", soft_wrap=True)
    raise typer.Exit(code)
