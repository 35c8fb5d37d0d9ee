"""The CLI's run widens the young generation's collection window while its trials run, and only then:
the thresholds before it come back afterwards, also when the run fails. Before `prepare`, it loads its
modules and config with the collector paused."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from conftest import PYTHON_GC_THRESHOLDS, invoke_cli

from tauproxy_cli import run_view
from tauproxy_cli.run_view import TRIAL_GC_THRESHOLD, fewer_collections


def test_the_window_is_wide_inside_and_restored_after() -> None:
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold() == (TRIAL_GC_THRESHOLD, *before[1:])
    assert gc.get_threshold() == before


def test_the_thresholds_come_back_when_the_trials_raise() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("a trial's failure")
    assert gc.get_threshold() == before


def test_a_run_executes_its_trials_inside_the_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, int, int]] = []
    execute = run_view._execute

    def watched(*args: object, **kwargs: object) -> object:
        seen.append(gc.get_threshold())
        return execute(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(run_view, "_execute", watched)
    invoke_cli("run", "--agent-llm", "scripted/oracle", "--num-tasks", "1", "--save-to", str(tmp_path / "run"))
    assert seen == [(TRIAL_GC_THRESHOLD, *PYTHON_GC_THRESHOLDS[1:])]
    assert gc.get_threshold() != (TRIAL_GC_THRESHOLD, *PYTHON_GC_THRESHOLDS[1:])


def test_run_loads_its_config_with_the_collector_paused_and_gives_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `run` loads before `prepare` lives as long as the run (runner/collector.py); the collector
    runs again afterwards, also when a flag is refused there."""
    from tauproxy_cli import run_setup

    seen: list[bool] = []
    build = run_setup.build_run_config

    def watched(flags: object) -> object:
        seen.append(gc.isenabled())
        return build(flags)  # type: ignore[arg-type]

    monkeypatch.setattr(run_setup, "build_run_config", watched)
    gc.enable()
    invoke_cli("run", "--agent-llm", "scripted/oracle", "--num-tasks", "1", "--save-to", str(tmp_path / "run"))
    assert seen == [False] and gc.isenabled()
    refused = invoke_cli("run", "--num-tasks", "1", check=False)  # no agent model
    assert refused.returncode == 2 and "agent" in refused.stderr
    assert seen == [False, False] and gc.isenabled()
