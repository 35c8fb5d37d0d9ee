"""Every path, number and text argument of every subcommand, given a bad value: binary, non-UTF-8 and
empty files, empty and huge names, empty, negative and huge numbers, empty, huge, deeply nested and
non-UTF-8 text. Each is refused with one line and exit 2 (typer's usage errors too: cli/help_style.py),
or is a success listed in ACCEPTED with why; never a traceback, never another exit code.

The table is built from the commands themselves: a new argument gets its bad values without a new
line here, and `test_every_argument_is_probed` fails if a command's argument has no probe. `estimate`
and `bisect` take `run`'s flags through the same RunFlags and build_run_config, so those flags are
probed once, on `run`; their own arguments are probed on them.
"""

from __future__ import annotations

import functools
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli

from tauproxy_cli.run_flags import run_options

RUN_FLAGS = {f"--{o.name.replace('_', '-')}" for o in run_options()}

# Files given where a path is expected, made once in the shared directory.
BAD_FILES: dict[str, bytes] = {
    "binary": bytes(range(256)) * 4,
    "non-utf8": "café crème\nmodel = 'x'\n".encode("latin-1"),
    "empty": b"",
}
BAD_PATHS: dict[str, str] = {
    **{name: f"bad-{name}.bin" for name in BAD_FILES},
    "empty-name": "",
    "huge-name": "a" * 5000,
}
BAD_NUMBERS: dict[str, str] = {"empty": "", "negative": "-1", "huge": "9" * 400}
BAD_TEXTS: dict[str, str] = {
    "empty": "",
    "huge": "x" * 100_000,
    "nested": "[" * 5000,
    "non-utf8": "caf\udce9",  # how Python hands on a non-UTF-8 byte of argv (surrogateescape)
}
KINDS: dict[str, dict[str, str]] = {"path": BAD_PATHS, "number": BAD_NUMBERS, "text": BAD_TEXTS}

RUN = ("run", "--agent-llm", "scripted/oracle", "--num-tasks", "1")
# Each command with valid values for its positional arguments, by parameter name, and the options it
# needs to do anything at all. A probed argument replaces its value here.
BASES: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "run": (RUN, {}),
    "estimate": (("estimate", "--agent-llm", "scripted/oracle", "--num-tasks", "1"), {}),
    "bisect": (("bisect", "--num-tasks", "1", "--configs", "good.toml"), {"more_configs": "good.toml"}),
    "report": (("report",), {"runs": "okrun"}),
    "view": (("view",), {"run": "okrun"}),
    "demo": (("demo",), {}),
    "diff": (("diff",), {"a": "okrun", "b": "okrun"}),
    "check": (("check", "--baseline", "okrun"), {"run": "okrun"}),
    "serve": (("serve", "--cassette", "okcassette", "--record-mode", "replay", "--port", "0"), {}),
    "domains list": (("domains", "list"), {}),
    "domains show": (("domains", "show"), {"name": "mock"}),
    "domains check": (("domains", "check"), {"names": "mock"}),
    "cassette ls": (("cassette", "ls"), {"directory": "okcassette"}),
    "cassette show": (("cassette", "show"), {"directory": "okcassette", "ref": "0"}),
    "cassette stats": (("cassette", "stats"), {"directory": "okcassette"}),
    "cassette verify": (("cassette", "verify"), {"directory": "okcassette"}),
    "cassette merge": (("cassette", "merge"), {"target": "merged", "sources": "okcassette"}),
    "cassette prune": (("cassette", "prune"), {"directory": "okcassette", "more_runs": "okrun"}),
    "cassette compact": (("cassette", "compact"), {"directory": "okcassette"}),
    "cassette replay-check": (("cassette", "replay-check"), {"cassettes": "okcassette"}),
    "cassette rerecord": (("cassette", "rerecord"), {"cassette": "okcassette"}),
    "cassette import": (("cassette", "import", "--into", "imported"), {"files": "ok.yaml"}),
    "tasks generate": (("tasks", "generate", "--domain", "mock", "--n", "1"), {}),
    "submit prepare": (
        ("submit", "prepare", "--out", "submission", "--organization", "Lab", "--email", "a@b.c"),
        {"runs": "okrun"},
    ),
}

