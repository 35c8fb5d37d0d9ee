"""`domains check NAME`: the check of the domain's source, looked up by the source's name.

A check plays the source's tasks (the oracle must pass them, a do-nothing agent must not), so it
runs on the runner, above the sources; each source's check is registered here by the source's name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tauproxy.errors import ConfigError
from tauproxy.sources.registry import source_for_domain
from tauproxy.workflows.domain_check import DomainCheck, check_domain

DomainChecker = Callable[[str, Path | None], DomainCheck]


def _check_tau2(name: str, tasks_file: Path | None) -> DomainCheck:
    from tauproxy.workflows.tau2_domain_check import check_tau2_domain  # τ²'s engine, only when asked

    return check_tau2_domain(name, tasks_file)


_checks: dict[str, DomainChecker] = {"tauproxy": check_domain, "tau2": _check_tau2}


def register_domain_check(source_name: str, check: DomainChecker) -> None:
    """The check `domains check` runs for the domains of the source named `source_name`."""
    _checks[source_name] = check


def check_any_domain(name: str, tasks_file: Path | None = None) -> DomainCheck:
    source = source_for_domain(name)
    check = _checks.get(source.name)
    if check is None:
        raise ConfigError(f"domain source {source.name!r} has no domain check")
    return check(name, tasks_file)
