"""Shared test helpers: run the real `tauproxy` console script, compare results files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).parent
REPO_ROOT = TESTS_DIR.parent
sys.path.insert(0, str(TESTS_DIR))

# Fields that hold wall-clock readings; everything else in a results file must be reproducible.
VOLATILE_KEYS = frozenset({"timestamp", "duration", "recorded_at"})


def tauproxy_bin() -> str:
    return str(Path(sys.executable).parent / "tauproxy")


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, check: bool = True, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})}
    proc = subprocess.run(
        [tauproxy_bin(), *args], capture_output=True, text=True, env=full_env, cwd=cwd, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"tauproxy {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def report_json(run_dir: Path) -> dict[str, Any]:
    return json.loads(run_cli("report", str(run_dir), "--json").stdout)


def strip_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_volatile(v) for k, v in value.items() if k not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [strip_volatile(v) for v in value]
    return value


def load_stripped(path: Path) -> Any:
    return strip_volatile(json.loads(path.read_text()))


@pytest.fixture
def stub():
    from stub_upstream import StubUpstream

    server = StubUpstream().start()
    try:
        yield server
    finally:
        server.stop()
