"""The CLI's run widens the young generation's collection window while its trials run, and only then:
the thresholds before it come back afterwards, also when the run fails."""

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
