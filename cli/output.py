"""Console helpers shared by the commands: one stderr console, one-line errors."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

# A pipe or a CI log has no width; rich would take 80 columns and cut a wide table's numbers ("$4.90…",
# "1,559…"), the very figures a CI log is kept for. Without COLUMNS, output that is not a terminal gets
# this many columns instead: every table the commands print fits.
PIPE_WIDTH = 160


def console_width(columns: str | None, is_terminal: bool) -> int | None:
    """COLUMNS when it is set; else a terminal's own width (None: rich asks it), else PIPE_WIDTH."""
    if columns and columns.strip().isdigit():
        return int(columns)
    return None if is_terminal else PIPE_WIDTH


def output_console(stderr: bool, **settings: Any) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    width = console_width(os.environ.get("COLUMNS"), stream.isatty())
    return Console(stderr=stderr, highlight=False, width=width, **settings)


err_console = output_console(stderr=True)
out_console = output_console(stderr=False)


class WholeTable(Table):
    """A table whose cells wrap when it is too wide for the output, never cut with "…": a figure in a
    narrow terminal or log is shown whole, over two lines if it must."""

    def add_column(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("overflow", "fold")
        super().add_column(*args, **kwargs)


def error(message: str) -> None:
    err_console.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)


def print_json(data: Any) -> None:
    """Data, or a pydantic model's JSON-mode dump, as indented JSON on stdout."""
    from pydantic import BaseModel  # here, not at import: the commands' --help never loads pydantic

    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def warn(message: str) -> None:
    err_console.print(Text.assemble(("warning: ", "bold yellow"), message), soft_wrap=True)


def note(message: str) -> None:
    """A plain status line on stderr (stdout stays the report)."""
    err_console.print(Text(message), soft_wrap=True)
