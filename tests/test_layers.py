"""The layers of the package import one way only: a module may import its own layer or any below it.

The order is stated in the README's Layout section; this test is what enforces it. It reads every
import statement (top-level and inside functions; `if TYPE_CHECKING:` blocks too, since a type-only
import up the stack is still a design cycle) with `ast`, so nothing is executed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tauproxy"

# Bottom to top. Names in one tuple share a layer and must not import each other's packages
# (only a package's own modules, or lower layers). Top-level modules are layers of their own.
LAYERS: list[tuple[str, ...]] = [
    ("errors",),
    ("structured_file", "redact", "validation", "__init__"),
    ("data_model",),  # the key, sample identity, wire forms and every boundary type
    ("store", "domain", "results"),  # cassettes, domain packs, run directories
    ("proxy",),  # transports, pricing, the one cache layer, the model client
    ("engine",),
    ("tau2bench",),  # τ²-bench's own engine driven in-process, its model calls through ours
    ("sources",),  # domain sources behind one protocol: our packs and τ²-bench, registered by name
    ("runner", "reports"),  # beside each other: neither imports the other
    ("workflows",),  # bisect and domain check: runs and reports combined
    ("serve", "api"),  # the server; the Python API for notebooks and scripts
    ("pytest_plugin",),  # fixtures over the API and the client, loaded by pytest's entry point
]
CLI = ROOT / "cli"  # on top of everything; the library never imports it


def _rank() -> dict[str, int]:
    return {name: index for index, layer in enumerate(LAYERS) for name in layer}


def _unit(path: Path) -> str:
    """The layer unit of a module: its subpackage, or the top-level module's own name."""
    relative = path.relative_to(PACKAGE).with_suffix("")
    return relative.parts[0]


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return found


def _target(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "tauproxy":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_unit_has_a_layer() -> None:
    rank = _rank()
    units = {_unit(path) for path in _modules()}
    assert units <= set(rank), f"add to LAYERS: {sorted(units - set(rank))}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_go_down(path: Path) -> None:
    rank = _rank()
    unit = _unit(path)
    wrong = []
    for line, module in _imports(path):
        if module.split(".")[0] in ("tauproxy_cli", "tauproxy_domains") and module.startswith("tauproxy_cli"):
            wrong.append(f"line {line}: {module} (the library never imports the CLI)")
            continue
        target = _target(module)
        if target is None or target == unit:
            continue
        if rank[target] >= rank[unit]:
            where = "beside" if rank[target] == rank[unit] else "above"
            wrong.append(f"line {line}: {module} ({target} is {where} {unit})")
    assert not wrong, "\n".join(wrong)


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_no_module_cycles() -> None:
    """No two modules import each other, directly or around a loop, even lazily inside functions."""
    names = {_module_name(path): path for path in _modules()}
    graph = {
        name: {module for _, module in _imports(path) if module in names and module != name}
        for name, path in names.items()
    }
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not cycles, "\n".join(cycles)


def test_the_layer_checker_sees_a_violation(tmp_path: Path) -> None:
    """The checker itself can fail: an upward import in a store module is reported."""
    source = tmp_path / "bad.py"
    source.write_text("from tauproxy.proxy.client import ModelClient\n", encoding="utf-8")
    imports = _imports(source)
    assert imports == [(1, "tauproxy.proxy.client")]
    assert _rank()[_target(imports[0][1]) or ""] > _rank()["store"]
