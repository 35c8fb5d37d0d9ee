"""simulations.jsonl and results.json survive what real runs write into them and what crashes leave:
Unicode line breaks inside messages, a line cut by a crash (then appended to), and bytes that are not
UTF-8 (an error naming file:line, never a traceback or a silent skip)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli

from tauproxy.data_model.result import SimulationRun
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.errors import ConfigError
from tauproxy.results.run_dir import SIMULATIONS_FILE, ResultsDir, load_results
from tauproxy.runner.config import RunConfig
from tauproxy.runner.run import execute

# Line breaks to str.splitlines (so a reader splitting text would cut a record at them) that JSON
# leaves raw inside strings.
UNICODE_BREAKS = "\u2028 \u2029 \x85"


def config(save_to: Path, **changes: Any) -> RunConfig:
    base = RunConfig(
        domain="mock",
        agent=LLMConfig(model="scripted/oracle"),
        user=LLMConfig(model="scripted/user"),
        num_trials=1,
        num_tasks=3,
        save_to=save_to,
    )
    return base.model_copy(update=changes)


def saved(run_dir: Path) -> list[bytes]:
    return (run_dir / SIMULATIONS_FILE).read_bytes().split(b"\n")


def with_breaks(run: SimulationRun) -> SimulationRun:
    first = run.messages[0].model_copy(update={"content": f"before {UNICODE_BREAKS} after"})
    return run.model_copy(update={"messages": [first, *run.messages[1:]]})


def test_a_unicode_line_break_in_a_message_survives_a_resume(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first = execute(config(run_dir)).results.simulations
    changed = with_breaks(first[0])
    (run_dir / SIMULATIONS_FILE).write_text(
        "".join(sim.model_dump_json() + "\n" for sim in [changed, *first[1:]]), encoding="utf-8"
    )
    assert "\u2028" in (run_dir / SIMULATIONS_FILE).read_text(encoding="utf-8"), "written raw, as JSON allows"

    resumed = execute(config(run_dir))
    assert resumed.new_runs == [], "no trial runs again"
    assert resumed.results.simulations[0].messages[0].content == f"before {UNICODE_BREAKS} after"
    assert load_results(run_dir).simulations[0].messages[0].content == f"before {UNICODE_BREAKS} after"


def test_a_cut_last_line_is_not_glued_to_the_next_record(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first, second, third = execute(config(run_dir)).results.simulations
    cut = second.model_dump_json().encode()[:60]
    (run_dir / SIMULATIONS_FILE).write_bytes(first.model_dump_json().encode() + b"\n" + cut)

    appender = ResultsDir(run_dir)
    appender.append(third)
    appender.sync()
    assert saved(run_dir) == [first.model_dump_json().encode(), cut, third.model_dump_json().encode(), b""]
    assert set(ResultsDir(run_dir).finished()) == {first.id, third.id}, "the cut trial is skipped"

    resumed = execute(config(run_dir))
    assert [sim.id for sim in resumed.new_runs] == [second.id], "only the cut trial runs again"
    assert len(ResultsDir(run_dir).finished()) == 3


def test_a_line_cut_inside_a_character_is_a_cut_line_not_damage(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first, second, _ = execute(config(run_dir)).results.simulations
    record = with_breaks(second).model_dump_json().encode()
    cut = record[: record.index("\u2028".encode()) + 1]  # the first byte of a three-byte character
    (run_dir / SIMULATIONS_FILE).write_bytes(first.model_dump_json().encode() + b"\n" + cut)
    assert set(ResultsDir(run_dir).finished()) == {first.id}
    appender = ResultsDir(run_dir)
    appender.append(second)
    appender.sync()
    assert set(ResultsDir(run_dir).finished()) == {first.id, second.id}


def test_a_byte_that_is_not_utf8_names_file_and_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first, second, _ = execute(config(run_dir)).results.simulations
    damaged = second.model_dump_json().encode().replace(b'"id":', b'"id\xff":', 1)
    (run_dir / SIMULATIONS_FILE).write_bytes(first.model_dump_json().encode() + b"\n" + damaged + b"\n")
    file = run_dir / SIMULATIONS_FILE

    with pytest.raises(ConfigError, match=rf"^{re.escape(str(file))}:2: not UTF-8 \(byte 0xff at column 5\)"):
        ResultsDir(run_dir).finished()
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(file))}:2: "):
        execute(config(run_dir))  # the resume refuses rather than re-running or losing the trial

    (run_dir / "results.json").unlink(missing_ok=True)
    proc = invoke_cli("report", str(run_dir), check=False)
    assert proc.returncode != 0 and f"{file}:2: not UTF-8" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_results_file_that_is_not_utf8_names_file_and_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    execute(config(run_dir))
    results = run_dir / "results.json"
    lines = results.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"domain"', b'"dom\xc3ain"', 1)  # 0xc3 followed by no continuation byte
    results.write_bytes(b"\n".join(lines))

    with pytest.raises(ConfigError, match=rf"^{re.escape(str(results))}:3: not UTF-8 \(byte 0xc3 at column"):
        load_results(run_dir)
    for command in (["report", str(run_dir)], ["view", str(results)], ["diff", str(run_dir), str(run_dir)]):
        proc = invoke_cli(*command, check=False)
        assert proc.returncode != 0 and f"{results}:3: not UTF-8" in proc.stderr, command
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, command
