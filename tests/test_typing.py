"""mypy --strict (with the pydantic plugin, configured in pyproject.toml) is clean over the library
and the CLI. cli/ installs as `tauproxy_cli`, so it is checked under that name through a symlink."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_mypy_strict_is_clean(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    (tmp_path / "tauproxy_cli").symlink_to(ROOT / "cli", target_is_directory=True)
    (tmp_path / "tauproxy_domains").symlink_to(ROOT / "domains", target_is_directory=True)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "-p",
            "tauproxy",
            "-p",
            "tauproxy_cli",
        ],
        cwd=tmp_path,
        env={"MYPYPATH": f"{ROOT}:{tmp_path}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_ruff_is_clean() -> None:
    pytest.importorskip("ruff")
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "tauproxy", "cli", "tests", "bench", "domains"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-1000:]
