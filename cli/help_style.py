"""How `--help` reads: usage lines in the usual form and no value shown after a flag.

typer (0.29) writes a required argument as `{runs}...` in the usage line and prints `<bool>` after
every on/off option it adds itself (`--help`, `--install-completion`), though a flag takes no value.
Our own flags already show none (flag.py); this makes typer's own rows and the usage line match:

    Usage: tauproxy report [OPTIONS] RUNS...
    Usage: tauproxy domains check [OPTIONS] [NAMES]...

Both are typer's private rendering hooks, so tests/cli/test_help.py checks every command's help: a
typer that renames them fails there instead of quietly bringing the braces back.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperArgument, TyperOption


def _usage_display_name(self: TyperArgument) -> str:
    name = (self.metavar or self.name or "").upper()
    if not self.required:
        name = f"[{name}]"
    if self.nargs != 1 and not name.endswith("..."):
        name += "..."
    return name


_typer_display_type_rich = TyperOption.display_type_rich


def _display_type_rich(self: TyperOption, ctx: Any) -> str | None:
    if self.is_flag and self.metavar is None:
        return None
    return _typer_display_type_rich(self, ctx)


def apply() -> None:
    TyperArgument._usage_display_name = _usage_display_name  # type: ignore[method-assign]
    TyperOption.display_type_rich = _display_type_rich  # type: ignore[method-assign]
