"""The progress bar's line, from a typed state (cli/run_view.py), and that it stays off without a terminal.

The line is a pure function of ProgressState and the clock, so these tests feed trials in and read
the text; rich only draws it. The last two tests run `tauproxy run` without a terminal (quiet) and
under a pseudo-terminal (the bar shows).
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
from pathlib import Path

import pytest
from conftest import REPO_ROOT, invoke_cli, tauproxy_bin

from tauproxy.data_model.call import CallRecord
from tauproxy.data_model.result import RewardInfo, SimulationRun, TerminationReason
from tauproxy_cli.run_view import ProgressState, progress_line


def call(source: str, cost: float | None) -> CallRecord:
    return CallRecord(index=0, role="agent", model="m", key="k", sample_key="s", source=source, cost_usd=cost)


def trial(
    task: str,
    n: int,
    reward: float | None,
    calls: list[CallRecord] | None = None,
    termination: TerminationReason = TerminationReason.USER_STOP,
) -> SimulationRun:
    return SimulationRun(
        id=f"{task}:{n}",
        task_id=task,
        trial=n,
        seed=n,
        termination_reason=termination,
        messages=[],
        reward_info=None if reward is None else RewardInfo(reward=reward),
        calls=calls or [],
    )


def test_before_the_first_trial_the_line_says_it_is_starting() -> None:
    state = ProgressState(total=8, started=0.0)
    line = progress_line(state, now=7.0)
    assert line.startswith("0/8") and "starting" in line
    assert "ETA" not in line, "no pace yet, so no ETA to invent"
    assert "pass^1 -" in line and "calls 0 live / 0 replayed" in line


def test_done_eta_spend_pass_rate_and_calls() -> None:
    state = ProgressState(total=6, started=100.0)
    state.finish(trial("a", 0, 1.0, [call("live", 0.25), call("replay", 0.5)]))
    state.finish(trial("a", 1, 0.0, [call("live", 0.125)]))
    state.finish(trial("b", 0, 1.0, [call("replay", 0.5), call("replay", 0.5)]))
    line = progress_line(state, now=130.0)
    # 3 trials in 30 s: 10 s each, 3 to go.
    assert line.startswith("3/6") and "ETA 0:30" in line
    assert "spent $0.3750" in line, "live calls only: replayed ones cost nothing now"
    # pass^1 is the mean over tasks: a 1/2, b 1/1 -> 0.75 (the trial mean would say 0.667).
    assert "pass^1 0.750" in line
    assert "calls 2 live / 3 replayed" in line


def test_shared_calls_are_counted_apart_and_cost_nothing_now() -> None:
    """A call answered by this run's own live call to the identical sample: not replayed, not paid."""
    state = ProgressState(total=2, started=0.0)
    state.finish(trial("a", 0, 1.0, [call("live", 0.25), call("shared", 0.25), call("replay", 0.5)]))
    line = progress_line(state, now=10.0)
    assert "calls 1 live / 1 replayed / 1 shared" in line and "spent $0.2500" in line


def test_resumed_trials_count_toward_pass_rate_not_toward_spend_or_pace() -> None:
    state = ProgressState(total=4, started=0.0)
    state.resume(trial("a", 0, 0.0, [call("live", 9.0)]))
    state.resume(trial("a", 1, 0.0, [call("live", 9.0)]))
    assert "starting" in progress_line(state, now=50.0) and progress_line(state, 50.0).startswith("2/4")
    state.finish(trial("b", 0, 1.0, [call("live", 0.5)]))
    line = progress_line(state, now=20.0)
    assert line.startswith("3/4") and "ETA 0:20" in line, "one new trial in 20 s, one to go"
    assert "spent $0.5000" in line and "calls 1 live / 0 replayed" in line
    assert "pass^1 0.500" in line, "a 0/2 and b 1/1"


