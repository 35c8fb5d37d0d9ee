"""The README and docs/ show only commands that exist and links that resolve.

Every shell line in a fenced code block (and every inline code span that starts with `tauproxy `) that
invokes `tauproxy` is checked against the typer app in-process: the subcommand path must exist and
every `--flag` shown must be an option of that command. Every relative markdown link must name an
existing file, and an anchor a heading of it. The layer table of docs/architecture.md must name the
packages of tests/test_layers.py's LAYERS, in order. Nothing is run: a doc that shows a renamed or
made-up flag fails here instead of on a reader's machine.
"""

from __future__ import annotations

import ast
import functools
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main

from tauproxy_cli.main import app

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_LANGUAGES = {"", "bash", "sh", "shell", "console"}
# shlex's punctuation: a token made only of these (`|`, `&&`, `>`, `;`, ...) ends a command's arguments.
SHELL_PUNCTUATION = set("();<>|&")
PLACEHOLDER = re.compile(r"<[A-Za-z][\w-]*>")  # `runs/<first-bad-short-sha>` in a path
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
INLINE_CODE = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Block:
    language: str
    first_line: int
    text: str


def _split_fences(markdown: str) -> tuple[list[Block], str]:
    """The fenced code blocks, and the prose with the blocks blanked out (line numbers kept)."""
    blocks: list[Block] = []
    prose: list[str] = []
    fence: str | None = None
    language = ""
    start = 0
    body: list[str] = []
    for number, line in enumerate(markdown.splitlines(), start=1):
        match = FENCE.match(line)
        if fence is None and match:
            fence, language, start, body = match.group(2), match.group(3).lower(), number + 1, []
            prose.append("")
        elif fence is not None and line.strip().startswith(fence) and not line.strip().strip(fence[0]):
            blocks.append(Block(language, start, "\n".join(body)))
            fence = None
            prose.append("")
        elif fence is not None:
            body.append(line)
            prose.append("")
        else:
            prose.append(line)
    return blocks, "\n".join(prose)


def _shell_lines(text: str) -> list[tuple[int, str]]:
    """Logical lines with the offset of their first line: backslash continuations joined."""
    lines: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for offset, line in enumerate(text.splitlines()):
        start, joined = pending if pending is not None else (offset, "")
        if line.endswith("\\"):
            pending = (start, joined + line[:-1] + " ")
        else:
            pending = None
            lines.append((start, joined + line))
    if pending is not None:
        lines.append(pending)
    return lines


def _words(line: str) -> list[str]:
    lexer = shlex.shlex(PLACEHOLDER.sub("PLACEHOLDER", line), posix=True, punctuation_chars=True)
    lexer.commenters = "#"
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: not a command line
        return []


def _is_tauproxy(word: str) -> bool:
    return word == "tauproxy" or word.endswith("/tauproxy")


def tauproxy_invocations(line: str) -> list[list[str]]:
    """The arguments of every `tauproxy` (or `.venv/bin/tauproxy`) command on one shell line."""
    words = _words(line)
    found: list[list[str]] = []
    for index, word in enumerate(words):
        if not _is_tauproxy(word):
            continue
        arguments: list[str] = []
        for argument in words[index + 1 :]:
            if argument and set(argument) <= SHELL_PUNCTUATION:
                break
            arguments.append(argument)
        found.append(arguments)
    return found


def _options(command: Any) -> set[str]:
    names = {"--help"}
    for parameter in command.params:
        names.update(o for o in [*parameter.opts, *parameter.secondary_opts] if o.startswith("-"))
    return names


@functools.cache
def _root_command() -> Any:
    """The click command typer builds from the app (building it takes a while, so once)."""
    return typer.main.get_command(app)


def check_invocation(arguments: list[str]) -> list[str]:
    """What is wrong with `tauproxy ARGUMENTS`: unknown subcommands and options (empty when fine)."""
    command = _root_command()
    path = ["tauproxy"]
    problems: list[str] = []
    for argument in arguments:
        if argument == "...":
            continue
        option = argument.strip("[]").split("=", 1)[0]
        if option.startswith("-"):
            if option not in _options(command):
                problems.append(f"`{' '.join(path)}` has no option {option}")
            continue
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            continue  # a positional argument or an option's value
        if argument.isupper():
            return problems  # `tauproxy COMMAND --help`: a placeholder for any command
        if argument not in subcommands:
            problems.append(f"`{' '.join(path)}` has no command {argument!r}")
            return problems
        command = subcommands[argument]
        path.append(argument)
    return problems


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    _, prose = _split_fences(path.read_text(encoding="utf-8"))
    return {_slug(line.lstrip("#")) for line in prose.splitlines() if re.match(r"#{1,6} ", line)}


