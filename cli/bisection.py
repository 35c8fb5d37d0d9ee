"""`tauproxy bisect --configs v1.toml ... vN.toml`: find the first agent config whose score drops.

Takes every `run` flag (domain, trials, cassette, user model, ...), applied to each step's run.
The configs can be listed after one `--configs` (`--configs v1.toml v2.toml v3.toml`: click reads
the first as the option's value and the rest as arguments, so they keep their order) or given with
a repeated option (`--configs v1.toml --configs v2.toml`). The two forms cannot be mixed, because
click does not record how repeated options and arguments interleave.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tauproxy_cli.flag import flag
from tauproxy_cli.run_flags import RunFlags
from tauproxy_cli.run_options import with_run_options_except

if TYPE_CHECKING:
    from tauproxy.workflows.bisect import BisectStep


def ordered_configs(option: list[Path], rest: list[Path]) -> list[Path]:
    from tauproxy.errors import ConfigError

    if len(option) > 1 and rest:
        raise ConfigError(
            "give the configs either after one --configs (space-separated) or each with its own "
            "--configs, not both: their order would be ambiguous"
        )
    return [*option, *rest]


# bisect takes its agents from --configs, saves one run per config under --runs-dir, and judges each
# config against the first: the run options for those are not its own.
NOT_FOR_BISECT = frozenset({"agent_config", "save_to", "against", "until_decided", "confidence", "undecided", "full"})


@with_run_options_except(NOT_FOR_BISECT)
def bisect_command(
    flags: RunFlags,
    configs: Annotated[
        list[Path] | None,
        typer.Option("--configs", metavar="CONFIG", help="Agent config files, oldest (known good) first."),
    ] = None,
    more_configs: Annotated[
        list[Path] | None,
        typer.Argument(metavar="CONFIG", help="More configs, when listed after --configs.", show_default=False),
    ] = None,
    metric: Annotated[str, typer.Option("--metric", help="pass^1 | pass^k | avg_reward.")] = "pass^1",
    runs_dir: Annotated[
        Path | None, typer.Option("--runs-dir", help="Save each step's run here, named after its config file's stem.")
    ] = None,
    json_output: Annotated[bool, flag("--json", help="Print the search as JSON.")] = False,
) -> None:
    """Binary-search agent configs for the first that scores more than --max-drop below the first."""
    from dataclasses import replace

    from tauproxy.runner.config import RunConfig
    from tauproxy.workflows.bisect import bisect_configs
    from tauproxy_cli.output import err_console, out_console, print_json, warn
    from tauproxy_cli.run_setup import build_run_config

    paths = ordered_configs(configs or [], more_configs or [])

    def make_config(path: Path, save_to: Path | None) -> RunConfig:
        return build_run_config(replace(flags, agent_config=path, save_to=save_to))

    for path in paths:
        make_config(path, None)  # a bad file, model option or llm arg fails before any step spends money

    # With --json, stdout carries only the JSON; the steps go to stderr as they finish.
    console = err_console if json_output else out_console

    def show(step: BisectStep) -> None:
        console.print(step_line(step), soft_wrap=True, markup=False)
        for message in step.warnings:
            warn(message)

    result = bisect_configs(paths, make_config, metric, flags.max_drop, runs_dir, show)
    if json_output:
        print_json(result.model_dump(mode="json"))
    else:
        out_console.print(result.message, soft_wrap=True, markup=False)


def step_line(step: BisectStep) -> str:
    from tauproxy_cli.report_view import money

    score = "-" if step.score is None else f"{step.score:.3f}"
    cost = step.cost
    resumed = f", {step.resumed_trials} trials resumed" if step.resumed_trials else ""
    live = money(cost.live_usd, cost.live_unknown_price_calls)
    saved = money(cost.saved_usd, cost.saved_unknown_price_calls)
    return (
        f"[{step.position}] {Path(step.config).name}: score {score} -> {step.verdict.value.upper()}; "
        f"live {live} ({cost.live_calls} calls), saved by replay {saved} ({cost.replayed_calls} calls), "
        f"{cost.shared_calls} calls shared"
        f"{resumed}  [{step.reason}]"
    )
