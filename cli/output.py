"""Console helpers shared by the commands: one stderr console, one-line errors."""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.text import Text

err_console = Console(stderr=True, highlight=False)
out_console = Console(highlight=False)


def error(message: str) -> None:
    err_console.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)


def print_json(data: Any) -> None:
    """Data, or a pydantic model's JSON-mode dump, as indented JSON on stdout."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def warn(message: str) -> None:
    err_console.print(Text.assemble(("warning: ", "bold yellow"), message), soft_wrap=True)


def note(message: str) -> None:
    """A plain status line on stderr (stdout stays the report)."""
    err_console.print(Text(message), soft_wrap=True)
