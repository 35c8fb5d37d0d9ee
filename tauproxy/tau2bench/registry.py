"""τ²-bench's registry (`tau2/registry.py`) as data: its domains, task sets, agents and users.

`tau2 run` takes its `--domain`, `--task-set-name`, `--agent` and `--user` choices from
`tau2.registry.registry`, but importing that module imports τ²'s agents and with them litellm (about
5 s, and strict replay must never import litellm). The registry is a list of literal calls
(`registry.register_domain(<imported function>, "<name>")`, `register_tasks(..., get_task_splits=...)`,
`register_agent`, `register_user`) over functions it imports from the domains' modules, so tauproxy
reads those calls with `ast` (as source.py reads τ²'s prompts) and imports only the domain modules
they name, which do not import litellm. A registry written another way is a ConfigError naming it;
tests/tau2bench compare what is read here with τ²'s own `registry.get_info()`.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tauproxy.errors import ConfigError


@dataclass(frozen=True)
class Reference:
    """A function of τ²'s a registry entry names: `module.attribute`, imported only when called for."""

    module: str
    attribute: str

    def load(self) -> Callable[..., Any]:
        loaded: Callable[..., Any] = getattr(importlib.import_module(self.module), self.attribute)
        return loaded


@dataclass(frozen=True)
class TaskSet:
    """A registered task set: its loader and, when registered, the loader of its splits."""

    name: str
    tasks: Reference
    splits: Reference | None

    def takes_split(self) -> bool:
        """Whether its loader takes `task_split_name`, as `tau2 run` always calls it (telecom_full and
        telecom_small of τ² 26.3 do not: `tau2 run --task-set-name telecom_full` raises TypeError)."""
        return "task_split_name" in inspect.signature(self.tasks.load()).parameters


@dataclass(frozen=True)
class Tau2Registry:
    domains: dict[str, Reference]  # domain -> its environment constructor
    task_sets: dict[str, TaskSet]
    agents: tuple[str, ...]
    users: tuple[str, ...]


REGISTRY_FILE = "registry.py"


@cache
def tau2_registry() -> Tau2Registry:
    import tau2

    return read_registry(Path(tau2.__file__).parent / REGISTRY_FILE)


def read_registry(path: Path) -> Tau2Registry:
    try:
        module = ast.parse(path.read_text(), filename=str(path))
    except (OSError, SyntaxError) as exc:
        raise ConfigError(f"τ²-bench's {path.name} cannot be read: {exc}") from None
    imported: dict[str, Reference] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            for alias in node.names:
                imported[alias.asname or alias.name] = Reference(node.module, alias.name)
    domains: dict[str, Reference] = {}
    task_sets: dict[str, TaskSet] = {}
    agents: list[str] = []
    users: list[str] = []
    for call in _registry_calls(module):
        method = call.func.attr  # type: ignore[attr-defined]
        name = _name_argument(call)
        if method in ("register_agent", "register_user"):
            (agents if method == "register_agent" else users).append(name)
            continue
        function = _reference(call.args[0] if call.args else None, imported, path.name)
        if method == "register_domain":
            domains[name] = function
        elif method == "register_tasks":
            splits = next((k.value for k in call.keywords if k.arg == "get_task_splits"), None)
            if splits is None and len(call.args) > 2:
                splits = call.args[2]
            task_sets[name] = TaskSet(
                name, function, _reference(splits, imported, path.name) if splits is not None else None
            )
    if not domains or not task_sets or not agents or not users:
        raise ConfigError(
            f"τ²-bench's {path.name} registers no domains, task sets, agents or users in a form tauproxy "
            "reads: this τ² version is not supported"
        )
    return Tau2Registry(domains, task_sets, tuple(agents), tuple(users))


REGISTER_METHODS = ("register_domain", "register_tasks", "register_agent", "register_user")


def _registry_calls(module: ast.Module) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(module)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in REGISTER_METHODS
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "registry"
    ]


def _name_argument(call: ast.Call) -> str:
    """The registered name: the second positional argument or `name=`, a string literal."""
    node = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "name"), None)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    raise ConfigError(
        f"τ²-bench's {REGISTRY_FILE} registers a name tauproxy cannot read: this τ² version is not supported"
    )


def _reference(node: ast.expr | None, imported: dict[str, Reference], where: str) -> Reference:
    if isinstance(node, ast.Name) and node.id in imported:
        return imported[node.id]
    raise ConfigError(
        f"τ²-bench's {where} registers a function that is not imported by name: this τ² version is not supported"
    )
