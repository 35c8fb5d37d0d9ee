"""`tauproxy bisect --configs`: eight agent configs, a regression introduced by v5."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke_cli
from run_diff_support import write_config

GOOD_MODEL = "scripted/oracle"
SLIPPING_MODEL = "scripted/oracle?error_rate=0.5"


def versions(tmp_path: Path, count: int, first_bad: int | None) -> list[Path]:
    """v1..v<count>; each has its own prompt, and from v<first_bad> on the agent slips half its steps."""
    return [
        write_config(
            tmp_path / f"v{n}.toml",
            SLIPPING_MODEL if first_bad and n >= first_bad else GOOD_MODEL,
            f"Prompt revision {n}: confirm before every change.",
        )
        for n in range(1, count + 1)
    ]


def test_bisect_names_v5_within_three_middle_evaluations(tmp_path: Path) -> None:
    configs = versions(tmp_path, 8, first_bad=5)
    runs = tmp_path / "runs"
    proc = invoke_cli(
        "bisect",
        "--configs",
        *map(str, configs),
        "--domain",
        "mock",
        "--num-trials",
        "2",
        "--cassette",
        str(tmp_path / "cassette"),
        "--runs-dir",
        str(runs),
        "--json",
    )
    result = json.loads(proc.stdout)
    assert result["status"] == "found"
    assert Path(result["first_bad"]).name == "v5.toml" and result["first_bad_position"] == 5
    assert result["evaluations"] == len(result["steps"])
    assert result["evaluations_beyond_endpoints"] <= 3
    steps = result["steps"]
    # The endpoints come first: the baseline v1, then v8 to confirm there is a regression at all.
    assert [step["position"] for step in steps[:2]] == [1, 8]
    assert {step["position"]: step["verdict"] for step in steps}[5] == "bad"
    assert all(step["verdict"] == ("bad" if step["position"] >= 5 else "good") for step in steps)
    # Every step after the first replays what earlier steps recorded (the user's and judge's calls).
    assert steps[0]["cost"]["replayed_calls"] == 0
    assert all(step["cost"]["replayed_calls"] > 0 for step in steps[1:])
    assert all(step["cost"]["live_usd"] is not None for step in steps)
    assert sorted(p.name for p in runs.iterdir()) == sorted(Path(s["config"]).stem for s in steps)
    # The steps were printed as they ran (on stderr, since stdout carries the JSON).
    assert "v5.toml: score" in proc.stderr and "BAD" in proc.stderr


def test_last_config_not_bad_ends_early(tmp_path: Path) -> None:
    configs = versions(tmp_path, 4, first_bad=None)
    # The repeated-option form, in plain-text mode.
    repeated = [arg for config in configs for arg in ("--configs", str(config))]
    proc = invoke_cli("bisect", *repeated, "--task-ids", "create_task,move_due_date")
    assert "the last config (v4.toml) is not bad" in proc.stdout
    assert proc.stdout.count("GOOD") == 2  # v1 and v4 only


def test_mixed_config_forms_are_refused(tmp_path: Path) -> None:
    one, two, three = versions(tmp_path, 3, first_bad=None)
    proc = invoke_cli("bisect", "--configs", str(one), "--configs", str(two), str(three), check=False)
    assert proc.returncode != 0 and "ambiguous" in proc.stderr
