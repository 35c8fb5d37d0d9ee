"""τ²-bench's environments for a domain: τ²'s registered constructor, and the one shared fork factory.

`tau2.registry` names each domain's environment constructor (telecom-workflow is telecom's with the
workflow policy), read without importing it (tau2bench/registry.py: importing it imports τ²'s agents
and with them litellm). tauproxy's orchestrator and grader build every environment of a trial with
`environment_factory`: one `EnvironmentFactory` (tau2bench/cow.py) per domain and process, which
forks the database loaded once. The loaded (validated) databases are kept in tauproxy's cross-process
cache (tauproxy/derived_cache.py), keyed by τ²'s version and the domain's source and data files, so a
process after the first unpickles them instead of validating τ²'s JSON again.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

import pydantic

from tauproxy.derived_cache import cached
from tauproxy.tau2bench.cow import BaseDatabases, EnvironmentFactory
from tauproxy.tau2bench.derived import domain_files, tau2_inputs
from tauproxy.tau2bench.registry import Reference, tau2_registry

_lock = threading.Lock()

# Per domain, the dicts of records its tools only look up by key (never scan): cached record by record,
# each unpickled when a trial first reads it (tau2bench/model_pickle.py). Airline's flights are
# searched by scanning them all, retail's users and products too: they are cached whole.
LAZY_FIELDS: dict[str, tuple[str, ...]] = {
    "tau2.domains.airline.environment": ("users", "reservations"),
    "tau2.domains.retail.environment": ("orders",),
}
_factories: dict[str, EnvironmentFactory] = {}


def environment_constructor(domain: str) -> Callable[..., Any]:
    """τ²'s registered constructor of the domain's environment (a fresh one from its data files)."""
    return tau2_registry().domains[domain].load()


def environment_factory(domain: str) -> EnvironmentFactory:
    with _lock:
        factory = _factories.get(domain)
        if factory is None:
            reference = tau2_registry().domains[domain]
            constructor = reference.load()
            # A domain with a user database (telecom's phone) takes it as `user_db`, forked too.
            user_db = "user_db" in inspect.signature(constructor).parameters
            bases = base_databases(reference, constructor, user_db=user_db)
            factory = _factories[domain] = EnvironmentFactory(constructor, user_db=user_db, bases=bases)
        return factory


def base_databases(reference: Reference, constructor: Callable[..., Any], *, user_db: bool) -> BaseDatabases:
    """The databases `constructor()` starts from: from the cache, else loaded (and validated) by τ²."""
    lazy_fields = LAZY_FIELDS.get(reference.module, ())
    inputs = {
        **tau2_inputs(domain_files([reference.module]), "cow.py", "model_pickle.py", "environments.py"),
        "constructor": f"{reference.module}:{reference.attribute}",
        "user_db": int(user_db),
        # The pickle rebuilds models around pydantic (model_pickle): another pydantic, another entry.
        "pydantic": pydantic.VERSION,
    }
    return cached(
        "tau2-db",
        inputs,
        BaseDatabases,
        lambda: BaseDatabases.load(constructor, user_db=user_db, lazy_fields=lazy_fields),
    )
