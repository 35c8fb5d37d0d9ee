"""τ²-bench's environments for a domain: τ²'s registered constructor, and the one shared fork factory.

`tau2.registry` names each domain's environment constructor (telecom-workflow is telecom's with the
workflow policy), read without importing it (tau2bench/registry.py: importing it imports τ²'s agents
and with them litellm). tauproxy's orchestrator and grader build every environment of a trial with
`environment_factory`: one `EnvironmentFactory` (tau2bench/cow.py) per domain and process, which
loads the database once and forks it.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from tauproxy.tau2bench.cow import EnvironmentFactory
from tauproxy.tau2bench.registry import tau2_registry

_lock = threading.Lock()
_factories: dict[str, EnvironmentFactory] = {}


def environment_constructor(domain: str) -> Callable[..., Any]:
    """τ²'s registered constructor of the domain's environment (a fresh one from its data files)."""
    return tau2_registry().domains[domain].load()


def environment_factory(domain: str) -> EnvironmentFactory:
    with _lock:
        factory = _factories.get(domain)
        if factory is None:
            constructor = environment_constructor(domain)
            # A domain with a user database (telecom's phone) takes it as `user_db`, forked too.
            user_db = "user_db" in inspect.signature(constructor).parameters
            factory = _factories[domain] = EnvironmentFactory(constructor, user_db=user_db)
        return factory
