"""Ctrl-C held off while a finished trial is handed on and saved (tauproxy/runner/interrupts.py): the
steps finish, then the KeyboardInterrupt comes; off the main thread, or under someone else's SIGINT
handler, nothing changes."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tauproxy.data_model.result import SimulationRun
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.runner.config import RunConfig
from tauproxy.runner.interrupts import interrupt_deferred
from tauproxy.runner.plan_order import PlanOrder
from tauproxy.runner.run import prepare
from tauproxy.runner.stack import build_transport
from tauproxy.runner.trial import run_trial


@pytest.fixture(autouse=True)
def pythons_sigint_handler() -> Iterator[None]:
    """Python's own handler, as in a user's process (a test worker may have another)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)


def test_a_ctrl_c_inside_is_raised_once_the_steps_are_done() -> None:
    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt), interrupt_deferred():
        steps.append("first")
        ctrl_c()
        steps.append("second")
    assert steps == ["first", "second"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with interrupt_deferred():
        steps.append("quiet")  # no Ctrl-C: nothing raised
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_off_the_main_thread_or_under_another_handler_nothing_changes() -> None:
    seen: list[object] = []

    def elsewhere() -> None:
        with interrupt_deferred():
            seen.append(signal.getsignal(signal.SIGINT))

    worker = threading.Thread(target=elsewhere)
    worker.start()
    worker.join()
    assert seen == [signal.default_int_handler]
    theirs: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: theirs.append(signum))
    with interrupt_deferred():
        ctrl_c()  # their handler runs at once, and nothing is raised at the end
    assert theirs == [signal.SIGINT]


def test_a_ctrl_c_while_a_trial_is_handed_on_lets_it_be_saved_first(tmp_path: Path) -> None:
    """The "N trials saved" count and results.json take a trial when it is handed on; a resume reads
    simulations.jsonl. A Ctrl-C in between must not leave the one without the other."""
    config = RunConfig(domain="mock", agent=LLMConfig(model="scripted/oracle"), save_to=tmp_path / "run")
    run = prepare(config)
    transport = build_transport(config, run.pack, run.pricing)
    try:
        simulation = run_trial(run.specs[0], run.pack, config, transport, run.pricing)
    finally:
        transport.close()
    handed_on: list[SimulationRun] = []

    def emit(trial: SimulationRun, line: str | None) -> None:
        handed_on.append(trial)
        ctrl_c()  # lands after the hand-on, before the append

    order = PlanOrder([spec.run_id for spec in run.specs], {}, emit)
    with pytest.raises(KeyboardInterrupt):
        run.keep(simulation, 1, None, order)
    assert [trial.id for trial in handed_on] == [simulation.id]
    saved = (tmp_path / "run" / "simulations.jsonl").read_text().splitlines()
    assert [SimulationRun.model_validate_json(line).id for line in saved] == [simulation.id]
