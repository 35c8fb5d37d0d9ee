"""pyproject.toml lists the packages by hand (two folders install under other names): the list must
name every folder with Python in it, and `tauproxy` must ship its py.typed marker."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTALLED_AS = {"tauproxy": "tauproxy", "cli": "tauproxy_cli", "domains": "tauproxy_domains"}


def _declared() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_package_folder_is_listed() -> None:
    listed = set(_declared()["tool"]["setuptools"]["packages"])
    found = set()
    for folder, name in INSTALLED_AS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join([name, *relative]))
    assert found == listed, f"missing: {sorted(found - listed)}, stale: {sorted(listed - found)}"


def test_typed_markers_ship() -> None:
    data = _declared()["tool"]["setuptools"]["package-data"]
    assert "py.typed" in data["tauproxy"] and (ROOT / "tauproxy" / "py.typed").exists()


def test_no_unused_dependency() -> None:
    """Every runtime dependency is imported somewhere in the library or CLI (diskcache was not)."""
    sources = "\n".join(p.read_text(encoding="utf-8") for d in ("tauproxy", "cli") for p in (ROOT / d).rglob("*.py"))
    # httptools is imported by uvicorn's protocol that serve's protocol subclasses.
    module_of = {"pyyaml": "yaml", "typer": "typer", "httptools": "uvicorn.protocols.http.httptools_impl"}
    for requirement in _declared()["project"]["dependencies"]:
        name = requirement.split(">")[0].split("=")[0].split("[")[0].strip().lower()
        module = module_of.get(name, name.replace("-", "_"))
        assert f"import {module}" in sources or f"from {module}" in sources, f"{name} is declared but never imported"
