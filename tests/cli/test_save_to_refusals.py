"""`run --save-to DIR` resumes a run of the same configuration and refuses anything else with one line,
leaving what is there as it was: a results.json that is no tauproxy run's, another run, a damaged run.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import invoke_cli

RUN = ("run", "--agent-llm", "scripted/oracle", "--num-tasks", "1")


def refused(save_to: Path, *extra: str) -> str:
    proc = invoke_cli(*RUN, "--save-to", str(save_to), *extra, check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    return lines[0]


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("results.json", b"\xff\xfe\x00garbage", "not UTF-8"),
        ("results.json", b"{not json", "is not from a tauproxy run (not JSON: Expecting property name"),
        ("results.json", b"[" * 5000, "nested too deeply"),
        ("results.json", b'{"simulations": []}', "is not from a tauproxy run (no run settings in it)"),
        ("results.json", b'{"info": {"domain": 3}}', "is not from a tauproxy run (field "),
        ("run.json", b"{}", "is not from a tauproxy run (field "),
    ],
)
def test_save_to_over_what_is_no_tauproxy_run_refuses_and_keeps_it(
    tmp_path: Path, name: str, content: bytes, says: str
) -> None:
    save_to = tmp_path / "run"
    save_to.mkdir()
    (save_to / name).write_bytes(content)
    message = refused(save_to)
    assert message.startswith(f"error: --save-to {save_to}: ") and says in message, message
    assert message.endswith(f"use another --save-to or remove {save_to / name}")
    assert (save_to / name).read_bytes() == content
    assert sorted(p.name for p in save_to.iterdir()) == [name]


def test_save_to_over_a_finished_run_of_another_configuration_refuses(tmp_path: Path) -> None:
    save_to = tmp_path / "run"
    invoke_cli(*RUN, "--save-to", str(save_to))
    before = {p.name: p.read_bytes() for p in save_to.iterdir()}
    assert refused(save_to, "--user-llm", "scripted/silent").startswith(f"error: {save_to} holds a run with other")
    (save_to / "run.json").unlink()  # its results.json still says which run it was
    del before["run.json"]
    assert refused(save_to, "--user-llm", "scripted/silent").startswith(f"error: {save_to} holds a run with other")
    assert {p.name: p.read_bytes() for p in save_to.iterdir()} == before
    # The same configuration resumes (here: one more trial) from the results.json alone.
    proc = invoke_cli(*RUN, "--save-to", str(save_to), "--num-trials", "2")
    assert "resuming: 1 of 2 trials done" in proc.stdout + proc.stderr
    assert len(json.loads((save_to / "results.json").read_text())["simulations"]) == 2
