"""`tauproxy tasks generate`: more tasks from a domain's compositional generator."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Generate task sets.", no_args_is_help=True)


@app.command("generate")
def generate_command(
    domain: Annotated[str, typer.Option(help="Domain pack with a taskgen.py.")],
    seed: Annotated[int, typer.Option(help="Generator seed; the same seed gives the same file.")] = 0,
    n: Annotated[int, typer.Option(min=1, help="How many tasks.")] = 50,
    out: Annotated[Path | None, typer.Option(help="Write here (default: stdout).")] = None,
) -> None:
    """Generate N tasks; run them with `tauproxy run --tasks-file FILE`, check with `domains check --tasks-file`."""
    import json
    import sys

    from tauproxy.domain.taskgen import generate_tasks, write_tasks

    tasks = generate_tasks(domain, seed, n)
    if out is None:
        data = [task.model_dump(mode="json", exclude_none=True) for task in tasks]
        sys.stdout.write(json.dumps(data, indent=1, sort_keys=True) + "\n")
    else:
        write_tasks(tasks, out)
        typer.echo(f"wrote {len(tasks)} tasks to {out}", err=True)
