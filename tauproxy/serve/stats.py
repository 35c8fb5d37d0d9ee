"""Counters for `GET /stats`: hits, misses, live calls, shared answers, errors, and what was paid and saved."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class ModelStats:
    """One model name's tally. A hit is a replayed call; its recorded cost is what it saved."""

    requests: int = 0
    hits: int = 0
    misses: int = 0  # looked up and not found (auto: then went live; replay: answered 404)
    live: int = 0  # answered by the upstream (record mode goes live without a lookup)
    # answered with this server's own live answer to the identical sample (requests without a scope
    # header that repeat one): neither a hit (no recording made before it) nor a second live call
    shared: int = 0
    errors: int = 0  # upstream failures, passed through and never recorded
    live_cost_usd: float = 0.0
    saved_cost_usd: float = 0.0  # hits at their price
    shared_saved_cost_usd: float = 0.0  # shared answers at their price
    unpriced: int = 0  # calls whose price is unknown: counted, never taken as free

    def add(self, other: ModelStats) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)


class ServeStats:
    """Thread-safe tally per model name, as the client asked for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[str, ModelStats] = {}

    def _model(self, model: str) -> ModelStats:
        return self._models.setdefault(model, ModelStats())

    def request(self, model: str) -> None:
        with self._lock:
            self._model(model).requests += 1

    def hit(self, model: str, saved_usd: float | None) -> None:
        with self._lock:
            stats = self._model(model)
            stats.hits += 1
            if saved_usd is None:
                stats.unpriced += 1
            else:
                stats.saved_cost_usd += saved_usd

    def shared(self, model: str, saved_usd: float | None) -> None:
        with self._lock:
            stats = self._model(model)
            stats.shared += 1
            if saved_usd is None:
                stats.unpriced += 1
            else:
                stats.shared_saved_cost_usd += saved_usd

    def miss(self, model: str) -> None:
        with self._lock:
            self._model(model).misses += 1

    def live(self, model: str, cost_usd: float | None) -> None:
        with self._lock:
            stats = self._model(model)
            stats.live += 1
            if cost_usd is None:
                stats.unpriced += 1
            else:
                stats.live_cost_usd += cost_usd

    def error(self, model: str) -> None:
        with self._lock:
            self._model(model).errors += 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            per_model = {name: asdict(stats) for name, stats in sorted(self._models.items())}
            total = ModelStats()
            for stats in self._models.values():
                total.add(stats)
        return {**asdict(total), "per_model": per_model}