# The exit code of a refusal: 2, except for `check`, whose input errors are 125 ("cannot test") so that
# `git bisect run` skips the commit instead of calling it bad (cli/check.py).
REFUSED = {"check": 125}
EMPTY_IS_HERE = "an empty path is the current directory, as for any program"
# Successes, each with the exit codes it may end with and why it is one. Key: (command, argument, value).
ACCEPTED: dict[tuple[str, str, str], tuple[frozenset[int], str]] = {
    **{
        ("run", flag, "empty"): (frozenset({0}), "empty llm args are no llm args")
        for flag in ("--agent-llm-args", "--user-llm-args", "--judge-llm-args")
    },
    ("run", "--num-tasks", "huge"): (frozenset({0}), "more tasks than the domain has: every task"),
    ("run", "--seed", "negative"): (frozenset({0}), "any integer is a seed"),
    ("run", "--seed", "huge"): (frozenset({0}), "any integer is a seed"),
    # check's verdicts on a run against itself: good (0), or undecided (125) when the few tasks of these
    # probes cannot rule the margin out.
    ("check", "--seed", "huge"): (frozenset({0, 125}), "any non-negative integer seeds the bootstrap"),
    **{
        ("run", flag, "huge"): (frozenset({0}), "a cap has no upper bound; a huge one is never reached")
        for flag in ("--max-steps", "--max-errors", "--max-infra-errors")
    },
    ("diff", "--limit", "huge"): (frozenset({0}), "a cap has no upper bound; a huge one is never reached"),
    ("run", "--max-drop", "negative"): (frozenset({0}), "a margin that demands an improvement (--until-decided)"),
    ("check", "--max-drop", "negative"): (
        frozenset({1, 125}),
        "a margin that demands an improvement: bad, or undecided on few tasks",
    ),
    **{("run", flag, "empty-name"): (frozenset({0}), EMPTY_IS_HERE) for flag in ("--save-to", "--cassette")},
    # On its one task bisect may end "cannot tell yet" (one line, exit 2), which is a verdict, not a refusal.
    ("bisect", "--runs-dir", "empty-name"): (frozenset({0, 2}), EMPTY_IS_HERE),
    **{
        (command, "--html", name): (frozenset({0}), "an output file is written over, as any output flag does")
        for command in ("report", "view")
        for name in BAD_FILES
    },
    **{
        (command, "--run-log", "empty"): (frozenset({0}), "an empty run log joins no call")
        for command in ("report", "view")
    },
    **{
        ("serve", "--run-log", name): (frozenset({0}), "serve appends its lines; a reader skips lines of no run log")
        for name in BAD_FILES
    },
    **{
        ("serve", "--auth-token", name): (frozenset({0}), "any printable ASCII is a token")
        for name in ("huge", "nested")
    },
    ("serve", "--max-body-bytes", "huge"): (frozenset({0}), "a cap has no upper bound; a huge one is never reached"),
    ("cassette merge", "target", "empty-name"): (frozenset({0}), EMPTY_IS_HERE),
    ("cassette import", "--into", "empty-name"): (frozenset({0}), EMPTY_IS_HERE),
}


@dataclass(frozen=True)
class Probe:
    command: str
    argument: str  # an option ("--seed") or a positional parameter's name ("directory")
    kind: str  # path, number or text
    value_name: str

    @property
    def id(self) -> str:
        return f"{self.command} {self.argument} {self.value_name}"

    @property
    def value(self) -> str:
        return KINDS[self.kind][self.value_name]

    def argv(self) -> tuple[str, ...]:
        base, positionals = BASES[self.command]
        args = list(base)
        if self.argument.startswith("-"):
            if self.argument in args:
                index = args.index(self.argument)
                args[index + 1] = self.value
            else:
                args += [self.argument, self.value]
        values = {**positionals}
        if not self.argument.startswith("-"):
            values[self.argument] = self.value
        return (*args, *(value for name, value in values.items()))


@dataclass(frozen=True)
class Argument:
    command: str
    name: str  # the option as typed, or a positional parameter's name
    kind: str | None  # None: not a path, number or text (a flag, a choice of a fixed set)
    positional: bool


def _kind(annotation: Any) -> str | None:
    if typing.get_origin(annotation) is list:
        (annotation,) = typing.get_args(annotation)
    if annotation is Path:
        return "path"
    if annotation in (int, float):
        return "number"
    if annotation is str:
        return "text"
    return None


