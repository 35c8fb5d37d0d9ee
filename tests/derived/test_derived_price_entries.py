"""The price map's entries a run prices with, kept in the cache of derived artefacts (proxy/pricing.py
`map_entries`): the same prices with the cache off, cold and warm, and a warm read parses no map."""

from __future__ import annotations

from pathlib import Path

import pytest

from tauproxy.data_model.call import Usage
from tauproxy.derived_cache import CACHE_DIR_ENV, cache_info
from tauproxy.proxy import pricing
from tauproxy.proxy.pricing import Pricing

MODELS = ["openai/gpt-4o", "gpt-4o-mini", "anthropic/claude-3-5-sonnet-20240620", "openai/no-such-model"]
USAGE = Usage(prompt_tokens=1200, completion_tokens=300, total_tokens=1500, cached_tokens=200)


def prices(monkeypatch: pytest.MonkeyPatch, cache: str) -> list[tuple[object, str, float | None]]:
    monkeypatch.setenv(CACHE_DIR_ENV, cache)
    fresh = Pricing()  # its own per-model memo: every model is looked up again
    found = []
    for model in MODELS:
        price, source = fresh.price_of(model)
        found.append((price, source, fresh.cost(model, USAGE).usd))
    return found


def test_the_same_prices_with_the_cache_off_cold_and_warm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if pricing.litellm_price_map_path() is None:
        pytest.skip("litellm's bundled price map is not installed")
    off = prices(monkeypatch, "off")
    cold = prices(monkeypatch, str(tmp_path / "cache"))
    assert cache_info().entries == len(MODELS)
    parsed: list[int] = []
    monkeypatch.setattr(pricing, "read_litellm_price_map", lambda: parsed.append(1) or {})
    warm = prices(monkeypatch, str(tmp_path / "cache"))
    assert parsed == []  # every entry came from the cache
    assert off == cold == warm
    assert off[0][0] is not None and off[-1] == (None, "unknown", None)
