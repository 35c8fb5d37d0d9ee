"""What a call costs, in USD, from its usage and a price table.

Prices come from litellm's bundled price map, read as a JSON file (litellm is never imported for
it), or from a user's `--prices` file that overrides it. A model with no price costs `None`
("unknown"), never 0. Scripted and local models cost 0 by declaration.

The map is 3.5 MB of JSON. A `Pricing` reads only the entries of the models it prices, kept across
processes in the cache of derived artefacts (`map_entries`); the whole map is parsed at most once per
process and shared: to fill that cache, and by `map_provider`, which tells the provider litellm files
a bare model name under (serve passes chat calls of OpenAI's models through without litellm,
wire_apis/chat_route.py).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field, ValidationError

from tauproxy.data_model.call import Cost, ModelCall, Usage
from tauproxy.derived_cache import cached, files_digest
from tauproxy.errors import ConfigError
from tauproxy.structured_file import read_mapping_file

FREE_PREFIXES = ("scripted/", "local/")
# The two costs that are the same for every call they price (Cost is frozen: shared, never changed).
FREE = Cost(0.0, "free by declaration")
UNKNOWN = Cost(None, "unknown")
LITELLM_MAP_FILE = "model_prices_and_context_window_backup.json"


# A price is USD per token: never negative (a negative price would hide spend from --max-cost), never NaN.
Price = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class ModelPrice(BaseModel):
    input_cost_per_token: Price
    output_cost_per_token: Price
    cache_read_input_token_cost: Price | None = None


class PriceAlias(BaseModel):
    """`{"same_as": "gpt-4.1"}` in a prices file: price this model like that one from the price map."""

    same_as: str


class Pricing:
    """Prices calls. Thread-safe; the litellm map is read on the first priced call only (map_entries)."""

    def __init__(
        self, overrides: dict[str, ModelPrice | PriceAlias] | None = None, override_source: str | None = None
    ) -> None:
        self._overrides = overrides or {}
        self._override_source = override_source
        # Each model's rate (`_rate`), once found: a replay prices every hit, and serve answers hits in
        # a fraction of a millisecond, which validating a price-map entry per call would double.
        self._rates: dict[str, tuple[ModelPrice | None, str]] = {}

    @classmethod
    def from_file(cls, path: Path | None) -> Pricing:
        if path is None:
            return cls()
        return cls(*load_price_file(path))

    @property
    def source(self) -> str:
        """Names every table in use, for reports: the override file and the litellm map version."""
        base = f"litellm {litellm_version()} bundled price map"
        return f"{self._override_source} over {base}" if self._override_source else base

    def price_of(self, model: str) -> tuple[ModelPrice | None, str]:
        """`model`'s price and where it comes from (a prices file, else litellm's map), free or not."""
        for name in _candidates(model):
            override = self._overrides.get(name)
            if isinstance(override, ModelPrice):
                return override, self._override_source or "prices file"
            if isinstance(override, PriceAlias):
                price, source = self._map_price(override.same_as)
                return price, f"{self._override_source}: as {override.same_as} from {source}"
        return self._map_price(model)

    def _map_price(self, model: str) -> tuple[ModelPrice | None, str]:
        entries = map_entries(model)
        source = f"litellm-price-map@{litellm_version()}"
        for name in _candidates(model):
            entry = entries.get(name)
            if isinstance(entry, dict) and "input_cost_per_token" in entry and "output_cost_per_token" in entry:
                try:
                    return ModelPrice.model_validate(entry), source
                except ValidationError:
                    continue
        return None, "unknown"

    def cost(self, model: str, usage: Usage) -> Cost:
        rate = self._rates.get(model)
        if rate is None:
            rate = self._rates[model] = self._rate(model)
        price, source = rate
        if price is None:
            return FREE if source == FREE.source else UNKNOWN
        return Cost(usage_cost(price, usage), source)

    def _rate(self, model: str) -> tuple[ModelPrice | None, str]:
        """What `cost` prices `model` at: its price and source, (None, FREE's source), or no price."""
        # Free by declaration, unless a prices file names the model explicitly (e.g. to show a demo's
        # scripted calls at a real model's rates).
        if model.startswith(FREE_PREFIXES) and not any(n in self._overrides for n in _candidates(model)):
            return None, FREE.source
        return self.price_of(model)

    def call_cost(self, call: ModelCall, usage: Usage, recorded: Cost | None = None) -> Cost:
        """What a call costs now: priced by the first of its billed names that has a price.

        The one pricing rule for live calls and replays alike, in-process, under serve and on Ray: a
        replay "saves" what the call would cost now, at this run's prices. Where none of its names has
        a price now, a replay falls back to the price it was `recorded` with; only when neither is
        known is the cost unknown.
        """
        cost = UNKNOWN
        for model in call.billed_as:
            cost = self.cost(model, usage)
            if cost.usd is not None:
                return cost
        if recorded is not None and recorded.usd is not None:
            return recorded
        return cost


def usage_cost(price: ModelPrice, usage: Usage) -> float:
    cached = min(usage.cached_tokens, usage.prompt_tokens)
    cache_rate = price.cache_read_input_token_cost
    if cache_rate is None:
        cache_rate = price.input_cost_per_token
    return (
        (usage.prompt_tokens - cached) * price.input_cost_per_token
        + cached * cache_rate
        + usage.completion_tokens * price.output_cost_per_token
    )


def _candidates(model: str) -> list[str]:
    """`openai/gpt-4.1` is priced as itself, then as `gpt-4.1`; `scripted/oracle?x=1` also as `scripted/oracle`."""
    names = [model]
    base = model.split("?", 1)[0]
    if base != model:
        names.append(base)
    if "/" in base:
        names.append(base.split("/", 1)[1])
    return names


@functools.cache
def litellm_version() -> str:
    try:
        return importlib.metadata.version("litellm")
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def map_provider(model: str) -> str | None:
    """The provider litellm's price map files `model` under ("openai", "anthropic", ...), exactly as
    named; None when the map does not list it."""
    entry = read_litellm_price_map().get(model)
    provider = entry.get("litellm_provider") if isinstance(entry, dict) else None
    return provider if isinstance(provider, str) else None


def map_entries(model: str) -> dict[str, Any]:
    """The price map's entries under the names `model` is priced as (`_candidates`), by name.

    Kept across processes (derived_cache), keyed by the map file's content: a run prices a model or
    two, and parsing the whole map for them was 25 ms of every replay's start."""
    path = litellm_price_map_path()
    if path is None:
        return {}

    def build() -> dict[str, Any]:
        table = read_litellm_price_map()
        return {name: table[name] for name in _candidates(model) if name in table}

    return cached("litellm-price-entries", {"map": files_digest([path]), "model": model}, dict, build)


@functools.cache
def litellm_price_map_path() -> Path | None:
    """Where the installed litellm keeps its bundled price map; None without litellm or the file."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / LITELLM_MAP_FILE
    return path if path.exists() else None


@functools.cache
def read_litellm_price_map() -> dict[str, Any]:
    """litellm's bundled price map, parsed once per process; shared, so never changed by a reader."""
    path = litellm_price_map_path()
    if path is None:
        return {}
    table: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return table


def load_price_file(path: Path) -> tuple[dict[str, ModelPrice | PriceAlias], str]:
    raw = read_mapping_file(path, "prices file (model names to prices)")
    prices: dict[str, ModelPrice | PriceAlias] = {}
    for model, entry in raw.items():
        try:
            is_alias = isinstance(entry, dict) and "same_as" in entry
            prices[str(model)] = PriceAlias.model_validate(entry) if is_alias else ModelPrice.model_validate(entry)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "price"
            got = f" (got {first['input']!r})" if field != "price" else ""
            raise ConfigError(f"{path}: model {model!r}, field {field}: {first['msg']}{got}") from None
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return prices, f"prices file {path.name}@{digest}"
