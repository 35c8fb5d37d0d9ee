"""`report --format tau2` of a `tau2/` run takes τ²'s own pieces (tauproxy/tau2bench/export.py) and
leaves infrastructure errors out (no τ² needed: the pieces are stubbed; the real package is read in
test_tau2bench_reward.py, where τ² itself loads the export)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "reports"))
from report_runs import tiny_results

from tauproxy.data_model.result import Results, SimulationRun, TerminationReason
from tauproxy.reports.tau2 import to_tau2
from tauproxy.tau2bench import export
from tauproxy.tau2bench.export import Tau2Export


def tau2_run(solo: bool) -> Results:
    base = tiny_results()
    sim = base.simulations[0]
    broken = SimulationRun(
        id=f"{sim.task_id}:1",
        task_id=sim.task_id,
        trial=1,
        seed=4,
        messages=[],
        termination_reason=TerminationReason.INFRASTRUCTURE_ERROR,
        error="provider down",
    )
    info = base.info.model_copy(update={"domain": "tau2/mock", "solo": solo, "engine": "tau2 26.3"})
    return base.model_copy(update={"info": info, "simulations": [sim, broken]})


@pytest.mark.parametrize("solo", [False, True])
def test_a_tau2_runs_export_carries_tau2s_own_tasks_policy_and_tools(
    monkeypatch: pytest.MonkeyPatch, solo: bool
) -> None:
    results = tau2_run(solo)
    task_id = results.tasks[0].id
    asked: list[tuple[str, bool]] = []

    def fake(domain: str, solo_mode: bool) -> Tau2Export:
        asked.append((domain, solo_mode))
        return Tau2Export(
            environment_info={"domain_name": "mock", "policy": "P", "tool_defs": {"t": {}}},
            tasks={task_id: {"id": task_id, "original": True}},
            agent_implementation="A" if solo_mode else "a",
            user_implementation="U" if solo_mode else "u",
        )

    monkeypatch.setattr(export, "tau2_export", fake)
    document = to_tau2(results)
    assert asked == [("tau2/mock", solo)]
    assert document["info"]["environment_info"] == {"domain_name": "mock", "policy": "P", "tool_defs": {"t": {}}}
    assert document["tasks"] == [{"id": task_id, "original": True}]
    assert (document["info"]["agent_info"]["implementation"], document["info"]["user_info"]["implementation"]) == (
        ("A", "U") if solo else ("a", "u")
    )
    assert [sim["id"] for sim in document["simulations"]] == [f"{task_id}:0"]  # τ² has no infrastructure_error


def test_our_own_domains_export_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export, "tau2_export", lambda *a: pytest.fail("only tau2/ runs read τ²-bench"))
    document = to_tau2(tiny_results())
    assert document["info"]["environment_info"] == {"domain_name": "mock", "policy": "", "tool_defs": None}
    assert document["info"]["agent_info"]["implementation"] == "llm_agent"
