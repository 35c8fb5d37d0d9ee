"""On/off flags: one name each (no `--no-...` twin) and no value shown in `--help`."""

from __future__ import annotations

from typing import Any

import typer


def flag(name: str, help: str | None = None, **kwargs: Any) -> Any:
    # typer's rich help prints a `<bool>` value after every flag, though a flag takes no value; an
    # empty metavar is what it prints instead.
    return typer.Option(name, help=help, metavar="", **kwargs)
