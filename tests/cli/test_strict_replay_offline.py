"""Strict replay is offline, always: `--record-mode replay` (vcrpy's `none`) and `once` (which
replays strictly once its cassette holds calls) with no cassette are one line naming the flag to
add, exit 2, before any trial runs; a cassette that does not exist is the same for strict replay.
`record` without a cassette is refused alike: it would pay for calls and record none of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import invoke_cli

RUN = ("run", "--domain", "mock", "--agent-llm", "scripted/oracle", "--user-llm", "scripted/user", "--num-tasks", "1")


@pytest.mark.parametrize("mode", ["replay", "none", "once", "record", "all"])
def test_strict_replay_without_a_cassette_is_one_line_and_exit_2(mode: str, tmp_path: Path) -> None:
    result = invoke_cli(*RUN, "--record-mode", mode, "--save-to", str(tmp_path / "run"), check=False)
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "add --cassette DIR" in line and "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists(), "nothing ran, nothing was written"
    assert "calls" not in result.stdout


def test_strict_replay_of_a_cassette_that_does_not_exist_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    result = invoke_cli(*RUN, "--record-mode", "replay", "--cassette", str(missing), check=False)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert f"no cassette at {missing}" in line
    assert not missing.exists(), "strict replay creates nothing"


def test_once_over_a_cassette_that_does_not_exist_records_it(tmp_path: Path) -> None:
    cassette = tmp_path / "new"
    first = invoke_cli(*RUN, "--record-mode", "once", "--cassette", str(cassette))
    assert "0 replayed" in first.stdout and (cassette / "calls.jsonl").stat().st_size > 0
    again = invoke_cli(*RUN, "--record-mode", "once", "--cassette", str(cassette))
    assert "calls 0 live /" in again.stdout
