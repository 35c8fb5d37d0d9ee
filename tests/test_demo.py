"""The README's main job: `tauproxy demo` runs offline, with no key and without litellm."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import run_cli


def test_demo_replays_changes_and_reports(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker" / "litellm"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('the demo must not need litellm')\n")
    out = tmp_path / "demo"
    # The blocker goes first; whatever path the caller set stays behind it.
    path = os.pathsep.join(p for p in (str(blocker.parent), os.environ.get("PYTHONPATH", "")) if p)
    proc = run_cli("demo", "--out", str(out), cwd=tmp_path, env={"PYTHONPATH": path, "OPENAI_API_KEY": ""})
    text = " ".join(proc.stdout.split())
    assert "pass^1" in text and "pass^4" in text
    assert "0 live" in text and "live spend $0.0000" in text
    assert "$ tauproxy run --domain airline" in text, "each step shows the plain command"
    agent_line = next(line for line in proc.stdout.splitlines() if line.strip().startswith("agent"))
    user_line = next(line for line in proc.stdout.splitlines() if line.strip().startswith("user"))
    assert " 0 replayed" in agent_line and " 0 live" in user_line, (agent_line, user_line)
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

    # It ends with the next commands, and the ones that need no key run as printed.
    tail = lines[lines.index(next(line for line in lines if "Next" in line)) + 1 :]
    commands = [line.split("#")[0].split() for line in tail if line.strip().startswith("tauproxy ")]
    assert {c[1] for c in commands} >= {"diff", "check", "view", "report", "run"}
    for command in commands:
        if command[1] == "run":
            continue  # the real-model example needs a key
        done = run_cli(*command[1:], cwd=tmp_path, check=False, env={"PYTHONPATH": path})
        assert done.returncode in ((0, 1, 125) if command[1] == "check" else (0,)), (command, done.stderr)
        assert "Traceback" not in done.stderr
