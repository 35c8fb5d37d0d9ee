"""`--record-mode record` is live: run over a cassette that already holds the very same run, every
call goes live again and none is replayed; the summary counts live, replayed and shared apart."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke_cli

RUN = ("run", "--domain", "mock", "--agent-llm", "scripted/oracle", "--user-llm", "scripted/user", "--num-tasks", "2")


def test_record_over_a_full_cassette_replays_nothing(tmp_path: Path) -> None:
    cassette = str(tmp_path / "c")
    first = invoke_cli(*RUN, "--cassette", cassette, "--save-to", str(tmp_path / "first"), "--json")
    calls = json.loads(first.stdout)["calls"]
    assert calls["live"] > 0 and calls["replayed"] == calls["shared"] == 0
    again = invoke_cli(*RUN, "--cassette", cassette, "--record-mode", "record", "--save-to", str(tmp_path / "again"))
    assert f"calls {calls['live']} live / 0 replayed / 0 shared" in again.stdout
    replay = invoke_cli(*RUN, "--cassette", cassette, "--record-mode", "replay", "--save-to", str(tmp_path / "replay"))
    assert f"calls 0 live / {calls['live']} replayed / 0 shared" in replay.stdout
