"""`tauproxy submit prepare` writes what τ²-bench's leaderboard takes: `tau2 submit validate` and
`tau2 submit verify-trajs` (τ²'s own code, in-process) accept it, its scores are τ²'s, and an input that
cannot be submitted is refused with one line before anything is written.

The tauproxy runs here are built from τ²'s own tasks (read from the installed package at test time)
without running trials: what is under test is the submission, not the trials. The τ²-bench input is a
real `tau2 run` output kept beside the repository (../shared/fixtures).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import invoke_cli

pytest.importorskip("tau2")
sys.path.insert(0, str(Path(__file__).parent.parent / "reports"))
from litellm_globals import litellm_as_it_was, tau2_in_process  # noqa: F401  (the fixtures, used by name)
from report_runs import tau2_fixture

from tauproxy.data_model.call import CallRecord
from tauproxy.data_model.message import Message
from tauproxy.data_model.result import ModelInfo, Results, RewardInfo, RunInfo, SimulationRun, TerminationReason
from tauproxy.reports.metrics import pass_hat_ks, task_counts
from tauproxy.tau2bench.domain import load_catalog, our_tasks

# τ²'s leaderboard code sets litellm globals when imported; they are put back after the module.
pytestmark = pytest.mark.usefixtures("tau2_in_process")

AGENT = ModelInfo(llm="openai/gpt-4.1", llm_args={"temperature": 0.0}, implementation="llm_agent")
USER = ModelInfo(llm="openai/gpt-4.1", llm_args={"temperature": 0.0}, implementation="user_simulator")


def tau2_run(
    domain: str,
    trials: int = 2,
    *,
    agent: ModelInfo = AGENT,
    skip_tasks: int = 0,
    broken: int = 0,
    solo: bool = False,
) -> Results:
    """A tauproxy results file of `tau2/<domain>`'s base split: task i passes trial t unless (i + t) % 3 == 0."""
    tasks = our_tasks(load_catalog(f"tau2/{domain}"))[skip_tasks:]
    simulations = []
    for index, task in enumerate(tasks):
        for trial in range(trials):
            infra = index < broken and trial == 0
            simulations.append(
                SimulationRun(
                    id=f"{task.id}:{trial}",
                    task_id=task.id,
                    trial=trial,
                    seed=100 + trial,
                    termination_reason=TerminationReason.INFRASTRUCTURE_ERROR if infra else TerminationReason.USER_STOP,
                    messages=[] if infra else [Message(role="assistant", content="done")],
                    reward_info=None if infra else RewardInfo(reward=0.0 if (index + trial) % 3 == 0 else 1.0),
                    calls=[
                        CallRecord(index=0, role="agent", model=agent.llm, key="k", sample_key="s", source="replay"),
                        CallRecord(index=1, role="user", model=USER.llm, key="k", sample_key="s", source="live"),
                    ],
                    agent_cost=0.01,
                    user_cost=0.02,
                )
            )
    info = RunInfo(
        tauproxy_version="9.9.9",
        domain=f"tau2/{domain}",
        domain_sha256="d" * 64,
        num_trials=trials,
        seed=300,
        trial_seeds=[100 + t for t in range(trials)],
        max_steps=100,
        max_errors=10,
        agent_info=agent,
        user_info=USER,
        judge_info=ModelInfo(llm="openai/gpt-4.1-mini"),
        solo=solo,
        record_mode="replay",
        cassette="/somewhere/cassettes/baseline",
        engine="tau2 26.3, tauproxy orchestrator",
    )
    return Results(timestamp="2026-12-01T10:00:00Z", info=info, tasks=tasks, simulations=simulations)


def saved(results: Results, where: Path) -> Path:
    where.mkdir(parents=True)
    (where / "results.json").write_text(results.model_dump_json(), encoding="utf-8")
    return where


def prepare(*runs: Path, out: Path, check: bool = True) -> tuple[int, str, str]:
    done = invoke_cli(
        "submit",
        "prepare",
        *map(str, runs),
        "--out",
        str(out),
        "--organization",
        "Example Lab",
        "--email",
        "team@example.org",
        check=check,
    )
    return done.returncode, done.stdout, done.stderr


