"""`tauproxy check RUN --baseline BASE`: exit 0 (good), 1 (bad) or 125 (cannot test), for `git bisect run`.

The verdict knows the noise (tauproxy/reports/regression.py): bad only when the whole confidence
interval of the drop is above --max-drop, good when it is all at or below it, and undecided when
it straddles the threshold. `--undecided` chooses the exit code of an undecided verdict; the
default is `skip` (125): the data cannot tell yet, so `git bisect run` skips that commit instead of
blaming or clearing it, and a CI job that treats any non-zero code as failure does not pass a
change it could not judge. The output says how many more trials per task would most likely
decide it, and what they would cost.

Every failure to judge the run is 125 so that `git bisect run` skips the commit instead of
blaming it (a missing --baseline is the one usage error, exit 2: the script is wrong, not the
commit): a missing or unreadable file, an unknown metric, no task in common, or a run that is
mostly infrastructure errors. A real regression is always 1, never 125. Either side may be a
τ²-bench simulations file (read as `report` reads it), so `git bisect run` works over a τ²-based
agent's repository too.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from tauproxy_cli.flag import flag
from tauproxy_cli.run_input import RUN_ARGUMENT

GOOD, BAD, CANNOT_TEST = 0, 1, 125


class Undecided(StrEnum):
    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"


def verdict_exit_code(verdict: str, undecided: str) -> int:
    """The exit code of a verdict (good, bad, skip or undecided), an undecided one as `undecided` says."""
    choice = {"good": GOOD, "bad": BAD, "skip": CANNOT_TEST}
    return {**choice, "undecided": choice[undecided]}[verdict]


def check_command(
    run: Annotated[Path, typer.Argument(help=f"The run to judge ({RUN_ARGUMENT}).")],
    baseline: Annotated[Path | None, typer.Option("--baseline", help=f"The known-good run ({RUN_ARGUMENT}).")] = None,
    max_drop: Annotated[
        float, typer.Option("--max-drop", help="Largest allowed drop of the metric below the baseline.")
    ] = 0.05,
    metric: Annotated[
        str, typer.Option("--metric", help="pass^1 | pass^k (largest k both runs have) | avg_reward.")
    ] = "pass^1",
    confidence: Annotated[
        float,
        typer.Option("--confidence", help="Confidence of the interval of the drop (bad: all of it above --max-drop)."),
    ] = 0.95,
    undecided: Annotated[
        str,
        typer.Option(
            "--undecided",
            help="Exit code when the interval straddles --max-drop: good (0), bad (1) or skip "
            "(125, the default: cannot tell yet).",
        ),
    ] = Undecided.SKIP.value,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the paired bootstrap.")] = 0,
    json_output: Annotated[bool, flag("--json", help="Print the numbers as JSON.")] = False,
) -> None:
    """Compare a run with a baseline on their common tasks; the exit code is the verdict."""
    import math

    from rich.markup import escape

    from tauproxy.errors import ConfigError, TauproxyError
    from tauproxy.reports.regression import Verdict, check_metric, compare_scores
    from tauproxy.results.load import load_any_results
    from tauproxy_cli.output import error, out_console, print_json

    if baseline is None:
        # A script that forgot --baseline is broken, not a commit that cannot be tested: a usage error
        # (one line, exit 2 as cli/exit_codes.py says), never the 125 that `git bisect run` skips past.
        raise ConfigError("--baseline is required: the known-good run to compare with")
    # The other options are validated here rather than by typer: they depend on the data, and a
    # typer usage error exits 2, which `git bisect run` would read as "bad".
    try:
        check_metric(metric)
        if not math.isfinite(max_drop):  # an infinite allowance would call every run good
            raise TauproxyError(f"--max-drop {max_drop}: give a finite number")
        if undecided not in {u.value for u in Undecided}:
            raise TauproxyError(f"--undecided must be good, bad or skip, not {undecided!r}")
        result = compare_scores(
            load_any_results(run), load_any_results(baseline), metric, max_drop, confidence=confidence, seed=seed
        )
    except (TauproxyError, ValueError, OSError) as exc:  # ValueError: not UTF-8; OSError: a name too long
        error(f"cannot test: {exc}")
        if json_output:
            print_json({"verdict": Verdict.SKIP.value, "reason": str(exc), "exit_code": CANNOT_TEST})
        raise typer.Exit(CANNOT_TEST) from None
    code = verdict_exit_code(result.verdict.value, undecided)
    if json_output:
        print_json({**result.model_dump(mode="json"), "exit_code": code})
    else:
        from tauproxy.reports.paired import render_paired

        style = {Verdict.GOOD: "green", Verdict.BAD: "bold red", Verdict.SKIP: "yellow", Verdict.UNDECIDED: "yellow"}[
            result.verdict
        ]
        label = "cannot test" if result.verdict is Verdict.SKIP else result.verdict.value
        out_console.print(f"[{style}]{label}[/]: {escape(result.reason)}", soft_wrap=True)
        if result.paired is not None:
            out_console.print(render_paired(result.paired, "run", "baseline"), markup=False, soft_wrap=True)
    raise typer.Exit(code)
