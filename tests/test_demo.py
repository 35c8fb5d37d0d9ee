"""The README's main job: `tauproxy demo` runs offline, with no key and without litellm."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli


def test_demo_replays_changes_and_reports(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker" / "litellm"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('the demo must not need litellm')\n")
    out = tmp_path / "demo"
    proc = run_cli("demo", "--out", str(out), cwd=tmp_path,
                   env={"PYTHONPATH": str(blocker.parent), "OPENAI_API_KEY": ""})
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
