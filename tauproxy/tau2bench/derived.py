"""What τ²-bench's derived artefacts derive from, as the keys of tauproxy's cross-process cache.

The catalog (tasks, tool schemas, policy, hash), the validated domain databases and the prompts read
from τ²'s sources are the same at every start of a process while these are: the installed τ² version,
the bytes of the domain's source package (`tau2/domains/<d>/*.py`: data models and tools) and data
directory (`tau2/data/tau2/domains/<d>/`: db, tasks, splits, policies), the source files the prompts
and registry are read from, and tauproxy's own modules that shape the artefact. A τ² installed from a
checkout keeps its version while its files change; the content hashes catch that.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tauproxy.derived_cache import files_digest
from tauproxy.tau2bench.peer import installed_version

DOMAINS_PACKAGE = "tau2.domains."
_HERE = Path(__file__).resolve().parent


def tau2_package() -> Path:
    import tau2

    return Path(tau2.__file__).resolve().parent


def domain_package(module: str) -> str | None:
    """`airline` for `tau2.domains.airline.environment`; None for a module outside τ²'s domains."""
    if not module.startswith(DOMAINS_PACKAGE):
        return None
    return module[len(DOMAINS_PACKAGE) :].split(".", 1)[0]


def _files(directory: Path, suffixes: tuple[str, ...] | None = None) -> list[Path]:
    if not directory.is_dir():
        return [directory]  # absent: its name still goes into the digest
    return sorted(p for p in directory.iterdir() if p.is_file() and (suffixes is None or p.suffix in suffixes))


def domain_files(modules: Iterable[str]) -> list[Path]:
    """The source and data files of the τ² domain packages the `modules` belong to."""
    package = tau2_package()
    files: list[Path] = []
    for name in sorted({d for d in map(domain_package, modules) if d is not None}):
        files += _files(package / "domains" / name, (".py",))
        files += _files(package / "data" / "tau2" / "domains" / name)
    return files


def prompt_files() -> list[Path]:
    """The files tauproxy/tau2bench/source.py reads τ²'s prompts from."""
    package = tau2_package()
    return [
        package / "agent" / "llm_agent.py",
        package / "user" / "user_simulator.py",
        package / "orchestrator" / "orchestrator.py",
        *_files(package / "data" / "tau2" / "user_simulator"),
    ]


def tau2_inputs(files: Iterable[Path], *ours: str) -> dict[str, str | int]:
    """Cache inputs: τ²'s version, a digest of `files`, and one of tauproxy's own modules `ours` (file
    names in tauproxy/tau2bench: the code that builds the artefact)."""
    return {
        "tau2": installed_version(),
        "files": files_digest(files),
        "code": files_digest(_HERE / name for name in ours),
    }
