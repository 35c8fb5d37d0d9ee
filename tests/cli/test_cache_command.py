"""`tauproxy cache path | info | clear`: the directory of derived artefacts, its size, and emptying it."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke_cli

from tauproxy.derived_cache import CACHE_DIR_ENV, cache_info, cached


def test_path_info_and_clear(tmp_path: Path) -> None:
    where = tmp_path / "cache"
    env = {CACHE_DIR_ENV: str(where)}
    assert invoke_cli("cache", "path", env=env).stdout.strip() == str(where)
    empty = json.loads(invoke_cli("cache", "info", "--json", env=env).stdout)
    assert empty["directory"] == str(where) and empty["entries"] == 0
    # A pack load fills it: airline's generated database.
    invoke_cli("domains", "show", "airline", env=env)
    info = json.loads(invoke_cli("cache", "info", "--json", env=env).stdout)
    assert info["entries"] == 1 and info["size_bytes"] > 1_000_000
    assert invoke_cli("cache", "info", env=env).stdout.startswith(f"{where}  1 entries  ")
    cleared = invoke_cli("cache", "clear", env=env).stdout
    assert cleared.startswith(f"cleared {where}: 1 entries, ")
    assert json.loads(invoke_cli("cache", "info", "--json", env=env).stdout)["entries"] == 0


def test_off(tmp_path: Path) -> None:
    env = {CACHE_DIR_ENV: "off"}
    for command in ("path", "info", "clear"):
        assert invoke_cli("cache", command, env=env).stdout.startswith("off (TAUPROXY_CACHE_DIR=off)")
    assert json.loads(invoke_cli("cache", "info", "--json", env=env).stdout)["directory"] is None


def test_a_directory_that_is_a_file_is_one_line(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    for command in ("info", "clear"):
        done = invoke_cli("cache", command, env={CACHE_DIR_ENV: str(blocker)}, check=False)
        assert done.returncode == 2
        assert done.stderr.strip().count("\n") == 0 and "is not a directory" in done.stderr, done.stderr
    # A run does not stop for it: it builds what it needs.
    monkeypatch.setenv(CACHE_DIR_ENV, str(blocker))
    assert cached("n", {}, int, lambda: 1) == 1


def test_clear_removes_only_the_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path))
    cached("x", {}, str, lambda: "x")
    beside = tmp_path.parent / "beside.txt"
    beside.write_text("kept")
    invoke_cli("cache", "clear")
    assert cache_info().entries == 0 and beside.read_text() == "kept"