def test_the_budget_is_shown_beside_the_spend() -> None:
    state = ProgressState(total=2, started=0.0, budget=2.0)
    state.finish(trial("a", 0, 1.0, [call("live", 0.5)]))
    assert "spent $0.5000 of $2.0000" in progress_line(state, now=1.0)


def test_an_unpriced_live_call_makes_the_spend_unknown_never_zero() -> None:
    state = ProgressState(total=2, started=0.0)
    state.finish(trial("a", 0, 1.0, [call("live", None), call("live", 0.25)]))
    line = progress_line(state, now=1.0)
    assert "spent unknown ($0.2500 + 1 unpriced)" in line and "spent $" not in line


def test_infrastructure_errors_are_counted_apart_and_not_scored() -> None:
    state = ProgressState(total=3, started=0.0)
    state.finish(trial("a", 0, 1.0))
    state.finish(trial("b", 0, None, termination=TerminationReason.INFRASTRUCTURE_ERROR))
    line = progress_line(state, now=2.0)
    assert "pass^1 1.000" in line and "1 excluded (infrastructure)" in line


def test_hours_in_the_eta() -> None:
    state = ProgressState(total=1001, started=0.0)
    state.finish(trial("a", 0, 1.0))
    assert "ETA 2:46:40" in progress_line(state, now=10.0)  # 1000 trials x 10 s


@pytest.mark.slow
def test_no_bar_without_a_terminal(tmp_path: Path) -> None:
    proc = invoke_cli(
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "scripted/oracle",
        "--num-trials",
        "2",
        "--save-to",
        str(tmp_path / "run"),
    )
    assert "━" not in proc.stderr and "ETA" not in proc.stderr and "calls 0 live" not in proc.stderr
    assert proc.stderr.strip() == "", proc.stderr
    assert "pass^1" in proc.stdout


@pytest.mark.slow
def test_the_bar_shows_on_a_terminal(tmp_path: Path) -> None:
    prices = REPO_ROOT / "cassettes" / "demo-prices.json"
    args = [
        tauproxy_bin(),
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "scripted/oracle",
        "--num-trials",
        "2",
        "--prices",
        str(prices),
        "--max-cost",
        "50",
        "--save-to",
        str(tmp_path / "run"),
    ]
    leader, follower = pty.openpty()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COLUMNS": "200", "TERM": "xterm"}
    proc = subprocess.Popen(args, stdin=follower, stdout=follower, stderr=follower, env=env, close_fds=True)
    os.close(follower)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            proc.kill()
            pytest.fail("no output from tauproxy run under a terminal within 60 s")
        try:
            data = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=60) == 0
    os.close(leader)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace"))
    assert "20/20" in text and "pass^1 1.000" in text, text[-3000:]
    assert re.search(r"spent \$\d+\.\d{4} of \$50\.0000", text), text[-3000:]
    assert "calls " in text and " live / " in text


@pytest.mark.parametrize("width", [200, 100, 80, 60])
def test_a_narrow_terminal_cuts_neither_the_domain_nor_the_numbers(width: int) -> None:
    from io import StringIO

    from rich.console import Console

    from tauproxy_cli.run_view import fit_bar, progress_bar

    state = ProgressState(total=40, started=0.0, budget=1.0)
    for index in range(20):
        state.finish(trial(f"t{index}", 0, 1.0, [call("live", 0.01)]))
    line = progress_line(state, now=20.0)
    out = StringIO()
    console = Console(file=out, width=width, force_terminal=True, color_system=None)
    progress, bar_column = progress_bar(console, "tau2/airline", transient=False)
    fit_bar(bar_column, width, "tau2/airline", line)
    progress.add_task("tau2/airline", total=40, completed=20, line=line)
    console.print(progress.make_tasks_table(progress.tasks))
    drawn = out.getvalue()
    assert "…" not in drawn and "tau2/airline" in drawn
    assert " ".join(drawn.split()).replace("━", "").replace("╸", "").split()[1:] == line.split(), drawn
    assert all(len(row) <= width for row in drawn.splitlines())
