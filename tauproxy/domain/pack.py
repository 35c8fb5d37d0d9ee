"""Load and validate a domain pack: `domains/<name>/` with policy.md, tasks.json, a DB and tools.py.

    policy.md        the agent's policy, shown to it as its system prompt
    tasks.json       a list of tasks in tau2-bench's task shape
    db.json          the starting state: {table: {record_id: record}} ...
    db.py            ... or `build_db(seed: int) -> dict` that generates it (db.json wins if both exist)
    tools.py         the @tool, @user_tool, @assertion and @setup functions
    user_policy.md   optional: extra guidance for the user simulator (dual-control domains)

Every error names the file and, where it can, the field.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import TypeAdapter, ValidationError

from tauproxy.data_model.task import EnvFunctionCall, Task
from tauproxy.data_model.tool import ToolSchema
from tauproxy.derived_cache import cached, files_digest
from tauproxy.domain import state as state_module
from tauproxy.domain.state import BaseState
from tauproxy.domain.tools import DomainFunction, marked_functions
from tauproxy.errors import DomainError

PACK_FILES = ("policy.md", "tasks.json", "tools.py")
DOMAINS_PATH_ENV = "TAUPROXY_DOMAINS_PATH"
DB_SEED = 0
_TASKS_ADAPTER = TypeAdapter(list[Task])


def builtin_domains_dir() -> Path:
    spec = importlib.util.find_spec("tauproxy_domains")
    if spec is None or not spec.submodule_search_locations:
        raise DomainError("the built-in domain packs (tauproxy_domains) are not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def search_dirs() -> list[Path]:
    extra = [Path(p) for p in os.environ.get(DOMAINS_PATH_ENV, "").split(os.pathsep) if p]
    return [*extra, builtin_domains_dir()]


def available_domains() -> list[str]:
    names: set[str] = set()
    for directory in search_dirs():
        if directory.is_dir():
            names.update(p.name for p in directory.iterdir() if (p / "tasks.json").is_file())
    return sorted(names)


def find_pack_dir(name: str) -> Path:
    candidate = Path(name)
    if candidate.is_dir() and (candidate / "tasks.json").exists():
        return candidate.resolve()
    for directory in search_dirs():
        path = directory / name
        if path.is_dir():
            return path.resolve()
    known = ", ".join(available_domains()) or "none"
    raise DomainError(f"unknown domain {name!r} (available: {known})")


@dataclass
class DomainPack:
    name: str
    root: Path
    policy: str
    tasks: list[Task]
    functions: dict[str, DomainFunction]
    base_state: BaseState
    user_policy: str | None = None
    content_sha256: str = ""
    module: ModuleType | None = field(default=None, repr=False)
    # Golden end state per task id: the same for every trial, so computed once per pack.
    golden_states: dict[str, Any] = field(default_factory=dict, repr=False)

    def agent_tools(self) -> list[DomainFunction]:
        return [f for f in self.functions.values() if f.mark.role == "tool" and f.mark.side == "assistant"]

    def user_tools(self) -> list[DomainFunction]:
        return [f for f in self.functions.values() if f.mark.role == "tool" and f.mark.side == "user"]

    @cached_property
    def agent_tool_schemas(self) -> list[ToolSchema]:
        return [f.schema for f in self.agent_tools()]

    @cached_property
    def user_tool_schemas(self) -> list[ToolSchema]:
        return [f.schema for f in self.user_tools()]

    @property
    def is_dual_control(self) -> bool:
        return bool(self.user_tools())

    def task(self, task_id: str) -> Task:
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise DomainError(f"domain {self.name!r} has no task {task_id!r}")


def load_pack(name: str, tasks_file: Path | None = None) -> DomainPack:
    """Load a pack by name (or path). `tasks_file` replaces the pack's own tasks.json."""
    root = find_pack_dir(name)
    for required in PACK_FILES:
        if not (root / required).is_file():
            raise DomainError(f"{root / required}: missing; a domain pack needs {', '.join(PACK_FILES)}")
    module = _load_tools_module(root)
    functions = _collect_functions(root, module)
    base_state = _base_state(root, module)
    tasks_path = tasks_file or root / "tasks.json"
    tasks = load_tasks(tasks_path)
    user_policy_path = root / "user_policy.md"
    pack = DomainPack(
        name=root.name,
        root=root,
        policy=(root / "policy.md").read_text(encoding="utf-8"),
        tasks=tasks,
        functions=functions,
        base_state=base_state,
        user_policy=user_policy_path.read_text(encoding="utf-8") if user_policy_path.exists() else None,
        content_sha256=_content_hash(root, tasks_path),
        module=module,
    )
    validate_pack(pack, tasks_path)
    return pack


def load_tasks(path: Path) -> list[Task]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DomainError(f"{path}: no such tasks file") from None
    except (OSError, UnicodeDecodeError) as exc:  # a directory, no permission, not UTF-8
        raise DomainError(f"{path}: cannot read the tasks file: {getattr(exc, 'strerror', None) or exc}") from None
    except json.JSONDecodeError as exc:
        raise DomainError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None
    if isinstance(raw, dict) and "tasks" in raw:
        raw = raw["tasks"]
    try:
        return _TASKS_ADAPTER.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _task_location(raw, first["loc"])
        raise DomainError(f"{path}: {where}: {first['msg']}") from None


