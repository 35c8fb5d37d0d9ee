"""--until-decided on the real runner (mock domain, scripted oracle with seeded slips): extra trials take
the next trial indices in the same run directory and cassette, and a rerun replays every call (0 live)."""

from __future__ import annotations

from pathlib import Path

from tauproxy.data_model.result import Results, SimulationRun
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.proxy.modes import RecordMode
from tauproxy.results.load import load_any_results
from tauproxy.runner.config import RunConfig
from tauproxy.runner.run import execute
from tauproxy.workflows.adaptive import AdaptiveOutcome, AdaptiveSettings, RunnerTrials, until_decided
from tauproxy.workflows.sequential import LookSchedule

SETTINGS = AdaptiveSettings(max_drop=0.1, schedule=LookSchedule(confidence=0.95), max_cost=1.0, max_trials=8)


def candidate(tmp_path: Path, save_to: str, mode: RecordMode) -> RunConfig:
    return RunConfig(
        domain="mock",
        agent=LLMConfig(model="scripted/oracle?error_rate=0.15"),
        num_trials=4,
        cassette=tmp_path / "cassette",
        record_mode=mode,
        save_to=tmp_path / save_to,
    )


def adaptive(config: RunConfig, baseline: Results) -> tuple[AdaptiveOutcome, list[SimulationRun]]:
    ran: list[SimulationRun] = []
    source = RunnerTrials(config, progress=lambda run, done, total: ran.append(run))
    return until_decided(source, baseline, source.initial_plan(), SETTINGS), ran


def rounds(outcome: AdaptiveOutcome) -> list[tuple[list[str], int, str]]:
    return [(done.tasks, done.trials_added, done.verdict.value) for done in outcome.rounds]


def test_extra_trials_are_recorded_and_a_rerun_replays_them_free(tmp_path: Path) -> None:
    baseline = execute(RunConfig(domain="mock", agent=LLMConfig(model="scripted/oracle"), num_trials=4)).results
    first, ran = adaptive(candidate(tmp_path, "first", RecordMode.AUTO), baseline)
    assert len(first.rounds) >= 2
    assert 0 < len(first.rounds[1].tasks) < 10  # only some tasks got more trials
    grown = {task for done in first.rounds[1:] for task in done.tasks}
    saved = load_any_results(tmp_path / "first")
    trials = {task: sorted(s.trial for s in saved.simulations if s.task_id == task) for task in grown}
    assert all(indices == list(range(8)) for indices in trials.values())  # the next indices, same directory
    assert len(saved.simulations) == len(ran) == sum(done.trials_added for done in first.rounds)
    assert {s.seed for s in saved.simulations if s.trial >= 4} and all(
        s.seed not in {b.seed for b in baseline.simulations} for s in saved.simulations if s.trial >= 4
    )

    # A fresh run directory, strict replay: the same rounds, every call from the cassette.
    again, _ = adaptive(candidate(tmp_path, "again", RecordMode.REPLAY), baseline)
    assert rounds(again) == rounds(first)
    replayed = load_any_results(tmp_path / "again")
    calls = [call for s in replayed.simulations for call in s.calls]
    assert calls and all(call.source == "replay" for call in calls)

    # The same run directory: nothing runs at all.
    resumed, ran_again = adaptive(candidate(tmp_path, "first", RecordMode.REPLAY), baseline)
    assert rounds(resumed) == rounds(first) and ran_again == []
