"""A pack's replay gives the same results with the cache of derived artefacts off, cold and warm, and the
warm run really reads its database from the cache (τ²'s domains: tests/tau2bench/test_tau2bench_derived_cache.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT, invoke_cli, load_stripped

from tauproxy.derived_cache import CACHE_DIR_ENV
from tauproxy.domain import pack

# The demo's baseline, cut to a few tasks: every call is in the shipped cassette.
REPLAY = (
    "run",
    "--domain",
    "airline",
    "--agent-llm",
    "scripted/oracle?error_rate=0.2",
    "--user-llm",
    "scripted/user",
    "--num-tasks",
    "3",
    "--num-trials",
    "2",
    "--seed",
    "300",
    "--cassette",
    str(REPO_ROOT / "cassettes" / "baseline-airline"),
    "--record-mode",
    "replay",
)


def _replay(save_to: Path, cache: str) -> Any:
    invoke_cli(*REPLAY, "--save-to", str(save_to), env={CACHE_DIR_ENV: cache})
    results = load_stripped(save_to / "results.json")
    assert {call["source"] for sim in results["simulations"] for call in sim["calls"]} == {"replay"}
    return results


def test_a_pack_replays_the_same_with_the_cache_off_cold_and_warm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = str(tmp_path / "cache")
    off = _replay(tmp_path / "off", "off")
    cold = _replay(tmp_path / "cold", cache)

    def not_built(*args: object) -> None:
        raise AssertionError("a warm run reads the generated database from the cache")

    monkeypatch.setattr(pack, "_load_db", not_built)
    warm = _replay(tmp_path / "warm", cache)
    assert off == cold == warm
    assert off["info"]["domain_sha256"] == warm["info"]["domain_sha256"]


def test_the_cached_state_is_the_built_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    cold = pack.load_pack("airline")
    warm = pack.load_pack("airline")
    assert warm.base_state is not cold.base_state
    assert warm.base_state.fresh().canonical_json() == cold.base_state.fresh().canonical_json()
    assert warm.content_sha256 == cold.content_sha256


def test_a_changed_pack_file_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    copy = tmp_path / "mockcopy"
    shutil.copytree(REPO_ROOT / "domains" / "mock", copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = pack.load_pack(str(copy)).base_state.record_json("users", "usr_ada")
    db = copy / "db.json"
    db.write_text(db.read_text().replace("Ada Lovelace", "Ada King"))
    after = pack.load_pack(str(copy)).base_state.record_json("users", "usr_ada")
    assert before is not None and "Ada Lovelace" in before
    assert after is not None and "Ada King" in after
