"""`tauproxy estimate`: calls, tokens and cost of a planned run (p50/p90), before paying for it."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from tauproxy_cli.flag import flag
from tauproxy_cli.run_flags import RunFlags
from tauproxy_cli.run_input import RUN_ARGUMENT
from tauproxy_cli.run_options import with_run_options_except

# What decides a comparison or shapes a run's printout: an estimate plans a fixed run and compares nothing.
NOT_FOR_ESTIMATE = frozenset({"against", "until_decided", "max_drop", "confidence", "undecided", "full"})


@with_run_options_except(NOT_FOR_ESTIMATE)
def estimate_command(
    flags: RunFlags,
    history: Annotated[
        list[Path] | None, typer.Option("--history", help=f"Earlier runs of this domain (each a {RUN_ARGUMENT}).")
    ] = None,
    more_history: Annotated[
        list[Path] | None,
        typer.Argument(help="More earlier runs: `--history A B` reads as --history A and B.", show_default=False),
    ] = None,
    json_output: Annotated[bool, flag("--json", help="Print the estimate as JSON.")] = False,
) -> None:
    """Predict what `run` with the same flags would cost; --cassette subtracts what it would replay."""

    from tauproxy_cli.run_setup import build_run_config

    config = build_run_config(flags)  # bad flags fail here, before the estimator's imports (numpy)

    from tauproxy.runner.estimate import estimate
    from tauproxy_cli.output import WholeTable, out_console, print_json
    from tauproxy_cli.report_view import money

    result = estimate(config, [*(history or []), *(more_history or [])], flags.cassette)
    if json_output:
        print_json(asdict(result))
        return
    table = WholeTable(title=f"estimate for {result.trials} trials ({result.confidence}; {result.basis})")
    for column in ("role", "live calls p50", "p90", "tokens p50", "p90", "cost p50", "p90", "replayed calls", "saved"):
        table.add_column(column, justify="right")
    for role, row in result.roles.items():
        table.add_row(
            role,
            f"{row.calls_p50:.0f}",
            f"{row.calls_p90:.0f}",
            f"{row.tokens_p50:,.0f}",
            f"{row.tokens_p90:,.0f}",
            money(row.cost_p50),
            money(row.cost_p90),
            str(row.replayed_calls),
            money(row.replayed_cost),
        )
    out_console.print(table)
    out_console.print(
        f"live spend: p50 {money(result.live_cost_p50)}, p90 {money(result.live_cost_p90)}; "
        f"{result.replayed_calls} calls replayed from the cassette (saves {money(result.replayed_cost)})"
    )
    if result.unknown_price_models:
        out_console.print(f"[yellow]unknown price for: {', '.join(result.unknown_price_models)}[/] (pass --prices)")
    if result.p90_coverage is not None:
        out_console.print(
            f"p90 coverage, measured on {result.coverage_checks} halvings of the history's tasks "
            f"({result.coverage_of}): {result.p90_coverage:.0%} (goal 90%)"
        )
    out_console.print(f"prices: {result.price_source}")
