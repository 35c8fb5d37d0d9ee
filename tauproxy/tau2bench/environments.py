"""τ²-bench's environments for a domain: τ²'s registered constructor, and the one shared fork factory.

`tau2.registry` names each domain's environment constructor, but importing it imports τ²'s agents
and with them litellm, so the same constructors are read from the domains' own modules here.
tauproxy's orchestrator and grader build every environment of a trial with `environment_factory`:
one `EnvironmentFactory` (tau2bench/cow.py) per domain and process, which loads the database once
and forks it.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from tauproxy.tau2bench.cow import EnvironmentFactory

# The environment constructor `tau2.registry` registers for each domain.
ENVIRONMENT_CONSTRUCTORS = {
    "mock": "get_environment",
    "airline": "get_environment",
    "retail": "get_environment",
    "telecom": "get_environment_manual_policy",
}

_lock = threading.Lock()
_factories: dict[str, EnvironmentFactory] = {}


def domain_module(domain: str) -> Any:
    return importlib.import_module(f"tau2.domains.{domain}.environment")


def environment_constructor(domain: str) -> Any:
    """τ²'s registered constructor of the domain's environment (a fresh one from its data files)."""
    return getattr(domain_module(domain), ENVIRONMENT_CONSTRUCTORS[domain])


def environment_factory(domain: str) -> EnvironmentFactory:
    with _lock:
        factory = _factories.get(domain)
        if factory is None:
            factory = _factories[domain] = EnvironmentFactory.for_domain(domain, ENVIRONMENT_CONSTRUCTORS[domain])
        return factory
