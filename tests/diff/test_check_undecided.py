"""`tauproxy check` knows the noise: good, bad or undecided, and `--undecided` picks undecided's exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli
from paired_support import results_of

BASE = {"a": [1, 1, 0, 1], "b": [0, 1, 1, 0], "c": [1, 0, 1, 1], "d": [1, 1, 1, 0]}
NOISY = {"a": [1, 0, 0, 1], "b": [0, 1, 0, 0], "c": [1, 0, 1, 1], "d": [1, 1, 1, 0]}


def write(path: Path, rewards: dict[str, list[int]], **kwargs: Any) -> Path:
    path.mkdir(parents=True)
    data = {t: [float(v) for v in values] for t, values in rewards.items()}
    (path / "results.json").write_text(results_of(data, **kwargs).model_dump_json())
    return path


def check(run: Path, baseline: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    proc = invoke_cli("check", str(run), "--baseline", str(baseline), *extra, "--json", check=False)
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture()
def runs(tmp_path: Path) -> dict[str, Path]:
    return {
        "base": write(tmp_path / "base", BASE, cost=0.01),
        "noisy": write(tmp_path / "noisy", NOISY, agent="other", seed0=500, cost=0.01),
        "broken": write(tmp_path / "broken", {t: [0] * 4 for t in BASE}, agent="broken"),
    }


def test_undecided_defaults_to_skip_and_the_flag_sets_the_exit_code(runs: dict[str, Path]) -> None:
    code, numbers = check(runs["noisy"], runs["base"])
    assert numbers["verdict"] == "undecided" and code == 125 == numbers["exit_code"]
    low, high = numbers["drop_ci"]
    assert low < numbers["max_drop"] < high
    assert numbers["more_trials"]["trials_per_task"] >= 1 and numbers["more_trials"]["cost_usd"] > 0
    assert check(runs["noisy"], runs["base"], "--undecided", "good")[0] == 0
    assert check(runs["noisy"], runs["base"], "--undecided", "bad")[0] == 1
    assert check(runs["noisy"], runs["base"], "--undecided", "skip")[0] == 125
    assert check(runs["noisy"], runs["base"], "--undecided", "maybe")[0] == 125  # a usage error: cannot test


def test_undecided_never_changes_a_decided_verdict(runs: dict[str, Path]) -> None:
    for choice in ("good", "bad", "skip"):
        assert check(runs["broken"], runs["base"], "--undecided", choice)[0] == 1
        assert check(runs["base"], runs["base"], "--undecided", choice)[0] == 0


def test_confidence_widens_or_narrows_the_interval(runs: dict[str, Path]) -> None:
    _, wide = check(runs["noisy"], runs["base"], "--confidence", "0.99")
    _, narrow = check(runs["noisy"], runs["base"], "--confidence", "0.5")
    assert wide["drop_ci"][1] - wide["drop_ci"][0] > narrow["drop_ci"][1] - narrow["drop_ci"][0]
    assert check(runs["noisy"], runs["base"], "--confidence", "1.5")[0] == 125


def test_plain_text_says_undecided_and_what_would_decide(runs: dict[str, Path]) -> None:
    proc = invoke_cli("check", str(runs["noisy"]), "--baseline", str(runs["base"]), check=False)
    assert proc.returncode == 125 and proc.stdout.startswith("undecided: pass^1")
    assert "more trial(s) per task" in proc.stdout and "exact sign-flip test" in proc.stdout
