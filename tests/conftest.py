"""Shared test helpers: run the `tauproxy` command (in-process, or as the real console script), compare
results files."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

TESTS_DIR = Path(__file__).parent
REPO_ROOT = TESTS_DIR.parent
sys.path.insert(0, str(TESTS_DIR))

# Fields that hold wall-clock readings; everything else in a results file must be reproducible.
VOLATILE_KEYS = frozenset({"timestamp", "duration", "recorded_at"})

# A test process holds τ², litellm and several domain databases at once, and its tests allocate fast
# (environments, dumps, trials): with Python's default thresholds (700, 10, 10) the cyclic collector
# scans that heap again and again, up to 44% of a τ² test file's CPU (the loop tests: 16 s of 37). Fewer,
# later collections; what is collected is the same. Only the tests' own code: a command run in-process
# (`invoke_cli`) gets Python's defaults back for its duration, as has the process it stands in for, and
# so has a process a test starts (serve, the console script, τ²'s, Ray's): a command is tested as it runs,
# never with garbage kept longer than a user's process would keep it.
PYTHON_GC_THRESHOLDS = gc.get_threshold()
TEST_GC_THRESHOLDS = (50_000, 20, 20)
gc.set_threshold(*TEST_GC_THRESHOLDS)


@contextlib.contextmanager
def as_a_command_process() -> Iterator[None]:
    """A command run in this process gets the collector its own process would have (Python's
    thresholds), and this process gets its collector back after: the CLI freezes what a run loaded
    (cli/run_view.py), for its own short process only, so what it froze here is unfrozen."""
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    gc.set_threshold(*PYTHON_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        # Counting the frozen walks them all (about 50 ms after a run): with none before, the
        # unfreeze (a list splice) is done without asking.
        if frozen == 0 or gc.get_freeze_count() > frozen:
            gc.unfreeze()


@pytest.fixture(autouse=True)
def nothing_left_frozen() -> Iterator[None]:
    """A test that leaves objects frozen changes every later test on its worker (none of them is
    collected again; tests/runner/test_paused_collector.py sees a freeze that is not its own): run
    commands in-process with `as_a_command_process`, which gives the collector back."""
    frozen = gc.get_freeze_count()
    yield
    left = gc.get_freeze_count() - frozen
    if left > 0:
        gc.unfreeze()
        pytest.fail(f"the test left {left} objects frozen (run commands in-process with as_a_command_process)")


# The cache of derived artefacts (tauproxy/derived_cache.py) goes to one temporary directory per test
# session, never the user's own: set before any test runs, inherited by every process a test starts.
# pytest-xdist's workers inherit the controller's environment, so they share it, as concurrent runs do.
_SESSION_CACHE: Path | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _SESSION_CACHE
    if hasattr(config.option, "loadscopereorder"):
        # pytest-xdist's scheduler would sort the files by their number of tests, most first, and so
        # undo `LONGEST_FIRST` below: keep the collection order (`--no-loadscope-reorder`, set here so
        # that `.ci/run`'s command stays the README's).
        config.option.loadscopereorder = False
    if hasattr(config, "workerinput") and os.environ.get("TAUPROXY_TEST_CACHE_DIR"):
        os.environ["TAUPROXY_CACHE_DIR"] = os.environ["TAUPROXY_TEST_CACHE_DIR"]
        return
    import tempfile

    _SESSION_CACHE = Path(tempfile.mkdtemp(prefix="tauproxy-test-cache-"))
    os.environ["TAUPROXY_CACHE_DIR"] = os.environ["TAUPROXY_TEST_CACHE_DIR"] = str(_SESSION_CACHE)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SESSION_CACHE is not None:
        import shutil

        shutil.rmtree(_SESSION_CACHE, ignore_errors=True)


def tauproxy_bin() -> str:
    return str(Path(sys.executable).parent / "tauproxy")


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, check: bool = True, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """The real console script in its own process: for what needs a process (signals, kill -9, serve,
    what a fresh process imports). Everything else uses `invoke_cli`, which is the same command in-process."""
    full_env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})}
    proc = subprocess.run(
        [tauproxy_bin(), *args], capture_output=True, text=True, env=full_env, cwd=cwd, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"tauproxy {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


# Modules that hold process-wide state a CLI run may load or set: an in-process run must leave them as it
# found them. Domain packs outside the package import as `tauproxy_ext_<dir name>`: two tests' copies of a
# domain share that name, so the second would get the first one's tools.
EXTERNAL_DOMAIN_PREFIX = "tauproxy_ext_"
# Importing τ²'s orchestrator sets litellm globals for the whole process (tauproxy/tau2bench/peer.py).
TAU2_LITELLM_SETTER = "tau2.utils.llm_utils"


def invoke_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, check: bool = True, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`tauproxy *args` in this process, through the console script's own `main()` (its exit codes and
    one-line errors included): what `run_cli` returns, without a process start (~1 s, more when litellm
    loads). `timeout` is accepted for symmetry with `run_cli`; pytest-timeout bounds a hung call."""
    del timeout
    from tauproxy_cli.main import main

    tau2_settings_loaded = TAU2_LITELLM_SETTER in sys.modules
    _forget_external_domains()
    full_env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})}
    runner = CliRunner()
    try:
        with (
            contextlib.chdir(cwd or Path.cwd()),
            runner.isolation(env=full_env) as (out, err, _),
            _console_width(full_env.get("COLUMNS", os.environ.get("COLUMNS"))),
            as_a_command_process(),
        ):
            # As in a started process: stderr escapes what it cannot encode (a non-UTF-8 argument
            # arrives as a lone surrogate), where the runner's stream would raise.
            sys.stderr.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
            code, crash = _exit_code(main, list(args))
            sys.stdout.flush()
            sys.stderr.flush()
            stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    finally:
        _forget_external_domains()
    proc = subprocess.CompletedProcess(["tauproxy", *args], code, stdout, stderr + crash)
    if not tau2_settings_loaded and TAU2_LITELLM_SETTER in sys.modules:
        raise AssertionError(
            f"tauproxy {' '.join(args)} imported {TAU2_LITELLM_SETTER}, which sets litellm globals for the "
            "whole process: run it with run_cli"
        )
    if check and proc.returncode != 0:
        raise AssertionError(f"tauproxy {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


@contextlib.contextmanager
def _console_width(columns: str | None) -> Iterator[None]:
    """The CLI's rich consoles read COLUMNS once, when their module is imported; a process started for
    this call would read it now (output being a pipe: PIPE_WIDTH without it). Give them this call's width."""
    import tauproxy_cli.cassette
    import tauproxy_cli.output
    from tauproxy_cli.output import console_width

    consoles = [
        tauproxy_cli.output.out_console,
        tauproxy_cli.output.err_console,
        tauproxy_cli.cassette._out,
        tauproxy_cli.cassette._err,
    ]
    before = [console._width for console in consoles]
    for console in consoles:
        console.width = console_width(columns, is_terminal=False)
    try:
        yield
    finally:
        for console, width in zip(consoles, before, strict=True):
            console._width = width


def _exit_code(main: Any, args: list[str]) -> tuple[int, str]:
    """What the process would exit with, and the traceback Python would print if it crashed."""
    try:
        main(args, prog_name="tauproxy")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0, ""
        sys.stderr.write(f"{exc.code}\n")
        return 1, ""
    except Exception:
        return 1, traceback.format_exc()
    return 0, ""


def _forget_external_domains() -> None:
    for name in [name for name in sys.modules if name.startswith(EXTERNAL_DOMAIN_PREFIX)]:
        del sys.modules[name]


def report_json(run_dir: Path) -> dict[str, Any]:
    return json.loads(invoke_cli("report", str(run_dir), "--json").stdout)


def strip_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_volatile(v) for k, v in value.items() if k not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [strip_volatile(v) for v in value]
    return value


def oracle_run_args(
    domain: str,
    api_base: str,
    cassette: Path,
    mode: str,
    save_to: Path,
    *,
    num_tasks: int,
    num_trials: int,
    llm_args: dict[str, Any] | None = None,
) -> list[str]:
    """`tauproxy run` of a τ² domain with the τ² oracle (tests/tau2bench/tau2_oracle.py) as agent and user."""
    args = json.dumps({"api_base": api_base, "temperature": 0, **(llm_args or {})})
    return [
        *("run", "--domain", domain, "--agent-llm", "openai/oracle-e40", "--user-llm", "openai/oracle-user"),
        *("--agent-llm-args", args, "--user-llm-args", args),
        *("--num-trials", str(num_trials), "--num-tasks", str(num_tasks)),
        *("--cassette", str(cassette), "--record-mode", mode, "--save-to", str(save_to)),
    ]


def load_stripped(path: Path) -> Any:
    return strip_volatile(json.loads(path.read_text()))


@pytest.fixture(scope="session")
def oracle_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished run (mock, scripted oracle, every task once), made once for the tests that only read
    a run; a test that changes a run makes its own."""
    run_dir = tmp_path_factory.mktemp("oracle_run") / "run"
    invoke_cli(
        "run", "--domain", "mock", "--agent-llm", "scripted/oracle", "--num-trials", "1", "--save-to", str(run_dir)
    )
    return run_dir


@pytest.fixture
def stub():
    from stub_upstream import StubUpstream

    server = StubUpstream().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """One local Ray instance (2 CPUs, so 2 workers, no dashboard) for the `ray` tests of a module (all of
    them are in tests/ray/test_ray_executor.py), started in this process and stopped after the module, so
    that its processes do not idle beside the rest of the session; yields its address. A run joins it with
    `--ray-address`, as a subprocess (`run_cli`) or in-process (`invoke_cli`, where the run uses this
    process's Ray session and its warm workers)."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # as the runner does: no usage report
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


# The files that take longest, longest first (seconds of one file on one worker, both workers busy). `--dist
# loadfile` hands whole files to the workers in collection order (pytest_configure turns xdist's own
# reordering off), so a long file collected last (test_typing.py sorts near the end) would run alone while
# the other worker idles; starting the longest first keeps both busy to the end. Order only: every file
# still runs, and a file's tests keep their own order.
LONGEST_FIRST = (
    "tests/serve/test_serve_tau2_domains.py",  # 81 s
    "tests/ray/test_ray_executor.py",  # 73 s
    "tests/tau2bench/test_tau2bench_cow.py",  # 44 s
    "tests/tau2bench/test_tau2bench_interop.py",  # 33 s
    "tests/cli/test_bad_input_table.py",  # 27 s
    "tests/test_fault_matrix.py",  # 26 s
    "tests/test_typing.py",  # 24 s
    "tests/proxy/test_cost.py",  # 24 s
    "tests/tau2bench/test_tau2bench_cow_evaluator.py",  # 22 s
    "tests/proxy/test_record_replay.py",  # 22 s
    "tests/tau2bench/test_tau2bench_reward.py",  # 18 s
    "tests/results/test_trial_durability.py",  # 16 s
    "tests/reports/test_html_chromium.py",  # 16 s
    "tests/tau2bench/test_tau2bench_loop.py",  # 15 s
    "tests/reports/test_chromium_index_and_comparison.py",  # 13 s
    "tests/serve/test_serve_shutdown.py",  # 11 s
    "tests/tau2bench/test_tau2bench_run_options.py",  # 9 s
    "tests/serve/test_serve_guards.py",  # 9 s
    "tests/tau2bench/test_tau2bench_judge.py",  # 9 s
    "tests/tau2bench/test_tau2bench_solo_parity.py",  # 9 s
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    root = Path(__file__).resolve().parent.parent

    def place(item: pytest.Item) -> int:
        path = item.path.resolve()
        relative = path.relative_to(root).as_posix() if path.is_relative_to(root) else ""
        return rank.get(relative, len(LONGEST_FIRST))

    items.sort(key=place)  # stable: within a file, and among the rest, the collected order stays
