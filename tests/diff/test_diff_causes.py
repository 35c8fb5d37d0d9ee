"""`tauproxy diff`: each cause class is attributed correctly, on real runs through the CLI.

Scripted models and the stub upstream are deterministic, so a prompt change or resampling noise
changes the stub agent's conversation without changing its (failing) outcome. There the runs are
real and only run A's rewards are edited afterwards, to make the real divergence a pass/fail flip;
the classification still reads the real messages, call keys and cassette.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO_ROOT, invoke_cli
from run_diff_support import diff_json, run, set_reward, stub_args, write_config
from stub_upstream import StubUpstream

from tauproxy.runner.run import execute
from tauproxy_cli.run_setup import RunFlags, build_run_config


@pytest.fixture(scope="module")
def stub_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Three live stub-agent runs of one task, recorded with noise into one cassette.

    a and b differ only in the system prompt; a and c have the same config, so every request of c
    was also sent by a, and the stub's noise makes the same request answer differently. They run
    in-process through the same flags -> RunConfig -> execute path as `tauproxy run`, because each
    `tauproxy run` subprocess would pay litellm's import again (seconds each on a busy machine).
    """
    root = tmp_path_factory.mktemp("stub_runs")
    cassette = root / "cassette"
    one = write_config(root / "one.toml", "openai/stub", "Version one: be brief.")
    two = write_config(root / "two.toml", "openai/stub", "Version two: be thorough.")
    runs: dict[str, Path] = {}
    with StubUpstream() as stub:
        stub.configure(noise=True)
        for name, config in (("a", one), ("b", two), ("c", one)):
            flags = RunFlags(
                agent_config=config,
                agent_llm_args=stub_args(stub.url),
                task_ids=["create_task"],
                cassette=cassette,
                record_mode="record",
                save_to=root / name,
            )
            execute(build_run_config(flags))
            runs[name] = root / name
    set_reward(runs["a"], 1.0)
    yield {**runs, "cassette": cassette}


def test_model_change_is_model_or_params_changed(tmp_path: Path) -> None:
    common = ("--task-ids", "create_task,complete_task", "--num-trials", "2")
    a = run(tmp_path / "a", "--agent-llm", "scripted/oracle", *common)
    # temperature changes no scripted answer, but it is a changed sampling arg the detail must name.
    b = run(
        tmp_path / "b",
        "--agent-llm",
        "scripted/oracle?error_rate=0.9",
        "--agent-llm-args",
        '{"temperature": 0.7}',
        *common,
    )
    diff = diff_json(a, b)
    assert diff["flips"], "error_rate=0.9 must fail some trial the oracle passes"
    assert diff["setting_changes"]["agent.llm"] == ["scripted/oracle", "scripted/oracle?error_rate=0.9"]
    assert diff["setting_changes"]["agent.llm_args"] == [{}, {"temperature": 0.7}]
    for flip in diff["flips"]:
        found = flip["divergence"]
        assert flip["direction"] == "regressed"
        assert found["cause"] == "model_or_params_changed"
        assert found["call_role"] == "agent" and found["message_role"] == "assistant"
        assert found["key_a"] != found["key_b"]
        assert "agent.llm:" in found["detail"] and "agent.llm_args:" in found["detail"]
        assert found["message_diff"].startswith("--- A\n+++ B")
    counts = {row["task_id"]: row for row in diff["tasks"]}
    assert counts["create_task"]["a_successes"] == 2
    text = invoke_cli("diff", str(a), str(b)).stdout
    assert "model_or_params_changed at call #" in text and "first difference:" in text
    assert f"create_task    2/2 -> {counts['create_task']['b_successes']}/2  *" in text


def test_prompt_change_is_prompt_or_tools_changed(stub_runs: dict[str, Path]) -> None:
    diff = diff_json(stub_runs["a"], stub_runs["b"], stub_runs["cassette"])
    [flip] = diff["flips"]
    found = flip["divergence"]
    assert found["cause"] == "prompt_or_tools_changed"
    # greeting (#0), the user's opening (#1, call 0), then the agent's first answer (#2, call 1)
    assert (found["message_index"], found["call_index"], found["call_role"]) == (2, 1, "agent")
    assert found["key_a"] != found["key_b"]
    assert "agent.system_prompt_sha256" in found["detail"]
    assert "message #0 (system) differs" in found["request_diff"]
    assert "+Version two: be thorough." in found["request_diff"]


def test_same_request_different_answer_is_resampling_noise(stub_runs: dict[str, Path]) -> None:
    diff = diff_json(stub_runs["a"], stub_runs["c"], stub_runs["cassette"])
    assert diff["setting_changes"] == {}
    [flip] = diff["flips"]
    found = flip["divergence"]
    assert found["cause"] == "resampling_noise"
    assert found["call_role"] == "agent" and found["key_a"] == found["key_b"]
    assert "requests are identical" in found["request_diff"]


def test_changed_tool_is_tool_output_changed(tmp_path: Path) -> None:
    pack = tmp_path / "changed" / "mock"
    shutil.copytree(REPO_ROOT / "domains" / "mock", pack, ignore=shutil.ignore_patterns("__pycache__"))
    tools = pack / "tools.py"
    source = tools.read_text()
    assert 'app["sync_enabled"] = enabled' in source
    tools.write_text(source.replace('app["sync_enabled"] = enabled', 'app["sync_enabled"] = False'))
    common = ("--agent-llm", "scripted/oracle", "--task-ids", "phone_sync_off")
    a = run(tmp_path / "a", *common)
    b = run(tmp_path / "b", *common, domain=str(pack))
    [flip] = diff_json(a, b)["flips"]
    found = flip["divergence"]
    assert found["cause"] == "tool_output_changed"
    assert found["message_role"] == "tool" and "set_sync" in found["detail"]
    assert "domain_sha256" in found["detail"]
    assert '+{"last_sync": "just now", "sync_enabled": false}' in found["message_diff"]


def test_other_user_model_is_user_simulator_changed(tmp_path: Path) -> None:
    # A user who never acts on their phone (nor stops) fails the dual-control task.
    common = ("--agent-llm", "scripted/oracle", "--task-ids", "phone_sync_off", "--max-steps", "12")
    a = run(tmp_path / "a", *common)
    b = run(tmp_path / "b", *common, "--user-llm", "scripted/silent")
    [flip] = diff_json(a, b)["flips"]
    found = flip["divergence"]
    assert found["cause"] == "user_simulator_changed"
    assert (found["message_index"], found["call_index"], found["call_role"]) == (1, 0, "user")
    assert "user.llm" in found["detail"]