def tau2_validates(submission: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """What `tau2 submit validate DIR` and `tau2 submit verify-trajs DIR/trajectories` print; fails the
    test when either refuses."""
    from tau2.scripts.leaderboard.prepare_submission import validate_submission
    from tau2.scripts.leaderboard.verify_trajectories import VerificationMode, verify_trajectories

    capsys.readouterr()
    verify_trajectories([str(submission / "trajectories")], mode=VerificationMode.PUBLIC)  # exits 1 on a failure
    validate_submission(str(submission))
    printed = capsys.readouterr().out
    assert "❌" not in printed, printed
    assert "Submission validation successful" in printed
    return printed


def test_runs_of_two_domains_make_a_submission_tau2_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    airline, retail = tau2_run("airline"), tau2_run("retail")
    runs = [saved(airline, tmp_path / "airline"), saved(retail, tmp_path / "retail")]
    out = tmp_path / "submission"
    code, stdout, _ = prepare(*runs, out=out)
    assert code == 0
    assert sorted(p.name for p in (out / "trajectories").iterdir()) == ["airline.json", "retail.json"]
    tau2_validates(out, capsys)

    submission = json.loads((out / "submission.json").read_text())
    for name, results in (("airline", airline), ("retail", retail)):
        expected = pass_hat_ks(task_counts(results.simulations))  # tauproxy's own pass^k of the same trials
        scored = submission["results"][name]
        assert scored["pass_1"] == pytest.approx(100 * expected[1])
        assert scored["pass_2"] == pytest.approx(100 * expected[2])
        assert "pass_3" not in scored  # two trials: pass^3 cannot be computed
        assert scored["cost"] == pytest.approx(0.01)
        assert f"pass^1 {100 * expected[1]:.1f}%" in stdout
    assert submission["model_name"] == AGENT.llm
    assert submission["methodology"]["user_simulator"] == USER.llm
    assert submission["methodology"]["evaluation_date"] == "2026-12-01"

    disclosure = json.loads((out / "disclosure.json").read_text())
    first = disclosure["domains"][0]
    calls = Counter(call.source for sim in airline.simulations for call in sim.calls)
    assert first["calls"] == {"live": calls["live"], "shared": 0, "replay": calls["replay"]}
    assert (first["agent"]["llm_args"], first["judge"]["llm"]) == ({"temperature": 0.0}, "openai/gpt-4.1-mini")
    assert (first["trial_seeds"], first["cassette"], first["tauproxy_version"]) == ([100, 101], "baseline", "9.9.9")
    assert "disclosure.json" in submission["methodology"]["notes"]
    assert f"{calls['live']} live" in submission["methodology"]["notes"]


def test_tau2s_own_results_file_is_submitted_as_tau2_wrote_it_without_its_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tau2_fixture()
    out = tmp_path / "submission"
    code, _, _ = prepare(source, out=out)
    assert code == 0
    tau2_validates(out, capsys)
    original, written = json.loads(source.read_text()), json.loads((out / "trajectories" / "airline.json").read_text())
    assert "api_key" in original["info"]["agent_info"]["llm_args"]  # `tau2 run` wrote the key it was given
    assert "api_key" not in written["info"]["agent_info"]["llm_args"]
    assert "dummy_key" not in (out / "trajectories" / "airline.json").read_text()
    assert written["simulations"] == original["simulations"] and written["tasks"] == original["tasks"]
    assert json.loads((out / "disclosure.json").read_text())["domains"][0]["calls"] is None


def refusal(tmp_path: Path, *runs: Results | Path) -> str:
    paths = [run if isinstance(run, Path) else saved(run, tmp_path / f"run{index}") for index, run in enumerate(runs)]
    out = tmp_path / "submission"
    code, stdout, stderr = prepare(*paths, out=out, check=False)
    assert code == 2, (stdout, stderr)
    assert not out.exists()  # nothing written, not even part of it
    assert [line for line in stderr.splitlines() if line.strip()] == [stderr.strip()], stderr  # one line
    return stderr


def test_a_run_that_misses_tasks_is_refused_naming_them(tmp_path: Path) -> None:
    message = refusal(tmp_path, tau2_run("airline", skip_tasks=3))
    assert "3 of the 50 tasks of tau2/airline's base split were not run" in message


def test_infrastructure_errors_are_missing_trials_to_re_run(tmp_path: Path) -> None:
    message = refusal(tmp_path, tau2_run("airline", broken=2))
    assert "2 tasks lack trials" in message and "has 1 of 2" in message and "re-run them" in message


def test_two_agents_are_not_one_submission(tmp_path: Path) -> None:
    other = ModelInfo(llm="openai/gpt-4.1", llm_args={"temperature": 0.7}, implementation="llm_agent")
    message = refusal(tmp_path, tau2_run("airline"), tau2_run("retail", agent=other))
    assert "one agent and one user simulator" in message and '"temperature": 0.7' in message


def test_a_domain_given_twice_is_refused(tmp_path: Path) -> None:
    assert "given twice" in refusal(tmp_path, tau2_run("airline"), tau2_run("airline"))


def test_solo_runs_are_not_ranked(tmp_path: Path) -> None:
    assert "solo run" in refusal(tmp_path, tau2_run("airline", solo=True))


def test_our_own_packs_and_unranked_tau2_domains_are_refused(tmp_path: Path) -> None:
    ours = tau2_run("airline").model_copy(
        update={"info": tau2_run("airline").info.model_copy(update={"domain": "mock"})}
    )
    assert "one of tauproxy's own domains" in refusal(tmp_path / "a", ours)
    mock = tau2_run("airline").model_copy(
        update={"info": tau2_run("airline").info.model_copy(update={"domain": "tau2/mock"})}
    )
    assert "not 'mock'" in refusal(tmp_path / "b", mock)


def test_an_out_directory_that_holds_something_is_not_overwritten(tmp_path: Path) -> None:
    run = saved(tau2_run("airline"), tmp_path / "run")
    out = tmp_path / "submission"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    code, _, stderr = prepare(run, out=out, check=False)
    assert code == 2 and "not an empty directory" in stderr
    assert [p.name for p in out.iterdir()] == ["mine.txt"]
