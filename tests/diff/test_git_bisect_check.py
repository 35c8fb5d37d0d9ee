"""`tauproxy check` under a real `git bisect run` over an agent's repository.

Each commit changes agent.toml; from the fourth commit on, the agent slips. Every bisect step runs
the agent against one shared cassette (auto mode) and lets `check` judge it against the first
commit's run. git must name the fourth commit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import conftest
import pytest
from conftest import invoke_cli

FIRST_BAD = 4
COMMITS = 6

STEP_SCRIPT = """#!/bin/sh
# One bisect step: run this commit's agent, then let `check` give git its verdict.
out="$RUNS/$(git rev-parse --short HEAD)"
"$TAUPROXY" run --domain mock --agent-config agent.toml --num-trials 2 \\
    --cassette "$CASSETTE" --save-to "$out" > /dev/null || exit 125
exec "$TAUPROXY" check "$out" --baseline "$BASELINE" --max-drop 0.1
"""


# The user's own git config (signing, hooks, default branch) must not change what this test sees.
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stdout}\n{proc.stderr}"
    return proc.stdout


def agent_toml(version: int) -> str:
    model = "scripted/oracle?error_rate=0.5" if version >= FIRST_BAD else "scripted/oracle"
    return f'model = "{model}"\nsystem_prompt = "Agent revision {version}."\n'


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_bisect_run_names_the_first_bad_commit(tmp_path: Path) -> None:
    repo, runs, cassette = tmp_path / "agent", tmp_path / "runs", tmp_path / "cassette"
    repo.mkdir()
    git(repo, "init", "-q")
    commits = []
    for version in range(1, COMMITS + 1):
        (repo / "agent.toml").write_text(agent_toml(version))
        git(repo, "add", "agent.toml")
        git(repo, "commit", "-q", "-m", f"agent revision {version}")
        commits.append(git(repo, "rev-parse", "HEAD").strip())
    # The baseline: the first commit's agent, recorded into the shared cassette.
    first = tmp_path / "v1.toml"
    first.write_text(agent_toml(1))
    baseline = tmp_path / "baseline"
    invoke_cli(
        "run",
        "--domain",
        "mock",
        "--agent-config",
        str(first),
        "--num-trials",
        "2",
        "--cassette",
        str(cassette),
        "--save-to",
        str(baseline),
    )
    script = tmp_path / "step.sh"  # outside the repository, so checkouts never touch it
    script.write_text(STEP_SCRIPT)
    script.chmod(0o755)
    # The same `tauproxy` that run_cli runs (looked up now, as run_cli does).
    env = {
        **os.environ,
        **GIT_ENV,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "TAUPROXY": conftest.tauproxy_bin(),
        "RUNS": str(runs),
        "CASSETTE": str(cassette),
        "BASELINE": str(baseline),
    }

    git(repo, "bisect", "start", commits[-1], commits[0])
    proc = subprocess.run(
        ["git", "-C", str(repo), "bisect", "run", str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{commits[FIRST_BAD - 1]} is the first bad commit" in proc.stdout
    git(repo, "bisect", "reset")
    # ceil(log2(5)) steps at most, each a run saved under its own commit.
    assert 1 <= len(list(runs.iterdir())) <= 3
