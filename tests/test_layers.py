"""The layers of the package import one way only: a module may import its own layer or any below it.

The order is stated in the README's Layout section; this test is what enforces it. It reads every
import statement (top-level and inside functions; `if TYPE_CHECKING:` blocks too, since a type-only
import up the stack is still a design cycle; relative ones resolved against their package) and every
`importlib.import_module` call whose module name is written out, with `ast`, so nothing is executed.
A dynamic name that starts in the library but stops before naming a layer is reported, not skipped.
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
    ("errors", "version"),
    ("structured_file", "redact", "validation", "derived_cache"),  # derived_cache: artefacts kept across processes
    ("data_model",),  # the key, sample identity, wire forms and every boundary type
    ("store", "domain", "results"),  # cassettes, domain packs, run directories
    ("proxy",),  # transports, pricing, the one cache layer, the model client
    ("wire_apis",),  # the HTTP dialects clients speak (chat, responses, ...), behind one protocol
    ("engine",),
    ("tau2bench",),  # τ²-bench's own engine driven in-process, its model calls through ours
    ("sources",),  # domain sources behind one protocol: our packs and τ²-bench, registered by name
    ("runner", "reports"),  # beside each other: neither imports the other
    ("workflows",),  # bisect and domain check: runs and reports combined
    ("serve",),  # the server
    ("interception",),  # serve's app in-process: httpx clients and a local base_url for SDK-direct code
    ("api", "vcr_import"),  # the Python API for notebooks and scripts; vcrpy cassettes sent through serve's app
    ("pytest_plugin",),  # fixtures over the API and the client, loaded by pytest's entry point
    ("__init__",),  # the package re-exports the API, lazily (tauproxy/__init__.py)
]
CLI = ROOT / "cli"  # on top of everything; the library never imports it


def _rank() -> dict[str, int]:
    return {name: index for index, layer in enumerate(LAYERS) for name in layer}


def _unit(path: Path) -> str:
    """The layer unit of a module: its subpackage, or the top-level module's own name."""
    relative = path.relative_to(PACKAGE).with_suffix("")
    return relative.parts[0]


def _imports(path: Path) -> list[tuple[int, str]]:
    return imports_in(path.read_text(encoding="utf-8"), _module_name(path), is_package=path.name == "__init__.py")


