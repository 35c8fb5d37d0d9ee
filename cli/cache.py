"""`tauproxy cache path | info | clear`: the directory of derived artefacts kept across runs."""

from __future__ import annotations

from typing import Annotated

import typer

from tauproxy_cli.flag import flag

app = typer.Typer(
    help="The cache of derived artefacts (generated and validated domain databases, τ²-bench's catalogs "
    "and prompts): where it is, how big, and clearing it. TAUPROXY_CACHE_DIR moves it; "
    "TAUPROXY_CACHE_DIR=off turns it off.",
    no_args_is_help=True,
)

OFF_LINE = "off (TAUPROXY_CACHE_DIR=off): every run builds what it needs"


@app.command("path")
def path_command() -> None:
    """Print the cache directory (or say the cache is off)."""
    from tauproxy.derived_cache import cache_dir

    directory = cache_dir()
    typer.echo(OFF_LINE if directory is None else str(directory))


@app.command("info")
def info_command(json_output: Annotated[bool, flag("--json")] = False) -> None:
    """Print the cache directory, its number of entries and its size on disk."""
    from tauproxy.derived_cache import cache_info

    info = cache_info()
    if json_output:
        from tauproxy_cli.output import print_json

        directory = None if info.directory is None else str(info.directory)
        print_json({"directory": directory, "entries": info.entries, "size_bytes": info.size_bytes})
        return
    if info.directory is None:
        typer.echo(OFF_LINE)
        return
    typer.echo(f"{info.directory}  {info.entries} entries  {_size(info.size_bytes)}")


@app.command("clear")
def clear_command() -> None:
    """Remove every entry: the next run builds what it needs again (the results are the same)."""
    from tauproxy.derived_cache import clear_cache

    before = clear_cache()
    if before.directory is None:
        typer.echo(OFF_LINE)
        return
    typer.echo(f"cleared {before.directory}: {before.entries} entries, {_size(before.size_bytes)}")


def _size(size_bytes: int) -> str:
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("kB", 2**10)):
        if size_bytes >= scale:
            return f"{size_bytes / scale:.1f} {unit}"
    return f"{size_bytes} B"
