"""Gives every command that plans a run (`run`, `estimate`, `bisect`) the options of RunFlags."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer

from tauproxy_cli.run_flags import RunFlags, RunOption, run_options


def typer_option(option: RunOption) -> Any:
    """The `Annotated[type, typer.Option(...)]` that typer reads an option's flag from."""
    kwargs: dict[str, Any] = {"help": option.spec.help, "rich_help_panel": option.spec.panel}
    if option.spec.min is not None:
        kwargs["min"] = option.spec.min
    names: list[str] = []
    if option.annotation is bool:
        # A plain on/off flag, named once so typer adds no `--no-...` twin; the empty metavar keeps
        # typer's rich help from printing a `<bool>` value the flag does not take.
        names.append("--" + option.name.replace("_", "-"))
        kwargs["metavar"] = ""
    return Annotated[option.annotation, typer.Option(*names, **kwargs)]


Command = Callable[..., None]


def with_run_options(command: Command) -> Command:
    """Give `command(flags: RunFlags, **own)` every run option as well as its own options."""
    return _with_run_options(command, frozenset())


def with_run_options_except(leave_out: frozenset[str]) -> Callable[[Command], Command]:
    """`with_run_options` without the options in `leave_out`: they keep their defaults in RunFlags, are not
    in the command's `--help`, and are refused as unknown. `estimate` plans a fixed run and decides
    nothing, so it takes no `--against`, and its help lists only what changes the plan."""

    def decorate(command: Command) -> Command:
        return _with_run_options(command, leave_out)

    return decorate


def _with_run_options(command: Callable[..., None], leave_out: frozenset[str]) -> Callable[..., None]:
    unknown = leave_out - {o.name for o in run_options()}
    if unknown:
        raise ValueError(f"not run options: {sorted(unknown)}")
    options = [o for o in run_options() if o.name not in leave_out]
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "flags"]
    shared = [
        inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default, annotation=typer_option(o))
        for o in options
    ]

    @functools.wraps(command)
    def wrapper(**values: Any) -> None:
        flags = RunFlags(**{o.name: values.pop(o.name) for o in options})
        command(flags=flags, **values)

    wrapper.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [*shared, *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own)]
    )
    return wrapper