def imports_in(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """Every module `source` (the text of `module`) imports, with its line: import statements,
    relative ones resolved against the module's package, and `importlib.import_module` (or
    `__import__`) calls whose name is a constant string, or an f-string whose constant start names
    the module (its dotted prefix up to the first placeholder is what is recorded).

    A call whose name starts with "tauproxy." but stops before naming a layer is recorded as just
    "tauproxy.<dynamic>", which no layer holds, so the check reports it instead of missing it.
    """
    package = module if is_package else module.rpartition(".")[0]
    tree = ast.parse(source)
    import_module_names = _import_module_names(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = _relative(package, node.level, node.module)
            if node.module is None:  # `from . import x`: x is a submodule (or a name in the package)
                found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
            else:
                found.append((node.lineno, base))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.Call) and _calls_import_module(node, import_module_names):
            name = _constant_start(node.args[0]) if node.args else None
            anchor = next((k.value for k in node.keywords if k.arg == "package"), None)
            if name and name.startswith(".") and isinstance(anchor, ast.Constant) and isinstance(anchor.value, str):
                dots = len(name) - len(name.lstrip("."))
                name = _relative(anchor.value, dots, name.lstrip(".") or None)
            if name:
                found.append((node.lineno, name))
    return found


def _relative(package: str, level: int, name: str | None) -> str:
    """What `from <level dots><name> import ...` names inside `package`."""
    parts = package.split(".")
    base = ".".join(parts[: len(parts) - (level - 1)]) if level - 1 < len(parts) else ""
    return f"{base}.{name}" if name and base else (name or base)


def _import_module_names(tree: ast.AST) -> set[str]:
    """The names `importlib.import_module` goes by in a module (`from importlib import import_module as x`)."""
    names = {"__import__"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "importlib" and node.level == 0:
            names.update(alias.asname or alias.name for alias in node.names if alias.name == "import_module")
    return names


def _calls_import_module(node: ast.Call, names: set[str]) -> bool:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in names
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "import_module"
        and isinstance(func.value, ast.Name)
        and func.value.id == "importlib"
    )


def _constant_start(arg: ast.expr) -> str | None:
    """A module name's known part: the whole of a constant string, the dotted start of an f-string."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values:
        first = arg.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            if len(arg.values) == 1:  # an f-string without a placeholder
                return first.value
            known = first.value.rpartition(".")[0]
            if known == "tauproxy" or not known:
                return "tauproxy.<dynamic>" if first.value.startswith("tauproxy.") else None
            return known
    return None


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
    wrong = layer_violations(_imports(path), _unit(path))
    assert not wrong, "\n".join(wrong)


def layer_violations(imports: list[tuple[int, str]], unit: str) -> list[str]:
    """What a module of `unit` imports from its own layer's other units or from above, or cannot place."""
    rank = _rank()
    wrong = []
    for line, module in imports:
        if module.split(".")[0] == "tauproxy_cli":
            wrong.append(f"line {line}: {module} (the library never imports the CLI)")
            continue
        target = _target(module)
        if target is None or target == unit:
            continue
        if target not in rank:
            wrong.append(f"line {line}: {module} (no layer holds {target}: name the module with a constant)")
        elif rank[target] >= rank[unit]:
            where = "beside" if rank[target] == rank[unit] else "above"
            wrong.append(f"line {line}: {module} ({target} is {where} {unit})")
    return wrong


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


def test_the_layer_checker_sees_a_violation() -> None:
    """The checker itself can fail: an upward import in a store module is reported."""
    imports = imports_in("from tauproxy.proxy.client import ModelClient\n", "tauproxy.store.bad")
    assert imports == [(1, "tauproxy.proxy.client")]
    assert layer_violations(imports, "store") == ["line 1: tauproxy.proxy.client (proxy is above store)"]


# Ways a store module could reach the proxy layer, each of which the checker must see.
UPWARD_IMPORTS = {
    "import": "import tauproxy.proxy.client\n",
    "from": "from tauproxy.proxy import client\n",
    "lazy": "def f():\n    from tauproxy.proxy.client import ModelClient\n",
    "relative": "from ..proxy.client import ModelClient\n",
    "relative package": "from .. import proxy\n",
    "importlib": "import importlib\nimportlib.import_module('tauproxy.proxy.client')\n",
    "import_module": "from importlib import import_module\nimport_module('tauproxy.proxy.client')\n",
    "import_module as": "from importlib import import_module as load\nload('tauproxy.proxy.client')\n",
    "relative import_module": "import importlib\nimportlib.import_module('..proxy.client', package='tauproxy.store')\n",
    "f-string": "import importlib\nimportlib.import_module(f'tauproxy.proxy.{name}')\n",
    "__import__": "__import__('tauproxy.proxy.client')\n",
}


@pytest.mark.parametrize("source", UPWARD_IMPORTS.values(), ids=UPWARD_IMPORTS.keys())
def test_the_layer_checker_sees_every_kind_of_import(source: str) -> None:
    wrong = layer_violations(imports_in(source, "tauproxy.store.bad"), "store")
    assert len(wrong) == 1 and "tauproxy.proxy" in wrong[0] and "proxy is above store" in wrong[0], wrong


def test_the_layer_checker_places_what_it_can_and_reports_what_it_cannot() -> None:
    """Relative imports stay in their package; a name built at run time is not silently allowed."""
    own = (
        "from .index import Index\n"
        "from . import cassette\n"
        "import importlib\n"
        "importlib.import_module(f'tau2.domains.{d}.x')\n"
    )
    assert imports_in(own, "tauproxy.store.bad") == [
        (1, "tauproxy.store.index"),
        (2, "tauproxy.store.cassette"),
        (3, "importlib"),
        (4, "tau2.domains"),
    ]
    assert imports_in("from . import key\n", "tauproxy.data_model", is_package=True) == [(1, "tauproxy.data_model.key")]
    dynamic = imports_in("import importlib\nimportlib.import_module(f'tauproxy.{layer}.x')\n", "tauproxy.store.bad")
    assert layer_violations(dynamic, "store") == [
        "line 2: tauproxy.<dynamic> (no layer holds <dynamic>: name the module with a constant)"
    ]
