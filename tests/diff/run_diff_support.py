"""Helpers shared by the diff/check/bisect tests: run the real CLI and read its JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import invoke_cli

STUB_KEY = {"api_key": "sk-test-not-a-real-key", "num_retries": 0}


def stub_args(url: str) -> str:
    return json.dumps({"api_base": url, **STUB_KEY})


def run(save_to: Path, *args: str, domain: str = "mock") -> Path:
    invoke_cli("run", "--domain", domain, *args, "--save-to", str(save_to))
    return save_to


def diff_json(a: Path, b: Path, *cassettes: Path) -> dict[str, Any]:
    extra = [arg for cassette in cassettes for arg in ("--cassette", str(cassette))]
    return json.loads(invoke_cli("diff", str(a), str(b), *extra, "--json").stdout)


def edit_results(run_dir: Path, edit: Any) -> None:
    """Apply `edit(results_dict)` to a run's results.json in place."""
    path = run_dir / "results.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def set_reward(run_dir: Path, reward: float) -> None:
    """Give every trial of a run this reward: used to turn a real divergence into a pass/fail flip."""

    def edit(data: dict[str, Any]) -> None:
        for simulation in data["simulations"]:
            simulation["reward_info"]["reward"] = reward

    edit_results(run_dir, edit)


def write_config(path: Path, model: str, prompt: str) -> Path:
    path.write_text(f'model = "{model}"\nsystem_prompt = "{prompt}"\n')
    return path