@functools.cache
def arguments() -> list[Argument]:
    import typer

    from tauproxy_cli.main import app

    found: list[Argument] = []

    def walk(command: Any, path: list[str]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands is not None:
            for name, sub in subcommands.items():
                walk(sub, [*path, name])
            return
        for param in command.params:
            if getattr(param, "is_flag", False) or param.name == "help":
                continue
            positional = not any(o.startswith("-") for o in param.opts)
            name = str(param.name) if positional else max(param.opts, key=len)
            found.append(Argument(" ".join(path), name, _kind(param.type_descriptor.annotation), positional))

    walk(typer.main.get_command(app), [])
    return found


def probes() -> list[Probe]:
    return [
        Probe(a.command, a.name, a.kind, value_name)
        for a in arguments()
        if a.kind is not None
        and a.command in BASES
        and not (a.command in ("estimate", "bisect") and a.name in RUN_FLAGS)
        for value_name in KINDS[a.kind]
    ]


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stderr: str


class _NoServer:
    """Stands in for uvicorn: a serve that got this far would serve; it returns instead of blocking."""

    def run(self, sockets: Any = None) -> None:
        return None


def _fresh_dir(root: Path, shared: Path, index: int) -> Path:
    """A directory of its own for one probe: new bad files (an output flag may have written over the
    last ones), the shared good run and cassette linked in."""
    directory = root / f"p{index}"
    directory.mkdir()
    for name, data in BAD_FILES.items():
        (directory / f"bad-{name}.bin").write_bytes(data)
    for name in ("okrun", "okcassette", "good.toml", "ok.yaml"):
        (directory / name).symlink_to(shared / name)
    return directory


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    shared = tmp_path_factory.mktemp("shared")
    (shared / "good.toml").write_text('model = "scripted/oracle"\n')
    (shared / "ok.yaml").write_text("interactions: []\nversion: 1\n")  # a vcrpy cassette with no calls
    invoke_cli(*RUN, "--save-to", "okrun", "--cassette", "okcassette", "--record-mode", "record", cwd=shared)
    root = tmp_path_factory.mktemp("probes")
    found: dict[str, Outcome] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("tauproxy.serve.server.make_server", lambda *args, **kwargs: _NoServer())
        for index, probe in enumerate(probes()):
            cwd = _fresh_dir(root, shared, index)
            proc = invoke_cli(*probe.argv(), env={"COLUMNS": "100"}, cwd=cwd, check=False)
            found[probe.id] = Outcome(proc.returncode, proc.stderr)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("probe", probes(), ids=lambda p: p.id)
def test_a_bad_argument_is_one_line_or_a_listed_success(probe: Probe, outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[probe.id]
    typed = " ".join(a[:60] for a in probe.argv())
    shown = f"tauproxy {typed}\nexit {outcome.returncode}\nstderr:\n{outcome.stderr[-2000:]}"
    assert "Traceback" not in outcome.stderr, shown
    accepted = ACCEPTED.get((probe.command, probe.argument, probe.value_name))
    if accepted is not None:
        codes, why = accepted
        assert outcome.returncode in codes, f"listed as a success ({why})\n{shown}"
        return
    # typer's own usage error (a value of the wrong type) exits 2 everywhere, `check` too (cli/check.py).
    usage_error = outcome.stderr.rstrip().endswith(f"(see tauproxy {probe.command} --help)")
    assert outcome.returncode == (2 if usage_error else REFUSED.get(probe.command, 2)), shown
    lines = outcome.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("error: ") and len(lines) <= 2, shown


def test_every_argument_is_probed() -> None:
    """Each path, number and text argument of each command has a base to probe it from."""
    kinds = {a.command for a in arguments() if a.kind is not None}
    assert kinds <= set(BASES), f"commands with no base invocation: {sorted(kinds - set(BASES))}"
    probed = {(p.command, p.argument) for p in probes()}
    for argument in arguments():
        if argument.kind is None:
            continue
        shared_run_flag = argument.command in ("estimate", "bisect") and argument.name in RUN_FLAGS
        assert shared_run_flag or (argument.command, argument.name) in probed, argument


def test_accepted_cases_are_probes() -> None:
    ids = {(p.command, p.argument, p.value_name) for p in probes()}
    assert set(ACCEPTED) <= ids, sorted(set(ACCEPTED) - ids)
