"""A user's own agent plugs in with --agent-impl and its model calls are recorded like any other."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke_cli, report_json

AGENT_FILE = '''
from tauproxy.data_model.message import Message
from tauproxy.engine.agent import AgentSetup, LLMAgent
from tauproxy.engine.llm_config import LLMConfig


class CountingAgent:
    """Delegates to the scripted oracle through the trial's client, and counts its turns."""

    def __init__(self, setup: AgentSetup) -> None:
        self.inner = LLMAgent(LLMConfig(model="scripted/oracle"), setup.client, setup.system_prompt, setup.seed)
        self.turns = 0

    def respond(self, messages: list[Message], tools: list) -> Message:
        self.turns += 1
        return self.inner.respond(messages, tools)


def make(setup: AgentSetup) -> CountingAgent:
    return CountingAgent(setup)
'''


def test_custom_agent_runs_and_is_recorded(tmp_path: Path) -> None:
    agent = tmp_path / "my_agent.py"
    agent.write_text(AGENT_FILE)
    cassette = tmp_path / "cassette"
    args = [
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "my-agent",
        "--agent-impl",
        f"{agent}:make",
        "--num-trials",
        "2",
        "--cassette",
        str(cassette),
    ]
    invoke_cli(*args, "--save-to", str(tmp_path / "rec"))
    report = report_json(tmp_path / "rec")
    assert report["pass_hat_k"]["1"] == 1.0
    assert report["models"]["agent"]["implementation"] == f"{agent}:make"
    invoke_cli(*args, "--record-mode", "replay", "--save-to", str(tmp_path / "rep"))
    assert report_json(tmp_path / "rep")["calls"]["live"] == 0
    results = json.loads((tmp_path / "rep" / "results.json").read_text())
    calls = [c for s in results["simulations"] for c in s["calls"]]
    assert any(c["role"] == "agent" and c["model"] == "scripted/oracle" for c in calls)


def test_bad_agent_impl_is_a_clear_error(tmp_path: Path) -> None:
    proc = invoke_cli("run", "--domain", "mock", "--agent-llm", "x", "--agent-impl", "no_such_module:make", check=False)
    assert proc.returncode != 0 and "no_such_module" in proc.stderr and "Traceback" not in proc.stderr
