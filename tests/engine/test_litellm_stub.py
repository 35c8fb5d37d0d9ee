"""The live path: litellm and httpx against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke_cli, report_json


def test_mock_domain_runs_through_litellm_against_stub(tmp_path: Path, stub) -> None:
    run_dir = tmp_path / "live"
    args = json.dumps({"api_base": stub.url, "api_key": "sk-test-not-a-real-key", "num_retries": 0})
    invoke_cli(
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "openai/stub",
        "--agent-llm-args",
        args,
        "--num-tasks",
        "3",
        "--save-to",
        str(run_dir),
    )
    report = report_json(run_dir)
    assert report["num_tasks"] == 3
    assert report["calls"]["live"] > 0
    # The stub received every agent call, each carrying the per-trial seed and the domain's tools.
    agent_requests = [r for r in stub.requests if r["model"] == "stub"]
    assert len(agent_requests) == sum(1 for _ in agent_requests) and agent_requests
    assert all("seed" in r and r.get("tools") for r in agent_requests)
    results = json.loads((run_dir / "results.json").read_text())
    tool_calls = [c for s in results["simulations"] for m in s["messages"] for c in (m.get("tool_calls") or [])]
    assert any(c["name"] == "find_user_by_email" for c in tool_calls)
    assert "sk-test-not-a-real-key" not in (run_dir / "results.json").read_text()
