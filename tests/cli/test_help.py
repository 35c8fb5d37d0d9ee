"""`--help` reads as help should (cli/help_style.py), and a report in a pipe keeps its numbers whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from conftest import invoke_cli

from tauproxy_cli.main import app
from tauproxy_cli.output import PIPE_WIDTH, console_width


def commands() -> list[tuple[str, ...]]:
    """Every command path of the CLI, groups included: ("",), ("run",), ("cassette", "ls"), ..."""
    found: list[tuple[str, ...]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        found.append(path)
        for name, sub in (getattr(command, "commands", None) or {}).items():  # a group (typer vendors click)
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


@pytest.mark.parametrize("path", commands(), ids=lambda p: " ".join(p) or "tauproxy")
def test_help_shows_no_placeholder_and_a_plain_usage_line(path: tuple[str, ...]) -> None:
    shown = invoke_cli(*path, "--help").stdout
    usage = next(line for line in shown.splitlines() if "Usage:" in line)
    assert "{" not in usage and "}" not in usage, usage
    assert "<bool>" not in shown, shown
    assert "epilog" not in shown


def command_at(path: tuple[str, ...]) -> Any:
    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


PROSE = [
    (path, paragraph)
    for path in commands()
    for paragraph in (command_at(path).help or "").split("\n\n")[1:]
    if "\n" in paragraph.strip() and not paragraph.startswith("\b")
]


@pytest.mark.parametrize(("path", "paragraph"), PROSE, ids=[" ".join(path) for path, _ in PROSE])
def test_help_prose_is_rewrapped_not_cut_at_the_docstrings_line_breaks(path: tuple[str, ...], paragraph: str) -> None:
    shown = invoke_cli(*path, "--help", env={"COLUMNS": "400"}).stdout
    words = " ".join(paragraph.split())
    assert any(words in " ".join(line.split()) for line in shown.splitlines()), shown


def test_some_help_has_prose_after_its_first_paragraph() -> None:
    assert len(PROSE) >= 3  # the test above checks something: cassette compact, domains check, submit prepare


def test_list_arguments_read_as_names_in_the_usage_line() -> None:
    assert "Usage: tauproxy report [OPTIONS] RUNS..." in invoke_cli("report", "--help").stdout
    assert "Usage: tauproxy domains check [OPTIONS] [NAMES]..." in invoke_cli("domains", "check", "--help").stdout


def test_a_pipe_without_columns_is_wide_and_columns_wins() -> None:
    assert console_width(None, is_terminal=False) == PIPE_WIDTH
    assert console_width(None, is_terminal=True) is None  # rich asks the terminal
    assert console_width("100", is_terminal=True) == console_width("100", is_terminal=False) == 100


def test_a_full_report_cuts_no_cell_in_a_narrow_terminal_or_a_pipe(tmp_path: Path) -> None:
    run = tmp_path / "run"
    invoke_cli(
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "scripted/oracle?error_rate=0.3",
        "--num-trials",
        "3",
        "--save-to",
        str(run),
    )
    narrow = invoke_cli("report", str(run), "--full", env={"COLUMNS": "80"}).stdout
    piped = invoke_cli("report", str(run), "--full").stdout
    # 80 columns used to cut the cost and model tables' cells ("$4.90…"); now a cell wraps instead.
    assert "…" not in narrow and "…" not in piped


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("run", "--num-tasks", "-1"), "Invalid value for '--num-tasks'"),
        (("run", "--no-such-flag"), "No such option: --no-such-flag"),
        (("cassete",), "No such command 'cassete'"),
        (("report",), "Missing argument 'runs'"),
        (("diff", "--side-by-side", "x"), "No such option: --side-by-side"),
        (("diff", "a", "b", "c"), "Got unexpected extra argument(s) (c)"),
    ],
    ids=[
        "out-of-range",
        "unknown-flag",
        "unknown-command",
        "missing-argument",
        "nested-unknown-flag",
        "extra-argument",
    ],
)
def test_a_usage_error_is_one_line_naming_the_help(argv: tuple[str, ...], message: str) -> None:
    refused = invoke_cli(*argv, check=False)
    assert refused.returncode == 2, refused
    lines = refused.stderr.splitlines()
    assert len(lines) == 1, refused.stderr
    assert lines[0].startswith(f"error: {message}"), lines[0]
    command = " ".join(["tauproxy", *argv[:1]]) if argv[0] != "cassete" else "tauproxy"
    assert lines[0].endswith(f"see {command} --help)"), lines[0]
    # An argument missing or extra is named as click names it ("runs"); the usage line beside it says which.
    usage = {("report",): "tauproxy report [OPTIONS] RUNS...", ("diff", "a", "b", "c"): "tauproxy diff [OPTIONS] A B"}
    assert ("(usage: " in lines[0]) == (argv in usage), lines[0]
    assert argv not in usage or f"(usage: {usage[argv]}; see" in lines[0], lines[0]
    assert refused.stdout == ""
