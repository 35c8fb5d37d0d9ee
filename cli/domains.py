"""`tauproxy domains list | show`: the domain packs this install can run."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tauproxy_cli.flag import flag

app = typer.Typer(help="List and inspect domain packs.", no_args_is_help=True)
SHOWN_TASKS = 20  # a task list past this is cut, and says so


@app.command("list")
def list_command(json_output: Annotated[bool, flag("--json")] = False) -> None:
    """List the available domain packs."""
    from tauproxy.sources.registry import registered_sources
    from tauproxy_cli.output import out_console, print_json

    rows = [summary.model_dump(exclude_none=True) for source in registered_sources() for summary in source.domains()]
    if json_output:
        print_json(rows)
        return
    width = max([12, *(len(row["name"]) for row in rows)])
    for row in rows:
        if "unavailable" in row:  # a source's domain this install cannot run, and the line that fixes it
            out_console.print(f"{row['name']:<{width}}  {row['unavailable']}", markup=False, soft_wrap=True)
            continue
        out_console.print(
            f"{row['name']:<{width}} {row['tasks']:>4} tasks  {row['agent_tools']:>3} agent tools  "
            f"{row['user_tools']:>3} user tools" + ("  (dual control)" if row["dual_control"] else "")
        )


@app.command("show")
def show_command(name: str, json_output: Annotated[bool, flag("--json")] = False) -> None:
    """Show one pack: its tools and tasks."""
    from tauproxy.sources.registry import source_for_domain
    from tauproxy_cli.output import out_console, print_json

    data: dict[str, Any] = source_for_domain(name).describe(name)
    if json_output:
        print_json(data)
        return
    out_console.print(f"[bold]{data['name']}[/] ({data['root']})  sha256 {data['content_sha256'][:12]}")
    for side in ("agent_tools", "user_tools"):
        for tool in data[side]:
            out_console.print(f"  {side[:-6]:<6} {tool['kind']:<5} {tool['name']}: {tool['description']}")
    tasks = data["tasks"]
    shown = tasks[:SHOWN_TASKS]
    more = f", ... and {len(tasks) - len(shown)} more (--json lists all)" if len(tasks) > len(shown) else ""
    out_console.print(f"  {len(tasks)} tasks: " + ", ".join(shown) + more)


@app.command("check")
def check_command(
    names: Annotated[list[str] | None, typer.Argument(help="Packs to check (default: all).")] = None,
    tasks_file: Annotated[str | None, typer.Option(help="Check this tasks.json instead of the pack's.")] = None,
    json_output: Annotated[bool, flag("--json")] = False,
) -> None:
    """Oracle passes 100%, a do-nothing agent at most 10%, golden actions obey the policy.

    On a τ²-bench domain (tau2/<name>) the oracle plays τ²'s tasks under τ²'s rules, environment and
    grader; there the do-nothing rate is shown but not held to 10%, as τ²'s tasks are not ours to change."""
    from pathlib import Path

    from tauproxy.domain.pack import available_domains
    from tauproxy.errors import ConfigError
    from tauproxy.workflows.domain_check import MAX_SILENT_PASS_RATE
    from tauproxy.workflows.domain_checks import check_any_domain
    from tauproxy_cli.output import out_console, print_json

    if tasks_file is not None and not tasks_file:  # `--tasks-file "$F"` with F unset: not the pack's own tasks
        raise ConfigError("--tasks-file is empty; give a tasks.json or leave the flag out")
    checks = [check_any_domain(name, Path(tasks_file) if tasks_file else None) for name in names or available_domains()]
    if json_output:
        print_json([c.model_dump() for c in checks])
    else:
        for c in checks:
            verdict = "[green]ok[/]" if c.ok else "[red]FAILED[/]"
            theirs = c.shown_only
            limit = "shown only" if theirs else f"max {MAX_SILENT_PASS_RATE:.0%}"
            playable = f" of {c.tasks - len(c.unplayable)} playable" if c.unplayable else ""
            checked = "golden actions raising (shown only)" if theirs else "policy violations"
            out_console.print(
                f"{c.domain:<10} {c.tasks:>4} tasks  oracle {c.oracle_pass_rate:6.1%}{playable} (needs 100%)  "
                f"do-nothing {c.silent_pass_rate:6.1%} ({limit})  {checked} {len(c.policy_violations)}  {verdict}"
            )
            # On a τ² domain what is shown only stays in --json: the lines are for what failed the check.
            shown = [] if theirs else [*c.silent_passes[:5], *c.policy_violations[:5]]
            for line in [*c.oracle_failures[:5], *shown, *c.unplayable[:5]]:
                out_console.print(f"    {line}")
    if not all(c.ok for c in checks):
        raise typer.Exit(1)
