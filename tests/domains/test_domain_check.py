"""Issue 8/9 acceptance across every built-in pack: `domains check` passes, generated sets pass too,
and refusal tasks punish the forbidden write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import invoke_cli

from tauproxy.domain.pack import available_domains, load_pack
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.reports.metrics import is_success
from tauproxy.runner.config import RunConfig
from tauproxy.runner.run import execute

GENERATED = [name for name in available_domains() if (load_pack(name).root / "taskgen.py").exists()]


@pytest.mark.parametrize("domain", available_domains())
def test_domains_check_passes(domain: str) -> None:
    proc = invoke_cli("domains", "check", domain, "--json")
    [check] = json.loads(proc.stdout)
    assert check["ok"], check
    assert check["oracle_pass_rate"] == 1.0 and check["silent_pass_rate"] <= 0.10


@pytest.mark.parametrize("domain", GENERATED)
def test_generated_set_with_new_seed_passes_check(domain: str, tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    invoke_cli("tasks", "generate", "--domain", domain, "--seed", "11", "--n", "12", "--out", str(first))
    invoke_cli("tasks", "generate", "--domain", domain, "--seed", "11", "--n", "12", "--out", str(second))
    assert first.read_bytes() == second.read_bytes(), "the same seed gives a byte-identical task file"
    [check] = json.loads(invoke_cli("domains", "check", domain, "--tasks-file", str(first), "--json").stdout)
    assert check["ok"] and check["tasks"] == 12, check


@pytest.mark.parametrize("domain", [d for d in ("airline", "retail") if d in available_domains()])
def test_refusal_tasks_punish_the_forbidden_write(domain: str) -> None:
    pack = load_pack(domain)
    refusals = [t.id for t in pack.tasks if isinstance(t.description, dict) and t.description.get("forbidden_actions")]
    assert refusals, "the pack ships refusal tasks"
    ids = refusals[:6]
    honest = execute(RunConfig(domain=domain, agent=LLMConfig(model="scripted/oracle"), task_ids=ids))
    violating = execute(RunConfig(domain=domain, agent=LLMConfig(model="scripted/oracle?violate=1"), task_ids=ids))
    assert all(is_success(run) for run in honest.results.simulations)
    assert not any(is_success(run) for run in violating.results.simulations)
