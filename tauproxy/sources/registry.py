"""Domain sources by name, and which one owns a domain: the one place that knows there are several.

The built-ins are tauproxy's packs (the default: every name no other source claims) and τ²-bench's
domains (`tau2/...`). Another source registers itself with `register_source`, as vcrpy registers
persisters: its domains are the names under its prefix, and its options are validated by its own
model. An installed package adds one through the entry-point group `tauproxy.domain_sources` (the
object named is a source, or a class made with no arguments), read once, on first use, in every
process (a Ray worker too; one registered with `register_source` is known in its own process only).
The runner, the reports and the CLI call `source_for_domain` and never
branch on the answer.
"""

from __future__ import annotations

import importlib.metadata
import threading
from collections.abc import Mapping
from typing import Any

from tauproxy.errors import ConfigError
from tauproxy.sources.packs import PackSource
from tauproxy.sources.protocol import DomainSource
from tauproxy.sources.tau2 import Tau2Source

ENTRY_POINT_GROUP = "tauproxy.domain_sources"

_lock = threading.RLock()  # reentrant: an installed source's module may register another as it loads
_sources: dict[str, DomainSource] = {source.name: source for source in (PackSource(), Tau2Source())}
_installed_read = False


def registered_sources() -> list[DomainSource]:
    """Every source, the built-ins first, then the installed ones, then in the order they were registered."""
    with _lock:
        return list(_table().values())


def register_source(source: DomainSource) -> None:
    """Add a source. Its name and prefix must be new and the prefix not empty (our packs take the
    rest); its options must not share a name with another source's (they are one namespace)."""
    with _lock:
        _add(_table(), source)


def _table() -> dict[str, DomainSource]:
    """The sources, the installed ones read in on first use (all or none: a broken one is one line)."""
    global _installed_read
    if not _installed_read:
        found = []
        for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            try:
                loaded = entry.load()
                found.append(loaded() if isinstance(loaded, type) else loaded)
            except Exception as exc:  # a third party's import error, whatever it is, is one line
                raise ConfigError(
                    f"domain source {entry.name!r} ({entry.value}) cannot be loaded: {type(exc).__name__}: {exc}"
                ) from None
        table = dict(_sources)
        for source in found:
            _add(table, source)
        _sources.update(table)
        _installed_read = True
    return _sources


def _add(table: dict[str, DomainSource], source: DomainSource) -> None:
    if source.name in table:
        raise ConfigError(f"a domain source named {source.name!r} is registered already")
    if not source.prefix:
        raise ConfigError(f"domain source {source.name!r} needs a prefix that names its domains")
    for other in table.values():
        if other.prefix and (source.prefix.startswith(other.prefix) or other.prefix.startswith(source.prefix)):
            overlap = f"prefix {source.prefix!r} overlaps {other.name!r}'s {other.prefix!r}"
            raise ConfigError(f"domain source {source.name!r}: {overlap}")
        shared = sorted(set(source.options.model_fields) & set(other.options.model_fields))
        if shared:
            raise ConfigError(f"domain source {source.name!r}: option {shared[0]!r} is {other.name!r}'s already")
    table[source.name] = source


def unregister_source(name: str) -> None:
    """Remove a registered source (not a built-in one)."""
    with _lock:
        if isinstance(_named(name), (PackSource, Tau2Source)):
            raise ConfigError(f"{name!r} is a built-in domain source")
        del _sources[name]


def source_named(name: str) -> DomainSource:
    with _lock:
        return _named(name)


def _named(name: str) -> DomainSource:
    table = _table()
    if name not in table:
        raise ConfigError(f"unknown domain source {name!r} (registered: {', '.join(sorted(table))})")
    return table[name]


def source_for_domain(domain: str) -> DomainSource:
    """The source whose prefix starts `domain`; tauproxy's packs when none does."""
    sources = registered_sources()
    for source in sources:
        if source.prefix and domain.startswith(source.prefix):
            return source
    return next(source for source in sources if not source.prefix)


def validate_source_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Each option checked by the model of the source that owns it, whatever the domain (one given to
    the wrong domain is refused by `check_source_options`, as the run is prepared). A bad value raises
    pydantic's ValidationError at the option's name; a name no source owns, a ValueError."""
    owners = {field: source for source in registered_sources() for field in source.options.model_fields}
    unknown = [name for name in options if name not in owners]
    if unknown:
        known = ", ".join(sorted(owners)) or "none"
        raise ValueError(f"unknown source option {unknown[0]!r} (known: {known})")
    checked: dict[str, Any] = {}
    for source in {id(owner): owner for owner in owners.values()}.values():
        mine = {name: value for name, value in options.items() if owners[name] is source}
        if mine:
            checked.update(source.options.model_validate(mine).model_dump(include=set(mine)))
    return {name: checked[name] for name in options}


def check_source_options(domain: str, options: Mapping[str, Any]) -> None:
    """Refuse, in one line from their owner, options of another source than the domain's."""
    own = set(source_for_domain(domain).options.model_fields)
    for source in registered_sources():
        theirs = {
            name: value for name, value in options.items() if name not in own and name in source.options.model_fields
        }
        message = source.misplaced(theirs, domain) if theirs else None
        if message is not None:
            raise ConfigError(message)