def _commands_shown(path: Path) -> list[tuple[int, str]]:
    blocks, prose = _split_fences(path.read_text(encoding="utf-8"))
    shown: list[tuple[int, str]] = []
    for block in blocks:
        if block.language not in SHELL_LANGUAGES:
            continue
        for offset, line in _shell_lines(block.text):
            shown.append((block.first_line + offset, line))
    for number, line in enumerate(prose.splitlines(), start=1):
        shown.extend((number, span) for span in INLINE_CODE.findall(line) if span.startswith("tauproxy "))
    return shown


def link_problems(path: Path, root: Path = ROOT) -> list[str]:
    _, prose = _split_fences(path.read_text(encoding="utf-8"))
    problems: list[str] = []
    for number, line in enumerate(prose.splitlines(), start=1):
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(root)}:{number}"
            if not linked.exists():
                problems.append(f"{where}: {target} does not exist")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                problems.append(f"{where}: {target}: no heading with anchor #{anchor}")
    return problems


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_tauproxy_command_shown_exists(path: Path) -> None:
    problems = [
        f"{path.relative_to(ROOT)}:{number}: {problem}"
        for number, line in _commands_shown(path)
        for arguments in tauproxy_invocations(line)
        for problem in check_invocation(arguments)
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert not link_problems(path), "\n".join(link_problems(path))


def test_the_docs_show_commands_at_all() -> None:
    """Guards the parser: if it stopped finding commands, the check above would pass on nothing."""
    invocations = [args for path in DOCS for _, line in _commands_shown(path) for args in tauproxy_invocations(line)]
    assert len(invocations) > 50
    assert ["check", "runs/new", "--baseline", "runs/base", "--max-drop", "0.05"] in invocations


def test_the_checker_catches_a_made_up_flag_or_command() -> None:
    assert check_invocation(["run", "--domain", "mock", "--num-trials", "4"]) == []
    assert check_invocation(["cassette", "verify", "cassettes/mine", "--json"]) == []
    assert check_invocation(["run", "--domain", "mock", "--made-up-flag", "1"]) == [
        "`tauproxy run` has no option --made-up-flag"
    ]
    assert check_invocation(["check", "runs/new", "--history", "runs/base"]) == [
        "`tauproxy check` has no option --history"
    ]
    assert check_invocation(["cassette", "rewind", "cassettes/mine"]) == ["`tauproxy cassette` has no command 'rewind'"]
    assert check_invocation(["frobnicate"]) == ["`tauproxy` has no command 'frobnicate'"]


def test_the_checker_reads_shell_lines_as_a_shell_does() -> None:
    line = (
        ".venv/bin/tauproxy run --domain airline --agent-llm 'scripted/oracle?error_rate=0.2' > out.txt"
        " && tauproxy report runs/base --json  # --nothing"
    )
    assert tauproxy_invocations(line) == [
        ["run", "--domain", "airline", "--agent-llm", "scripted/oracle?error_rate=0.2"],
        ["report", "runs/base", "--json"],
    ]
    blocks, _ = _split_fences("text\n```bash\ntauproxy run \\\n  --made-up\n```\n")
    assert [check_invocation(a) for _, line in _shell_lines(blocks[0].text) for a in tauproxy_invocations(line)] == [
        ["`tauproxy run` has no option --made-up"]
    ]


def test_the_link_checker_catches_a_missing_file_and_anchor(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## A `tauproxy run` section\n", encoding="utf-8")
    page.write_text(
        "[ok](other.md#a-tauproxy-run-section) [web](https://example.org/x) [here](#top)\n"
        "[gone](missing.md) [bad anchor](other.md#nope)\n\n# Top\n\n```\n[not a link](inside-code.md)\n```\n",
        encoding="utf-8",
    )
    assert link_problems(page, root=tmp_path) == [
        "page.md:2: missing.md does not exist",
        "page.md:2: other.md#nope: no heading with anchor #nope",
    ]


def _layers_of_test_layers() -> list[tuple[str, ...]]:
    tree = ast.parse((ROOT / "tests" / "test_layers.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == "LAYERS" for t in targets) and node.value is not None:
                return [tuple(layer) for layer in ast.literal_eval(node.value)]
    raise AssertionError("tests/test_layers.py has no LAYERS list")


def test_the_architecture_layer_table_matches_the_enforced_layers() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", text, flags=re.MULTILINE)
    documented = [tuple(re.findall(r"`([\w.]+)`", packages)) for _, packages in rows]
    assert [int(number) for number, _ in rows] == list(range(len(rows)))
    assert documented == _layers_of_test_layers()


def test_the_readme_test_command_is_what_ci_runs() -> None:
    """The README promises its test line is exactly `.ci/run`'s: CI must run what a new user runs."""
    ci_lines = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines() if "pytest -q" in line]
    blocks, _ = _split_fences((ROOT / "README.md").read_text(encoding="utf-8"))
    shown = [line for block in blocks for line in block.text.splitlines() if "pytest -q" in line]
    assert len(ci_lines) == 1 and shown == ci_lines
