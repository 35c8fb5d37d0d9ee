"""How `--help` reads: usage lines in the usual form, no value shown after a flag, prose rewrapped.

typer (0.29) writes a required argument as `{runs}...` in the usage line and prints `<bool>` after
every on/off option it adds itself (`--help`, `--install-completion`), though a flag takes no value.
Our own flags already show none (flag.py); this makes typer's own rows and the usage line match:

    Usage: tauproxy report [OPTIONS] RUNS...
    Usage: tauproxy domains check [OPTIONS] [NAMES]...

And a command's help after its first paragraph is prose that the terminal wraps: typer keeps the line
breaks of the docstring in it (its `_fix_linebreaks` only joins the paragraphs), so every source line
came out as a short ragged line of its own. Here each paragraph is one line for rich to wrap, except one
that starts with click's "\\b" (keep my lines).

A usage error (an unknown flag, a value out of range, a missing argument) is one line on stderr, as
every other bad input is (`error: ...`, exit 2), naming the help to read:

    error: Invalid value for '--num-tasks': Input should be greater than or equal to 1 (see tauproxy run --help)
    error: Missing argument 'b' (usage: tauproxy diff [OPTIONS] A B; see tauproxy diff --help)

typer draws it as a usage line, a hint and a boxed panel: five lines, the message itself cut at the
box's edge in a narrow terminal and hard to grep in a CI log.

All four are typer's private rendering hooks, so tests/cli/test_help.py checks every command's help and
a usage error's line: a typer that renames them fails there instead of quietly bringing the braces back.
"""

from __future__ import annotations

import sys
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


def _fix_linebreaks(paragraphs: list[str], markup_mode: Any) -> str:
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split("\n")) for p in paragraphs)


def _usage_error(error: Any) -> None:
    if type(error).__name__ == "NoArgsIsHelpError":  # typer has printed the help already: nothing to add
        return
    from rich.text import Text

    from tauproxy_cli.output import err_console

    message = error.format_message().rstrip(".")
    ctx = getattr(error, "ctx", None)
    if ctx is not None and ctx.command.get_help_option(ctx) is not None:
        hint = f"see {ctx.command_path} {ctx.help_option_names[0]}"
        # An argument missing or extra is named as click names it ('a'); the usage line says which is which.
        param = getattr(error, "param", None)
        if getattr(param, "param_type_name", None) == "argument" or "extra argument" in message:
            hint = f"usage: {ctx.get_usage().removeprefix('Usage: ')}; {hint}"
        message += f" ({hint})"
    err_console.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)


def apply() -> None:
    TyperArgument._usage_display_name = _usage_display_name  # type: ignore[method-assign]
    TyperOption.display_type_rich = _display_type_rich  # type: ignore[method-assign]
    rich_utils = sys.modules.get("typer.rich_utils")  # imported first (help_import.py); absent without rich
    if rich_utils is not None:
        setattr(rich_utils, "_fix_linebreaks", _fix_linebreaks)  # noqa: B010 - a private hook mypy cannot see
        setattr(rich_utils, "rich_format_error", _usage_error)  # noqa: B010
