"""mypy --strict (with the pydantic plugin, configured in pyproject.toml) is clean over the library
and the CLI, both with the optional extras this environment has installed and with none of them;
ruff's lint and format checks are clean over the tree. (An extra that is not installed, such as
`local` where llama-cpp-python was not built, is only seen from its callers' side: its modules are
listed in pyproject's `ignore_missing_imports` override.)

cli/ installs as `tauproxy_cli` (and domains/ as `tauproxy_domains`), so mypy reads them under those
names through symlinks. Its cache is kept in .mypy_cache/ at the repository root (git ignores it), so
a second run only re-checks what changed: seconds, where a cold run takes minutes. Each view keeps
its own cache (sharing one would make each view re-check the other's differences on every run); on a
clean checkout the view without extras starts from a copy of the first view's cache, the two tests
running one after the other on one xdist worker: mypy's incremental mode checks again what this view
sees differently (a module missing here, and whatever depends on it) and reuses the rest (the same
files, found through the view's links, are matched by hash), a fraction of a cold run.

Without the extras. mypy is pointed at a Python (`--python-executable`) whose site-packages holds
links to every installed package except the ones only an optional extra brings in: the closure of
the extras' requirements (tauproxy's own metadata) minus the closure of the base and dev ones. It
sees what `pip install -e '.[dev]'` alone gives, with no second install. This was checked against a
real one: `uv venv /tmp/bare-venv --python 3.11 && uv pip install -p /tmp/bare-venv/bin/python
-e '.[dev]'`, then the same mypy command with that Python, gave the same result (with the errors
this view was written to catch, a `loguru` import and an Any returned where Ray is absent, both
found by each). A namespace directory that a kept package shares with a hidden one stays visible.
"""

from __future__ import annotations

import ast
import fnmatch
import re
import shutil
import subprocess
import sys
import tomllib
import venv
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".mypy_cache"  # gitignored; kept between runs on purpose
INSTALLED_CACHE = CACHE / "installed"
NO_EXTRAS_CACHE = CACHE / "no-extras"
PROJECT = "tauproxy"


def _mypy(python: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    names = CACHE / "installed-names"  # the CLI and the shipped domains under their installed names
    names.mkdir(parents=True, exist_ok=True)
    for name, folder in (("tauproxy_cli", ROOT / "cli"), ("tauproxy_domains", ROOT / "domains")):
        link = names / name
        if not link.is_symlink():
            link.symlink_to(folder, target_is_directory=True)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--python-executable",
            str(python),
            "--cache-dir",
            str(cache),
            "-p",
            "tauproxy",
            "-p",
            "tauproxy_cli",
        ],
        cwd=names,
        env={"MYPYPATH": f"{ROOT}:{names}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.slow
def test_mypy_strict_is_clean_with_every_installed_extra() -> None:
    pytest.importorskip("mypy")
    done = _mypy(Path(sys.executable), INSTALLED_CACHE)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


@pytest.mark.slow
def test_mypy_strict_is_clean_without_the_optional_extras() -> None:
    pytest.importorskip("mypy")
    if not NO_EXTRAS_CACHE.exists() and INSTALLED_CACHE.exists():
        shutil.copytree(INSTALLED_CACHE, NO_EXTRAS_CACHE)  # a head start, not a shortcut: see above
    done = _mypy(_python_without_extras(), NO_EXTRAS_CACHE)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


# -- which installed packages only an optional extra brings ---------------------------------------


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(extra: str) -> list[Requirement]:
    """tauproxy's own requirements that this extra adds ("" for the base ones)."""
    found = []
    for text in metadata.distribution(PROJECT).requires or []:
        requirement = Requirement(text)
        base = requirement.marker is None or requirement.marker.evaluate({"extra": ""})
        if (base and not extra) or (not base and requirement.marker and requirement.marker.evaluate({"extra": extra})):
            found.append(requirement)
    return found


def _closure(requirements: list[Requirement]) -> set[str]:
    """The installed distributions these requirements pull in, with their own requirements."""
    seen: set[str] = set()
    todo = list(requirements)
    while todo:
        requirement = todo.pop()
        name = _name(requirement.name)
        if name in seen:
            continue
        try:
            distribution = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        for text in distribution.requires or []:
            needed = Requirement(text)
            extras = ("", *requirement.extras)
            if needed.marker is None or any(needed.marker.evaluate({"extra": e}) for e in extras):
                todo.append(needed)
    return seen


def _optional_distributions() -> set[str]:
    extras = [e for e in metadata.distribution(PROJECT).metadata.get_all("Provides-Extra") or [] if e != "dev"]
    optional = set().union(*(_closure(_requirements(extra)) for extra in extras))
    return optional - _closure(_requirements("") + _requirements("dev"))


def _top_level(distribution: metadata.Distribution) -> set[str]:
    """The site-packages entries a distribution installed (packages, modules, its .dist-info)."""
    entries = set()
    for file in distribution.files or []:
        first = file.parts[0]
        if first not in ("..", "__pycache__") and not first.endswith(".pth"):
            entries.add(first)
    return entries


def _optional_entries() -> set[str]:
    optional = _optional_distributions()
    hidden: set[str] = set()
    kept: set[str] = set()
    for distribution in metadata.distributions():
        (hidden if _name(distribution.metadata["Name"]) in optional else kept).update(_top_level(distribution))
    return hidden - kept


def _site_packages() -> Path:
    return next(Path(p) for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())


def _python_without_extras() -> Path:
    """A Python whose site-packages links every installed entry but the optional extras' own."""
    home = CACHE / "python-without-extras"
    python = home / "bin" / "python"
    if not python.exists():
        venv.create(home, with_pip=False, symlinks=True)
    view = next((home / "lib").glob("python3*/site-packages"))
    real = _site_packages()
    wanted = {entry.name: entry for entry in real.iterdir() if entry.name != "__pycache__"}
    for name in _optional_entries():
        wanted.pop(name, None)
    for link in view.iterdir():
        if link.is_symlink() and wanted.get(link.name) != link.readlink():
            link.unlink()
    for name, target in wanted.items():
        if not (view / name).is_symlink():
            (view / name).symlink_to(target)
    return python


# -- every import of an optional extra is one mypy may find missing -------------------------------


def _ignored_when_missing() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns: list[str] = []
    for override in config["tool"]["mypy"].get("overrides", []):
        if override.get("ignore_missing_imports"):
            modules = override["module"]
            patterns.extend([modules] if isinstance(modules, str) else modules)
    return patterns


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return found


def test_every_optional_import_may_be_missing() -> None:
    """An import of a package only an extra installs is listed as `ignore_missing_imports`, so the
    check without that extra reads it as untyped rather than failing (the run above then shows the
    code around it is typed so that it does not lean on the extra's types)."""
    optional = {entry for entry in _optional_entries() if not entry.endswith((".dist-info", ".libs"))}
    optional = {entry.removesuffix(".py") for entry in optional}
    if not optional:
        pytest.skip("no optional extra is installed: nothing to tell apart")
    patterns = _ignored_when_missing()
    unlisted = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for folder in ("tauproxy", "cli")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, module in _imported_modules(path)
        if module.split(".")[0] in optional and not any(fnmatch.fnmatchcase(module, p) for p in patterns)
    ]
    assert not unlisted, "add to [[tool.mypy.overrides]] ignore_missing_imports:\n" + "\n".join(unlisted)


# -- ruff --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff_is_clean(command: list[str]) -> None:
    pytest.importorskip("ruff")
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-1000:]
