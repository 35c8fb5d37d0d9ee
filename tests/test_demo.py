"""The README's main job: `tauproxy demo` runs offline, with no key and without litellm."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from conftest import run_cli


def test_demo_replays_changes_and_reports(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker" / "litellm"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('the demo must not need litellm')\n")
    out = tmp_path / "demo"
    # The blocker goes first; whatever path the caller set stays behind it.
    path = os.pathsep.join(p for p in (str(blocker.parent), os.environ.get("PYTHONPATH", "")) if p)
    # As after the README's set-up line: the venv is not activated, so `tauproxy` is not on PATH.
    venv_bin = Path(sys.executable).parent
    bare_path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p) != venv_bin)
    env = {"PYTHONPATH": path, "OPENAI_API_KEY": "", "PATH": bare_path}
    proc = run_cli("demo", "--out", str(out), cwd=tmp_path, env=env)
    text = " ".join(proc.stdout.split())
    assert "pass^1" in text and "pass^4" in text
    assert "0 live" in text and "live spend $0.0000" in text
    step = next(line for line in proc.stdout.splitlines() if line.startswith("$ ") and " run --domain airline" in line)
    program = shlex.split(step)[1]  # `tauproxy` when the shell finds it, else the path it was run by
    assert Path(program).name == "tauproxy", "each step shows the plain command"
    agent_line = next(line for line in proc.stdout.splitlines() if line.strip().startswith("agent"))
    user_line = next(line for line in proc.stdout.splitlines() if line.strip().startswith("user"))
    assert " 0 replayed" in agent_line, agent_line  # the new prompt is in every agent request
    assert int(user_line.split("live")[1].split("replayed")[0]) > 0, user_line  # the user's mostly replay
    html = (out / "report.html").read_text()
    assert "<svg" in html
    assert 'src="http' not in html and 'href="http' not in html, "the report needs no network"

    # The changed run's pass^k beside the baseline's, each from its own results.
    lines = proc.stdout.splitlines()
    for name in ("changed", "baseline"):
        shown = next(line for line in lines if line.startswith(f"{name} ") and "pass^1" in line)
        expected = json.loads(run_cli("report", str(out / name), "--json").stdout)["pass_hat_k"]
        assert shown.split(None, 1)[1].split() == [x for k, v in expected.items() for x in (f"pass^{k}", f"{v:.3f}")]
    assert "demo-prices.json" in text and "nothing is paid" in text, "simulated spend says so"

    # It ends with the next commands, and the ones that need no key run exactly as printed, in a shell
    # that has not activated the venv (the README's set-up line does not).
    tail = lines[lines.index(next(line for line in lines if "Next" in line)) + 1 :]
    commands = [shlex.split(line.split("#")[0]) for line in tail if line.strip().startswith(f"{program} ")]
    assert {c[1] for c in commands} >= {"diff", "check", "view", "report", "run"}
    bare_path = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if Path(p) != Path(sys.executable).parent
    )
    shown: dict[str, str] = {}
    for command in commands:
        if command[1] == "run":
            continue  # the real-model example needs a key
        shell_env = {**os.environ, **env, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=shell_env, check=False)
        assert done.returncode in ((0, 1, 125) if command[1] == "check" else (0,)), (command, done.stderr)
        assert "Traceback" not in done.stderr
        shown[command[1]] = done.stdout
    # The changed agent slips more: trials flip, so diff, check and view have something to show.
    assert "flipped trials: 0 of" not in shown["diff"] and "regressed" in shown["diff"], shown["diff"]
