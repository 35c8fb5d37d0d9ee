"""Domain sources behind one protocol: the built-ins are found by name, a third one registers itself and
runs through the runner unchanged, options belong to one source, and nothing outside τ²-bench's own
package asks whether a domain is τ²'s."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from echo_source import DOMAIN, EchoSource
from pydantic import ValidationError
from typer.testing import CliRunner

from tauproxy import api
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.reports.tau2 import to_tau2
from tauproxy.runner.config import RunConfig
from tauproxy.runner.run import execute
from tauproxy.sources.registry import (
    register_source,
    registered_sources,
    source_for_domain,
    source_named,
    unregister_source,
)
from tauproxy_cli.main import app

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def echo() -> Iterator[EchoSource]:
    source = EchoSource()
    register_source(source)
    try:
        yield source
    finally:
        unregister_source(source.name)


def test_the_built_ins_own_their_names() -> None:
    assert [source.name for source in registered_sources()][:2] == ["tauproxy", "tau2"]
    assert source_for_domain("tau2/airline:full").name == "tau2"
    assert source_for_domain("mock").name == "tauproxy"
    assert source_for_domain("domains/retail").name == "tauproxy"  # a pack by path


def test_an_unknown_source_is_one_line_naming_the_registered_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        source_named("nope")
    assert str(caught.value) == "unknown domain source 'nope' (registered: tau2, tauproxy)"


def test_a_source_cannot_take_a_name_prefix_or_option_that_is_taken(echo: EchoSource) -> None:
    with pytest.raises(ConfigError, match="registered already"):
        register_source(EchoSource())
    clash = EchoSource()
    clash.name = "echo2"
    with pytest.raises(ConfigError, match="overlaps 'echo'"):
        register_source(clash)
    clash.prefix = "other/"
    with pytest.raises(ConfigError, match="option 'echo_expect' is 'echo''s already"):
        register_source(clash)
    with pytest.raises(ConfigError, match="built-in"):
        unregister_source("tau2")


def test_a_third_source_runs_through_the_runner_recorded_and_replayed(echo: EchoSource, tmp_path: Path) -> None:
    cassette = tmp_path / "cassette"
    live = api.run(api.run_config(DOMAIN, "scripted/silent", num_trials=2, cassette=cassette, record_mode="record"))
    assert source_for_domain(DOMAIN) is echo
    assert live.results.info.domain == DOMAIN and live.results.info.engine == "echo 1"
    assert [s.reward_info.reward for s in live.results.simulations if s.reward_info] == [1.0, 1.0]
    assert {c.source for s in live.results.simulations for c in s.calls} == {"live"}
    replayed = api.run(
        api.run_config(
            DOMAIN, "scripted/silent", num_trials=2, cassette=cassette, record_mode="replay", save_to=tmp_path / "r"
        )
    )
    assert {c.source for s in replayed.results.simulations for c in s.calls} == {"replay"}
    assert [s.messages for s in replayed.results.simulations] == [s.messages for s in live.results.simulations]
    assert to_tau2(replayed.results)["info"]["environment_info"]["domain_name"] == DOMAIN


def test_a_sources_own_option_reaches_its_trials(echo: EchoSource) -> None:
    report = api.run(api.run_config(DOMAIN, "scripted/silent", source_options={"echo_expect": "gladly"}))
    assert report.results.simulations[0].reward_info is not None
    assert report.results.simulations[0].reward_info.reward == 0.0


def test_an_option_given_to_another_sources_domain_is_refused_by_its_owner(echo: EchoSource, tmp_path: Path) -> None:
    config = RunConfig(domain="mock", agent=LLMConfig(model="scripted/oracle"), source_options={"echo_expect": "x"})
    with pytest.raises(ConfigError) as caught:
        execute(config)
    assert str(caught.value) == "--echo-expect is for echo/ domains, not 'mock'"
    theirs = RunConfig(
        domain=DOMAIN, agent=LLMConfig(model="scripted/silent"), source_options={"tau2_orchestrator": "tau2"}
    )
    with pytest.raises(
        ConfigError, match=r"^--tau2-orchestrator picks what runs a tau2/ domain's trials; 'echo/hello'"
    ):
        execute(theirs)
    # Defaults are no choice: one given at its default is ignored, as when the flag is left out.
    execute(
        RunConfig(
            domain="mock",
            agent=LLMConfig(model="scripted/oracle"),
            source_options={"echo_expect": "sorry"},
            num_tasks=1,
        )
    )


def test_options_are_checked_by_their_owners_model_at_once() -> None:
    with pytest.raises(ValidationError, match="unknown source option 'nope'"):
        RunConfig(domain="mock", agent=LLMConfig(model="scripted/oracle"), source_options={"nope": 1})
    with pytest.raises(ValidationError) as caught:
        RunConfig(domain="tau2/mock", agent=LLMConfig(model="openai/a"), source_options={"judge_window_size": 0})
    assert caught.value.errors()[0]["loc"] == ("source_options", "judge_window_size")
    with pytest.raises(ConfigError) as refused:
        api.run_config("tau2/mock", "openai/a", source_options={"tau2_orchestrator": "fast"})
    assert "unknown --tau2-orchestrator 'fast' (choose from: tauproxy, tau2)" in str(refused.value)


def test_the_cli_lists_and_shows_a_third_sources_domains(echo: EchoSource) -> None:
    listed = CliRunner().invoke(app, ["domains", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    assert {
        "name": DOMAIN,
        "tasks": 1,
        "agent_tools": 0,
        "user_tools": 0,
        "dual_control": False,
        "engine": "echo 1",
    } in rows
    assert all("engine" not in row for row in rows if row["name"] == "mock")
    shown = CliRunner().invoke(app, ["domains", "show", DOMAIN, "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["name"] == DOMAIN


def test_nothing_outside_tau2bench_and_the_registry_asks_whether_a_domain_is_tau2s() -> None:
    allowed = {ROOT / "tauproxy" / "sources" / "registry.py"}
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for top in (ROOT / "tauproxy", ROOT / "cli")
        for path in sorted(top.rglob("*.py"))
        if (ROOT / "tauproxy" / "tau2bench") not in path.parents and path not in allowed
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"is_tau2", line)
    ]
    assert not found, found


def test_an_installed_source_is_read_from_its_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    from tauproxy.sources import registry

    entry = importlib.metadata.EntryPoint(name="echo", value="echo_source:EchoSource", group=registry.ENTRY_POINT_GROUP)
    broken = importlib.metadata.EntryPoint(name="gone", value="no_such_module:Source", group=registry.ENTRY_POINT_GROUP)

    def installed(group: str, found: list[importlib.metadata.EntryPoint]) -> object:
        return found if group == registry.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(registry, "_installed_read", False)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: installed(group, [entry, broken]))
    with pytest.raises(ConfigError) as caught:
        source_for_domain(DOMAIN)
    assert str(caught.value).startswith("domain source 'gone' (no_such_module:Source) cannot be loaded: ")
    assert "echo" not in [source.name for source in registry._sources.values()]  # all or none
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: installed(group, [entry]))
    try:
        assert source_for_domain(DOMAIN).name == "echo"
        assert source_named("echo").prefix == "echo/"
    finally:
        unregister_source("echo")
