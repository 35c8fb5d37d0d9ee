"""`tauproxy demo`: the product in under a minute, offline, with no key and no extra.

1. Replay a shipped baseline cassette strictly: pass^k and cost (live $0, the recorded amount saved).
2. Change the agent's system prompt and run in auto mode against a copy of the cassette: only the
   changed calls go live.
3. Write the HTML report.
Each step prints the plain `tauproxy` command it runs, so the user learns the real CLI, and the demo
ends with the next commands to try on what it wrote. Its money is priced from a demo price file
(scripted models are free), and it says so.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from tauproxy.data_model.result import Results
    from tauproxy.reports.summary import ReportSummary

BASELINE_FLAGS: dict[str, Any] = {
    "domain": "airline",
    "agent_llm": "scripted/oracle?error_rate=0.2",
    "user_llm": "scripted/user",
    "num_tasks": 10,
    "num_trials": 4,
    "seed": 300,
}
CHANGED_PROMPT = "You are the airline's new support persona, Skye. Greet nobody twice; keep answers short."
# The changed agent: the new prompt, and (standing in for what a real prompt change does to a real model)
# more slips, so that some trials flip and the suggested diff, check and view have something to show.
CHANGED_AGENT = "scripted/oracle?error_rate=0.4"


def program() -> str:
    """How to type this program again: `tauproxy` when that is what the shell finds, else its path
    (the README's set-up line does not activate the venv, so a bare `tauproxy` is not found there)."""
    import sys

    invoked = Path(sys.argv[0])
    found = shutil.which("tauproxy")
    if invoked.name != "tauproxy" or not invoked.exists():
        return "tauproxy"  # not run as the console script (python -m, a test): the name is all we know
    if found is not None and Path(found).resolve() == invoked.resolve():
        return "tauproxy"
    try:
        return str(invoked.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(invoked.resolve())


def find_cassettes_dir() -> Path:
    from tauproxy.domain.pack import builtin_domains_dir
    from tauproxy.errors import ConfigError

    for candidate in (Path.cwd() / "cassettes", builtin_domains_dir().parent / "cassettes"):
        if (candidate / "baseline-airline" / "calls.jsonl").exists():
            return candidate
    raise ConfigError("shipped cassettes not found: run the demo from a tauproxy checkout (pip install -e .)")


def command_line(flags: dict[str, Any]) -> str:
    parts = [program(), "run"]
    for name, value in flags.items():
        if value is None or value is False:
            continue
        parts.append("--" + name.replace("_", "-"))
        if value is not True:
            parts.append(str(value))
    return shlex.join(parts)


def _run(flags: dict[str, Any]) -> tuple[ReportSummary, Results]:
    from tauproxy.reports.summary import summarize
    from tauproxy.runner.run import execute
    from tauproxy_cli.run_flags import RunFlags
    from tauproxy_cli.run_setup import build_run_config

    results = execute(build_run_config(RunFlags(**flags))).results
    return summarize(results), results


# Everything the demo writes into --out: a directory holding anything else is not an earlier demo's.
DEMO_OUTPUTS = frozenset({"baseline", "changed", "cassette", "agent-v2.toml", "report.html"})


def check_out_dir(out: Path) -> None:
    """The demo replaces an earlier demo's output; anything else at --out (the current directory, a file,
    a directory of one's own) is refused before a byte is removed."""
    from tauproxy.errors import ConfigError

    refuse = "; give a new directory (the demo replaces its --out)"
    if str(out) in ("", "."):
        raise ConfigError(f"--out {str(out)!r} is the current directory{refuse}")
    try:
        if out.is_file() or out.is_symlink():
            raise ConfigError(f"--out {out} is a file{refuse}")
        others = sorted(p.name for p in out.iterdir() if p.name not in DEMO_OUTPUTS) if out.is_dir() else []
    except OSError as exc:
        raise ConfigError(f"--out {out}: {exc.strerror or exc}") from None
    if others:
        raise ConfigError(f"--out {out} holds more than an earlier demo's output ({', '.join(others[:3])}){refuse}")


def demo_command(
    out: Annotated[Path, typer.Option(help="Where the demo writes its runs and report.")] = Path("tauproxy-demo"),
) -> None:
    """Replay a baseline, change the agent, see only the changed calls go live, get an HTML report."""
    from tauproxy_cli.output import out_console as console
    from tauproxy_cli.report_view import money

    cassettes = find_cassettes_dir()
    check_out_dir(out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    prices = cassettes / "demo-prices.json"
    baseline = {
        **BASELINE_FLAGS,
        "cassette": cassettes / "baseline-airline",
        "record_mode": "replay",
        "prices": prices,
        "save_to": out / "baseline",
    }
    console.rule("[bold]1/3  Replay the recorded baseline: strict, offline, free")
    console.print(f"$ {command_line(baseline)}", style="dim", soft_wrap=True)
    base_summary, _ = _run(baseline)
    cost = base_summary.cost
    console.print(f"{pass_line(base_summary)}   ({base_summary.num_tasks} tasks x {base_summary.num_trials} trials)")
    console.print(
        f"calls: {base_summary.calls.text()};  "
        f"live spend [bold]{money(cost.live_usd)}[/], saved {money(cost.replayed_usd)}"
    )
    console.print(priced_note(prices), style="dim", soft_wrap=True)

    console.rule("[bold]2/3  Change the agent: only the changed calls go live")
    working = out / "cassette"
    shutil.copytree(cassettes / "baseline-airline", working, ignore=shutil.ignore_patterns("*.lock"))
    agent_config = out / "agent-v2.toml"
    agent_config.write_text(f'model = "{CHANGED_AGENT}"\nsystem_prompt = "{CHANGED_PROMPT}"\n')
    changed = {
        **BASELINE_FLAGS,
        "agent_llm": None,
        "agent_config": agent_config,
        "cassette": working,
        "record_mode": "auto",
        "prices": prices,
        "save_to": out / "changed",
    }
    console.print(f"$ {command_line(changed)}", style="dim", soft_wrap=True)
    summary, results = _run(changed)
    console.print(f"changed   {pass_line(summary)}", soft_wrap=True)
    console.print(f"baseline  {pass_line(base_summary)}", soft_wrap=True)
    for role, row in summary.cost.by_role.items():
        console.print(
            f"  {role:<6} {row.live.calls:>4} live  {row.replayed.calls:>4} replayed  {row.shared.calls:>4} shared   "
            f"spent {money(row.live_usd)}  saved {money(row.replayed_usd)}"
        )
    console.print(
        "The agent's system prompt is in every agent request, so every agent call is new; the user "
        "simulator's calls replay wherever the conversation so far is the recorded one, and go live "
        "where the changed agent said something new."
    )
    console.print(priced_note(prices), style="dim", soft_wrap=True)

    console.rule("[bold]3/3  HTML report")
    html = out / "report.html"
    console.print(f"$ {program()} report {out / 'changed'} --html {html}", style="dim")
    _write_html(results, html)
    console.print(f"wrote [bold]{html.resolve()}[/]")

    console.rule("[bold]Next")
    for line in next_commands(out, html):
        console.print(line, soft_wrap=True, markup=False)


def pass_line(summary: ReportSummary) -> str:
    return "  ".join(f"pass^{k} {v:.3f}" for k, v in summary.pass_hat_k.items())


def priced_note(prices: Path) -> str:
    """Scripted models are free: the demo's money is what gpt-4.1 would have cost, from a price file."""
    return (
        f"Spend is priced from the demo price file {prices.name} (scripted models priced as gpt-4.1 "
        "and gpt-4.1-mini): nothing is paid, no key is used."
    )


def next_commands(out: Path, html: Path) -> list[str]:
    """What to try next on the demo's own runs, each with what it shows."""
    baseline, changed = out / "baseline", out / "changed"
    me = program()
    commands = [
        (f"{me} diff {baseline} {changed} --limit 5", "which trials flipped, and why"),
        (f"{me} check {changed} --baseline {baseline}", "good / bad / undecided, as an exit code"),
        (f"{me} view {changed}", "read the first failing trajectory"),
        (f"{me} report {changed} --full", "intervals, cost by role and task, the task grid"),
        (
            f"{me} run --domain airline --agent-llm openai/gpt-4.1 --cassette cassettes/mine --save-to runs/mine",
            "your own model (needs its key)",
        ),
    ]
    width = max(len(command) for command, _ in commands[:-1])
    lines = [f"  {command:<{width}}  # {what}" for command, what in commands[:-1]]
    command, what = commands[-1]
    lines += [
        f"  open {html.resolve()} in a browser: filter to failures, search the trajectories",
        f"  {command}  # {what}",
    ]
    return lines


def _write_html(results: Results, path: Path) -> None:
    from tauproxy.reports.html import render_html
    from tauproxy.reports.summary import summarize

    path.write_text(render_html(summarize(results), results), encoding="utf-8")
