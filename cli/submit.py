"""`tauproxy submit prepare`: a τ²-bench leaderboard submission (tauproxy/workflows/submission.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tauproxy_cli.flag import flag

app = typer.Typer(help="Prepare a τ²-bench leaderboard submission.", no_args_is_help=True)


@app.command("prepare")
def prepare_command(
    runs: Annotated[
        list[Path],
        typer.Argument(
            help="Runs of tau2/airline, tau2/retail or tau2/telecom (directories or τ² results files), one per domain.",
            metavar="RUN...",
        ),
    ],
    out: Annotated[Path, typer.Option(help="A new directory for submission.json and trajectories/.")],
    organization: Annotated[str, typer.Option(help="Who made the agent (τ²'s prepare asks for it).")],
    email: Annotated[str, typer.Option(help="Contact email for the leaderboard.")],
    model_name: Annotated[
        str | None, typer.Option(help="The name shown on the leaderboard (default: the agent model).")
    ] = None,
    contact_name: Annotated[str | None, typer.Option(help="Contact name.")] = None,
    github: Annotated[str | None, typer.Option(help="GitHub user name.")] = None,
    new: Annotated[bool, flag("--new", help="Ask for the model to be highlighted as new.")] = False,
) -> None:
    """Check and score τ²-bench runs as τ² does, and write what `tau2 submit validate` takes.

    The runs are checked as τ²-bench's `submit verify-trajs` checks them and scored with τ²'s metrics;
    beside submission.json and the trajectories goes disclosure.json (models, seeds, versions, live or
    replayed calls)."""
    from datetime import date

    from tauproxy.results.load import load_any_results
    from tauproxy.tau2bench.leaderboard import Submitter
    from tauproxy.workflows.submission import prepare_submission
    from tauproxy_cli.output import note, out_console

    name = model_name or load_any_results(runs[0]).info.agent_info.llm
    submitter = Submitter(
        model_name=name, organization=organization, email=email, contact_name=contact_name, github=github, is_new=new
    )
    prepared = prepare_submission(runs, out, submitter, date.today())
    for score in prepared.scores:
        passes = "  ".join(f"pass^{k} {value:.1f}%" for k, value in score.pass_percent.items() if value is not None)
        cost = f"  agent ${score.agent_cost:.4f}/trajectory" if score.agent_cost is not None else ""
        out_console.print(f"{score.domain:<8} {passes}{cost}", markup=False)
    note(f"wrote {prepared.out} (check it with `tau2 submit validate {prepared.out}`)")
