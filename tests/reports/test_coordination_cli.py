"""`tauproxy report DUAL SOLO` puts dual-control and solo runs side by side and splits the errors."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke_cli


def test_report_attributes_skipped_guidance_to_coordination(tmp_path: Path) -> None:
    base = ["run", "--domain", "telecom", "--agent-llm", "scripted/oracle?skip_user=1", "--num-tasks", "5"]
    invoke_cli(*base, "--save-to", str(tmp_path / "dual"))
    invoke_cli(*base, "--solo", "--save-to", str(tmp_path / "solo"))
    out = json.loads(invoke_cli("report", str(tmp_path / "dual"), str(tmp_path / "solo"), "--json").stdout)
    assert out["dual"]["pass_hat_k"]["1"] == 0.0 and out["solo"]["pass_hat_k"]["1"] == 1.0
    totals = out["coordination"]["totals"]
    assert totals["coordination_error"] == 1.0 and totals["reasoning_error"] == 0.0
    table = invoke_cli("report", str(tmp_path / "dual"), str(tmp_path / "solo")).stdout
    assert "coordination" in table
