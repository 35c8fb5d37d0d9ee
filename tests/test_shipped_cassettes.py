"""Every shipped cassette verifies and replays strictly: a change that breaks determinism or the key
fails here instead of silently re-recording (fix: `tauproxy cassette rerecord DIR`, then commit)."""

from __future__ import annotations

import pytest
from conftest import REPO_ROOT, run_cli

from tauproxy.runner.manifest import shipped_cassettes

SHIPPED = shipped_cassettes(REPO_ROOT / "cassettes")


def test_there_are_shipped_cassettes() -> None:
    assert len(SHIPPED) >= 2


@pytest.mark.parametrize("cassette", SHIPPED, ids=lambda p: p.name)
def test_shipped_cassette_verifies_and_replays(cassette) -> None:
    run_cli("cassette", "verify", str(cassette))
    proc = run_cli("cassette", "replay-check", str(cassette), cwd=REPO_ROOT)
    assert "pass^k matches" in proc.stdout
