"""`run --until-decided`: usage errors are one line (exit 2) before anything runs; the verdict's exit code
is check's."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import invoke_cli

from tauproxy.errors import ConfigError
from tauproxy_cli.run_flags import RunFlags
from tauproxy_cli.run_setup import build_run_config, run_until_decided

ORACLE = ["--domain", "mock", "--agent-llm", "scripted/oracle"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--until-decided"], "--until-decided needs --against BASE and --max-cost USD"),
        (["--until-decided", "--max-cost", "1"], "--until-decided needs --against BASE:"),
        (["--against", "."], "--against judges the run only with --until-decided"),
        (["--until-decided", "--max-cost", "1", "--against", "nowhere"], "--against nowhere: no such file"),
        (["--until-decided", "--max-cost", "1", "--against", ".", "--confidence", "1.5"], "--confidence 1.5"),
        (["--until-decided", "--max-cost", "1", "--against", ".", "--undecided", "maybe"], "--undecided must be"),
    ],
)
def test_usage_errors_are_one_line_before_any_trial(tmp_path: Path, extra: list[str], message: str) -> None:
    done = invoke_cli("run", *ORACLE, "--save-to", str(tmp_path / "run"), *extra, check=False, cwd=tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr
    assert not (tmp_path / "run").exists()


def flags(tmp_path: Path, agent: str, **changes: object) -> RunFlags:
    return replace(
        RunFlags(
            domain="mock",
            agent_llm=agent,
            num_trials=2,
            cassette=tmp_path / "cassette",
            save_to=tmp_path / agent.replace("/", "-"),
        ),
        **changes,
    )  # type: ignore[arg-type]


def test_the_exit_code_is_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tauproxy.runner.run import execute

    base = flags(tmp_path, "scripted/oracle")
    execute(build_run_config(base))
    decide = {"against": base.save_to, "until_decided": True, "max_cost": 1.0}
    silent = flags(tmp_path, "scripted/silent", **decide)
    assert run_until_decided(build_run_config(silent), silent, json_output=True) == 1
    shown = json.loads(capsys.readouterr().out)
    assert shown["final"]["verdict"] == "bad" and shown["exit_code"] == 1 and len(shown["rounds"]) == 1
    same = flags(tmp_path, "scripted/oracle", **decide, save_to=tmp_path / "again")
    assert run_until_decided(build_run_config(same), same) == 0
    out = capsys.readouterr().out
    assert out.startswith("good: pass^1") and "1 of 5 looks at 95% overall" in out


def test_until_decided_needs_against_and_a_budget_in_the_library_flags_too() -> None:
    with pytest.raises(ConfigError, match="--max-cost USD"):
        build_run_config(RunFlags(agent_llm="scripted/oracle", until_decided=True, against=Path(".")))
