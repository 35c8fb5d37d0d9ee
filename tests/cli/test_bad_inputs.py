"""Every bad input is one clear line on stderr and exit 2: no traceback, no work done, no data lost.

The CLI cases run the `tauproxy` command in-process, one after the other from one module fixture, in
one shared directory; each test then checks one case.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO_ROOT, invoke_cli

from tauproxy.domain.pack import load_pack
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.proxy.pricing import ModelPrice, load_price_file
from tauproxy.runner.config import RunConfig, check_trial_plan
from tauproxy.runner.defaults import NUM_TRIALS_LIMIT, PLANNED_TRIALS_LIMIT
from tauproxy.structured_file import read_mapping_file

RUN = ("run", "--agent-llm", "scripted/oracle", "--num-tasks", "1")
SHIPPED = REPO_ROOT / "cassettes" / "baseline-airline"
KEPT = "results of an earlier run\n"  # what `afile` holds; no bad input may change it


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    names: tuple[str, ...]  # what the message must name: the flag, the value, the file


CASES: dict[str, Case] = {
    "num-trials-over-limit": Case(
        (*RUN, "--num-trials", "100000000", "--save-to", "run-big"),
        ("--num-trials", "100000000", f"limit of {NUM_TRIALS_LIMIT}"),
    ),
    "max-cost-negative": Case((*RUN, "--max-cost", "-5"), ("--max-cost", "-5")),
    "max-concurrency-over-limit": Case((*RUN, "--max-concurrency", "100000"), ("--max-concurrency", "100000")),
    "max-concurrency-zero": Case((*RUN, "--max-concurrency", "0"), ("--max-concurrency",)),
    "num-tasks-zero": Case(("run", "--agent-llm", "scripted/oracle", "--num-tasks", "0"), ("--num-tasks",)),
    "save-to-a-file": Case((*RUN, "--save-to", "afile"), ("--save-to", "afile", "is a file")),
    "save-to-under-a-file": Case((*RUN, "--save-to", "afile/run"), ("--save-to", "afile/run", "afile")),
    "cassette-a-file": Case((*RUN, "--cassette", "afile"), ("--cassette", "afile", "is a file")),
    "tasks-file-a-directory": Case((*RUN, "--tasks-file", "adir"), ("--tasks-file", "adir")),
    "prices-bad-yaml": Case((*RUN, "--prices", "bad.yaml"), ("bad.yaml:3:1: not valid YAML",)),
    "prices-negative": Case((*RUN, "--prices", "negative.yaml"), ("negative.yaml", "'gpt-x'", "-1")),
    "llm-args-bad-connection": Case((*RUN, "--user-llm-args", '{"timeout": "soon"}'), ("--user-llm-args", "timeout")),
    "estimate-num-trials-over-limit": Case(
        ("estimate", "--agent-llm", "scripted/oracle", "--num-trials", "5000"), ("--num-trials", "5000")
    ),
    "estimate-history-missing": Case(
        ("estimate", "--agent-llm", "scripted/oracle", "--history", "missing"), ("missing",)
    ),
    "serve-port-out-of-range": Case(("serve", "--record-mode", "off", "--port", "99999"), ("--port", "99999")),
    "serve-upstream-map-bad-yaml": Case(
        ("serve", "--record-mode", "off", "--upstream-map", "bad.yaml"), ("bad.yaml:3:1: not valid YAML",)
    ),
    "serve-prices-negative": Case(
        ("serve", "--record-mode", "off", "--port", "0", "--prices", "negative.yaml"), ("negative.yaml", "'gpt-x'")
    ),
    "serve-once-without-a-cassette": Case(("serve", "--record-mode", "once"), ("--record-mode once", "--cassette")),
    "replay-without-a-cassette": Case(
        (*RUN, "--record-mode", "replay", "--save-to", "run-replay"), ("--record-mode replay", "--cassette")
    ),
    "cassette-show-not-hex": Case(("cassette", "show", str(SHIPPED), "zzzz"), ("'zzzz'", "hex")),
    "cassette-show-one-digit": Case(("cassette", "show", str(SHIPPED), "3"), ("'3'", "longer prefix")),
    "unknown-domain-live": Case(
        ("run", "--domain", "tau2/nowhere", "--agent-llm", "openai/gpt-4.1", "--user-llm", "openai/gpt-4.1"),
        ("'nowhere'",),
    ),
    "report-missing": Case(("report", "no-such-run"), ("no-such-run",)),
    "view-not-json": Case(("view", "notes.txt"), ("notes.txt",)),
}


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: str
    stderr: str


def make_inputs(directory: Path) -> None:
    (directory / "afile").write_text(KEPT)
    (directory / "adir").mkdir()
    (directory / "bad.yaml").write_text("gpt-x: [1,\n  b: 2\n")
    (directory / "bad.json").write_text('{"gpt-x": 1,,}')
    (directory / "negative.yaml").write_text("gpt-x:\n  input_cost_per_token: -1\n  output_cost_per_token: 0\n")
    (directory / "notes.txt").write_text("not JSON at all\n")


def invoke(args: tuple[str, ...], cwd: Path) -> Outcome:
    # A bad input that slipped through would start a run or a server: pytest-timeout ends it as a failure.
    proc = invoke_cli(*args, env={"COLUMNS": "100"}, cwd=cwd, check=False)
    return Outcome(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("bad_inputs")
    make_inputs(directory)
    return directory


@pytest.fixture(scope="module")
def outcomes(workdir: Path) -> dict[str, Outcome]:
    return {name: invoke(case.args, workdir) for name, case in CASES.items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_clear_line(name: str, outcomes: dict[str, Outcome]) -> None:
    case, outcome = CASES[name], outcomes[name]
    shown = f"tauproxy {' '.join(case.args)}\nexit {outcome.returncode}\nstderr:\n{outcome.stderr}"
    assert outcome.returncode == 2, shown
    assert "Traceback" not in outcome.stderr, shown
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) <= 2, shown
    assert lines[-1].startswith("error: "), shown
    for expected in case.names:
        assert expected in outcome.stderr, f"{expected!r} not named\n{shown}"


def test_a_refused_domain_is_said_before_any_model_check(outcomes: dict[str, Outcome]) -> None:
    # A live run announces its model check (litellm takes seconds to load); a domain refused first
    # must be the whole of stderr, not follow an announcement of work that never starts.
    outcome = outcomes["unknown-domain-live"]
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), outcome.stderr
    assert "checking the models" not in outcome.stderr


@pytest.mark.slow
def test_over_limit_trials_fail_at_once_without_planning(workdir: Path, outcomes: dict[str, Outcome]) -> None:
    # "Without planning" itself: test_prepare_refuses_too_many_planned_trials_before_building_them.
    outcome = outcomes["num-trials-over-limit"]
    assert outcome.returncode == 2, outcome
    assert not (workdir / "run-big").exists()  # refused before the run directory was made
    assert not (workdir / "run-replay").exists()  # strict replay with no cassette ran nothing
    assert outcome.stdout == ""  # no progress, no trial


@pytest.mark.slow
def test_bad_inputs_lose_no_data(workdir: Path, outcomes: dict[str, Outcome]) -> None:
    assert outcomes["save-to-a-file"].returncode == 2
    assert (workdir / "afile").read_text() == KEPT
    assert [p.name for p in (workdir / "adir").iterdir()] == []


# --- read_mapping_file: one line, pointing at the spot ------------------------------------------------


@pytest.mark.parametrize(
    ("suffix", "text", "expected"),
    [
        (".yaml", "a: [1,\n  b: 2\n", ":3:1: not valid YAML (expected ',' or ']', but got '<stream end>')"),
        (".yaml", "a: 1\nb: c: d\n", ":2:5: not valid YAML (mapping values are not allowed here)"),
        (".yml", "a:\n\tb: 1\n", ":2:1: not valid YAML (found character '\\t' that cannot start any token)"),
        (".yaml", "a: 1\n---\nb: 2\n", ":2:1: not valid YAML (expected a single document in the stream, but found"),
        (".yaml", "a: !!python/object:os.system x\n", ":1:4: not valid YAML (could not determine a constructor"),
        (".yaml", 'x: 1\ny: "\x07"\n', ":2:5: not valid YAML (unacceptable character #x0007)"),
        (".json", '{"a": 1,,}', ":1:9: not valid JSON (Expecting property name enclosed in double quotes)"),
        (".json", '{\n  "a": 1\n  "b": 2}', ":3:3: not valid JSON (Expecting ',' delimiter)"),
        (".json", "[" * 100_000, ": not valid JSON (nested too deeply)"),
    ],
)
def test_syntax_errors_are_one_line_with_file_line_and_column(
    tmp_path: Path, suffix: str, text: str, expected: str
) -> None:
    path = tmp_path / f"settings{suffix}"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        read_mapping_file(path, "prices file")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}{expected}"), message


def test_unreadable_settings_files_are_one_line(tmp_path: Path) -> None:
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00a")
    for path in (binary, tmp_path / "missing.json", tmp_path):
        with pytest.raises(ConfigError) as caught:
            read_mapping_file(path, "prices file")
        assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)


# --- prices: never negative, never NaN ----------------------------------------------------------------


@pytest.mark.parametrize("bad", [-1e-6, -5.0, math.nan, math.inf])
@pytest.mark.parametrize("field", ["input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost"])
def test_model_price_refuses_negative_and_non_finite(field: str, bad: float) -> None:
    prices = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, field: bad}
    with pytest.raises(ValueError):
        ModelPrice.model_validate(prices)


def test_model_price_takes_zero() -> None:
    assert ModelPrice(input_cost_per_token=0, output_cost_per_token=0, cache_read_input_token_cost=0)


@pytest.mark.parametrize(
    "entry",
    ["input_cost_per_token: -1\n  output_cost_per_token: 0", "input_cost_per_token: .nan\n  output_cost_per_token: 0"],
)
def test_a_bad_price_file_names_the_file_and_model(tmp_path: Path, entry: str) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(f"ok-model:\n  input_cost_per_token: 0\n  output_cost_per_token: 0\ngpt-x:\n  {entry}\n")
    with pytest.raises(ConfigError) as caught:
        load_price_file(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: model 'gpt-x', field input_cost_per_token: ") and "\n" not in message


# --- run limits, in-process ---------------------------------------------------------------------------


def config(**fields: object) -> RunConfig:
    return RunConfig(domain="mock", agent=LLMConfig(model="scripted/oracle"), **fields)  # type: ignore[arg-type]


def test_run_config_bounds_trials_and_concurrency() -> None:
    assert config(num_trials=NUM_TRIALS_LIMIT).num_trials == NUM_TRIALS_LIMIT
    for fields in (
        {"num_trials": NUM_TRIALS_LIMIT + 1},
        {"max_concurrency": 10**6},
        {"max_cost": -0.01},
        {"max_cost": math.inf},
    ):
        with pytest.raises(ValueError):
            config(**fields)


def test_check_trial_plan_refuses_more_than_the_limit_of_trials() -> None:
    check_trial_plan(config(num_trials=100), PLANNED_TRIALS_LIMIT // 100)
    with pytest.raises(ConfigError, match=r"101 tasks x 1000 trials is 101,000 trials, over the limit of 100,000"):
        check_trial_plan(config(num_trials=1000), 101)


def test_prepare_refuses_too_many_planned_trials_before_building_them(tmp_path: Path) -> None:
    from tauproxy.runner.run import prepare

    task = load_pack("mock").tasks[0]
    tasks = [task.model_copy(update={"id": f"t{i}"}).model_dump(mode="json", exclude_none=True) for i in range(101)]
    tasks_file = tmp_path / "tasks.json"
    tasks_file.write_text(json.dumps(tasks))
    with pytest.raises(ConfigError, match="over the limit"):
        prepare(config(num_trials=NUM_TRIALS_LIMIT, tasks_file=tasks_file, save_to=tmp_path / "run"))
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"max_cost": math.nan}, "--max-cost nan: give a finite number"),
        ({"max_cost": -0.5}, "--max-cost -0.5 is below the minimum of 0"),
        ({"num_trials": 1001}, "--num-trials 1001 is over the limit of 1000"),
        ({"max_concurrency": 1025}, "--max-concurrency 1025 is over the limit of 1024"),
        ({"agent_llm_args": '{"api_base": 3}'}, "--agent-llm-args: api_base: Input should be a valid string"),
    ],
)
def test_run_flags_that_run_config_refuses_are_one_line_naming_the_flag(
    changes: dict[str, object], message: str
) -> None:
    from dataclasses import replace

    from tauproxy_cli.run_flags import RunFlags
    from tauproxy_cli.run_setup import build_run_config

    with pytest.raises(ConfigError) as caught:
        build_run_config(replace(RunFlags(agent_llm="scripted/oracle"), **changes))  # type: ignore[arg-type]
    assert str(caught.value) == message