def _task_location(raw: Any, loc: tuple[Any, ...]) -> str:
    if loc and isinstance(loc[0], int) and isinstance(raw, list) and loc[0] < len(raw):
        item = raw[loc[0]]
        task_id = item.get("id") if isinstance(item, dict) else None
        rest = ".".join(str(part) for part in loc[1:])
        label = f"task {loc[0]}" + (f" (id {task_id!r})" if task_id else "")
        return f"{label}, field {rest}" if rest else label
    return "field " + ".".join(str(part) for part in loc)


def _load_tools_module(root: Path) -> ModuleType:
    builtin = builtin_domains_dir().resolve()
    try:
        if root.parent == builtin:
            return importlib.import_module(f"tauproxy_domains.{root.name}.tools")
        package = f"tauproxy_ext_{root.name}"
        if package not in sys.modules:
            spec = importlib.util.spec_from_file_location(
                package, root / "__init__.py", submodule_search_locations=[str(root)]
            )
            if spec is None or spec.loader is None:
                raise DomainError(f"{root}: cannot load as a package")
            pkg = importlib.util.module_from_spec(spec)
            sys.modules[package] = pkg
            if (root / "__init__.py").exists():
                spec.loader.exec_module(pkg)
        return importlib.import_module(f"{package}.tools")
    except DomainError:
        raise
    except Exception as exc:
        raise DomainError(f"{root / 'tools.py'}: failed to import: {type(exc).__name__}: {exc}") from None


def _collect_functions(root: Path, module: ModuleType) -> dict[str, DomainFunction]:
    origin = str(root / "tools.py")
    functions: dict[str, DomainFunction] = {}
    for function in marked_functions(vars(module), origin):
        if function.name in functions:
            raise DomainError(f"{origin}: two functions are named {function.name!r}")
        functions[function.name] = function
    if not any(f.mark.role == "tool" and f.mark.side == "assistant" for f in functions.values()):
        raise DomainError(f"{origin}: no agent tools (mark functions with @tool)")
    return functions


def _base_state(root: Path, module: ModuleType) -> BaseState:
    """The pack's starting state, from tauproxy's cross-process cache while the pack's files, the seed
    and the state's own code are the ones it was built from (generating airline's DB and writing its
    records as canonical JSON was half of a small replay). `build_db(seed)` must be a function of the
    seed and the pack's files only: docs/domains.md says so."""
    files = sorted(p for p in root.rglob("*") if p.is_file() and not _skipped(p.relative_to(root)))
    inputs: dict[str, str | int] = {
        "pack": files_digest(files),
        "seed": DB_SEED,
        "code": files_digest(Path(module_file) for module_file in (__file__, state_module.__file__)),
    }
    return cached("pack-db", inputs, BaseState, lambda: BaseState(_load_db(root, module)))


def _skipped(relative: Path) -> bool:
    """Bytecode and hidden folders (a pack kept in its own git repository) are no input of its DB."""
    return any(part == "__pycache__" or part.startswith(".") for part in relative.parts)


def _load_db(root: Path, module: ModuleType) -> dict[str, dict[str, Any]]:
    db_json = root / "db.json"
    if db_json.exists():
        try:
            data = json.loads(db_json.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DomainError(f"{db_json}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None
    else:
        build = getattr(module, "build_db", None)
        if build is None:
            try:
                db_module = importlib.import_module(module.__name__.rsplit(".", 1)[0] + ".db")
            except ModuleNotFoundError:
                raise DomainError(f"{root}: no db.json and no build_db(seed) in tools.py or db.py") from None
            build = getattr(db_module, "build_db", None)
            if build is None:
                raise DomainError(f"{root / 'db.py'}: defines no build_db(seed)")
        data = build(DB_SEED)
    if not isinstance(data, dict):
        raise DomainError(f"{root}: the DB must be an object of tables")
    return data


def validate_pack(pack: DomainPack, tasks_path: Path) -> None:
    """Cross-checks that pydantic cannot do: every name a task uses exists in the pack."""
    seen: set[str] = set()
    for index, task in enumerate(pack.tasks):
        where = f"{tasks_path}: task {index} (id {task.id!r})"
        if task.id in seen:
            raise DomainError(f"{where}: duplicate task id")
        seen.add(task.id)
        criteria = task.evaluation_criteria
        for action in task.golden_actions():
            function = pack.functions.get(action.name)
            if function is None or function.mark.role != "tool":
                raise DomainError(f"{where}: field evaluation_criteria.actions: unknown tool {action.name!r}")
            wanted_side = "user" if action.requestor == "user" else "assistant"
            if function.mark.side != wanted_side:
                raise DomainError(
                    f"{where}: field evaluation_criteria.actions: {action.name!r} is not a {action.requestor} tool"
                )
        calls: list[EnvFunctionCall] = [*(criteria.env_assertions or [] if criteria else [])]
        if task.initial_state and task.initial_state.initialization_actions:
            calls.extend(task.initial_state.initialization_actions)
        for call in calls:
            if call.func_name not in pack.functions:
                raise DomainError(f"{where}: unknown function {call.func_name!r} in env_assertions or initialization")


def _content_hash(root: Path, tasks_path: Path) -> str:
    digest = hashlib.sha256()
    files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix in (".md", ".json", ".py"))
    if tasks_path.resolve() not in {p.resolve() for p in files}:
        files.append(tasks_path)
    for path in files:
        if path.name == "tasks.json" and path.resolve() != tasks_path.resolve():
            continue
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def policy_check_of(pack: DomainPack) -> Any:
    """The pack's optional `policy_check(db, name, arguments) -> str | None` (None: allowed)."""
    return getattr(pack.module, "policy_check", None)
