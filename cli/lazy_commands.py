"""Commands that load when they are used: `tauproxy --help` imports none of them.

A group lists its commands from a table of `LazyCommand`s: where each one lives ("module:attribute",
a command function or a `typer.Typer` of subcommands) and the one line its parent's `--help` shows.
Listing a group's commands builds a stand-in from that line; running one, or asking for its own
`--help`, imports its module and builds it as `app.command(name)` / `app.add_typer(app, name=name)`
would have. Adding a command is one line of a table, with no import.

tests/cli/test_lazy_commands.py checks every table line against the command it loads (the line is
the first paragraph of the command's help) and that the CLI's import leaves the heavy modules unloaded.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup

from tauproxy.runner.collector import paused_collector


@dataclass(frozen=True)
class LazyCommand:
    target: str  # "module:attribute": a command function, or a typer.Typer whose commands are subcommands
    summary: str  # the first paragraph of the command's help: what its parent's --help lists

    def load(self, name: str, parent: TyperGroup) -> Any:
        """The command as typer builds it, with the parent group's help settings.

        Loaded with the collector paused (runner/collector.py): the module and the command live as long
        as the process, so the collector's passes over them while they are made find no garbage."""
        with paused_collector():
            module, _, attribute = self.target.partition(":")
            target = getattr(importlib.import_module(module), attribute)
            holder = typer.Typer(rich_markup_mode=parent.rich_markup_mode)
            if isinstance(target, typer.Typer):
                holder.add_typer(target, name=name)
            else:
                holder.command(name)(target)
                holder.callback()(_no_options)  # a group, so typer builds the command under its own name
            return typer.main.get_group(holder).commands[name]

    def stand_in(self, name: str, parent: TyperGroup) -> TyperCommand:
        """What a listing of the parent's commands needs: the name and the one line."""
        return TyperCommand(name=name, help=self.summary, rich_markup_mode=parent.rich_markup_mode)


def _no_options() -> None:
    """The callback of the group a lazy command is built in (never invoked)."""


class LazyCommands(MutableMapping[str, Any]):
    """A group's commands, the lazy ones loaded (once) when looked up; their order is the table's."""

    def __init__(self, built: MutableMapping[str, Any], table: Mapping[str, LazyCommand], parent: TyperGroup) -> None:
        self._built = built
        self._table = table
        self._parent = parent

    def __getitem__(self, name: str) -> Any:
        if name not in self._built and name in self._table:
            self._built[name] = self._table[name].load(name, self._parent)
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._built
        yield from (name for name in self._table if name not in self._built)

    def __len__(self) -> int:
        return len(set(self._built) | set(self._table))

    def __contains__(self, name: object) -> bool:
        return name in self._built or name in self._table

    def listed(self, name: str) -> Any:
        """For a listing: the command if it is built, else its stand-in (nothing imported)."""
        if name in self._built:
            return self._built[name]
        return self._table[name].stand_in(name, self._parent)


class LazyGroup(TyperGroup):
    """A typer group whose `table` commands load on use; `lazy_group(table)` makes one for typer's `cls=`."""

    table: ClassVar[Mapping[str, LazyCommand]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.lazy_commands = LazyCommands(self.commands, self.table, self)
        self.commands = self.lazy_commands
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.lazy_commands)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.lazy_commands:
            return None
        if self._listing:
            return self.lazy_commands.listed(cmd_name)
        return self.lazy_commands[cmd_name]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        # Help lists every command by its one line: stand-ins do, so no command module is imported.
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def lazy_group(table: Mapping[str, LazyCommand]) -> type[LazyGroup]:
    """A LazyGroup class over `table`, for `typer.Typer(cls=...)`."""
    return type("LazyGroup", (LazyGroup,), {"table": table})
