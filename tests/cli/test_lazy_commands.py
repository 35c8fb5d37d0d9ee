"""The CLI loads a command only when it is used (cli/lazy_commands.py): its import and every command's
`--help` stay clear of the heavy modules, and each table line is what its command says of itself."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from typing import Any

import typer
from conftest import invoke_cli
from typer.testing import CliRunner

from tauproxy_cli.lazy_commands import LazyCommand, LazyGroup
from tauproxy_cli.main import app

# What `tauproxy --help` and `tauproxy CMD --help` must not import: each costs a tenth of a second or
# more at start (pydantic's core, τ², litellm, the HTTP stacks; markdown-it and pygments, which typer's
# help renderer imports for features turned off here: cli/help_import.py), and none is needed for help.
HEAVY = (
    "pydantic",
    "pydantic_core",
    "tau2",
    "litellm",
    "httpx",
    "starlette",
    "uvicorn",
    "tauproxy.data_model",
    "markdown_it",
    "pygments",
)

# One process: the CLI's import, its root help, then every command's --help (typer's own handling of the
# root's options included: a value it coerces is checked through pydantic).
PROBE = """
import contextlib, io, json, sys
import typer
from typer.testing import CliRunner
from tauproxy_cli.main import app

HEAVY = tuple(json.loads(sys.argv[1]))

def loaded():
    return sorted(name for name in sys.modules if name in HEAVY or name.startswith(tuple(h + "." for h in HEAVY)))

def show_help(*path):
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            app(args=[*path, "--help"], prog_name="tauproxy")
        except SystemExit as exc:
            assert not exc.code, (path, exc.code)

stages = {"import": loaded()}
show_help()
stages["root help"] = loaded()
paths = []

def walk(command, path):
    paths.append(path)
    for name in list(getattr(command, "commands", None) or {}):
        walk(command.commands[name], (*path, name))

walk(typer.main.get_command(app), ())
for path in paths:
    show_help(*path)
stages["every command's help"] = loaded()
stages["commands"] = len(paths)
print(json.dumps(stages))
"""


def test_the_cli_and_every_commands_help_import_nothing_heavy() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY)], capture_output=True, text=True, check=True, timeout=120
    )
    stages = json.loads(done.stdout)
    assert stages.pop("commands") >= 20, done.stdout  # the walk reached the subcommands
    assert stages == {"import": [], "root help": [], "every command's help": []}, done.stdout


def _groups() -> list[tuple[tuple[str, ...], Any]]:
    found: list[tuple[tuple[str, ...], Any]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        if isinstance(command, LazyGroup):
            found.append((path, command))
        for name in list(getattr(command, "commands", None) or {}):
            walk(command.commands[name], (*path, name))

    walk(typer.main.get_command(app), ())
    return found


def _first_paragraph(command: Any) -> str:
    return " ".join(inspect.cleandoc(command.short_help or command.help or "").split("\n\n")[0].split())


def test_each_table_line_is_the_first_paragraph_of_its_commands_help() -> None:
    groups = _groups()
    assert {path for path, _ in groups} == {(), ("cassette",)}
    for path, group in groups:
        for name, line in group.table.items():
            assert isinstance(line, LazyCommand)
            assert line.summary == _first_paragraph(group.commands[name]), (path, name)


def test_help_lists_every_command_in_table_order() -> None:
    shown = invoke_cli("--help", env={"COLUMNS": "200"}).stdout
    panel = shown.split("─ Commands ", 1)[1].splitlines()[1:]
    listed = [line.split()[1] for line in panel if line.startswith("│ ") and line[2] != " "]  # not a wrapped line
    assert listed == list(typer.main.get_command(app).commands), shown  # type: ignore[attr-defined]


def test_a_mistyped_command_is_refused_with_the_closest_names() -> None:
    refused = invoke_cli("cassete", "ls", check=False)
    assert refused.returncode == 2
    assert "No such command 'cassete'" in refused.stderr and "'cassette'" in refused.stderr


def test_shell_completion_offers_the_commands_and_options_of_loaded_ones() -> None:
    def complete(words: str) -> list[str]:
        env = {"_TAUPROXY_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split(" ")) - 1)}
        done = CliRunner().invoke(app, [], prog_name="tauproxy", env=env)
        return done.stdout.split()

    assert complete("tauproxy cas") == ["cassette"]
    assert set(complete("tauproxy ca")) == {"cassette", "cache"}
    assert {"ls", "replay-check", "import"} <= set(complete("tauproxy cassette "))
    assert complete("tauproxy run --num-t") == ["--num-trials", "--num-tasks"]


def test_the_help_renderers_stand_ins_make_the_real_classes() -> None:
    import rich.markdown
    import rich.traceback
    import typer.rich_utils

    assert isinstance(typer.rich_utils.Markdown("*x*"), rich.markdown.Markdown)
    assert typer.rich_utils.Traceback.from_exception == rich.traceback.Traceback.from_exception
    assert not hasattr(rich.markdown, "_module")  # the real module, not a stand-in, for everyone else
