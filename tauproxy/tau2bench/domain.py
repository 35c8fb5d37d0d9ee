"""A τ²-bench domain loaded from the installed package, in the shape tauproxy's runner plans with.

`load_tau2_pack("tau2/airline")` gives a `DomainPack` whose tasks are τ²-bench's (read into our task
model, the same reader `report` uses for τ² files), whose policy is the environment's own and whose
content hash covers the τ² version, the split, the tasks, the policy and the tool schemas. It has no
functions of ours: the tools run on τ²-bench's environment (tauproxy/tau2bench/trial.py), which
keeps the original task objects (`Tau2Domain.tasks`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tauproxy.data_model.task import Task
from tauproxy.derived_cache import cached
from tauproxy.domain.pack import DomainPack
from tauproxy.domain.state import BaseState
from tauproxy.errors import ConfigError
from tauproxy.results.tau2_format import tau2_to_results
from tauproxy.tau2bench.derived import domain_files, prompt_files, tau2_inputs, tau2_package
from tauproxy.tau2bench.environments import environment_factory
from tauproxy.tau2bench.peer import Tau2Domain, installed_version, load_tau2, parse_domain
from tauproxy.tau2bench.registry import REGISTRY_FILE, TaskSet, tau2_registry


@dataclass(frozen=True)
class Tau2Catalog:
    """One τ²-bench domain and split as loaded: its original tasks and what the runner needs."""

    domain: Tau2Domain
    task_set: str  # τ²'s registered task set the tasks come from (`tau2 run --task-set-name`)
    version: str
    tasks: dict[str, Any]  # task id -> tau2.data_model.tasks.Task, in τ²'s order
    policy: str
    agent_tools: list[dict[str, Any]]  # OpenAI schemas, as τ²'s agent sends them
    user_tools: list[dict[str, Any]]
    has_user_tools: bool  # τ²'s user simulator gets tools (and the tools guidelines) only then
    agent_system_prompt: str
    root: Path
    content_sha256: str
    # The same tasks in our task model, read once with the rest: converting them was a fifth of what
    # a run prepares after a cache hit.
    task_models: tuple[Task, ...]

    def task(self, task_id: str) -> Any:
        try:
            return self.tasks[task_id]
        except KeyError:
            raise ConfigError(f"domain {self.domain.name!r} has no task {task_id!r}") from None


@lru_cache(maxsize=16)
def load_catalog(name: str, task_set_name: str | None = None) -> Tau2Catalog:
    """The domain's tasks from its own task set, or from `task_set_name` (`tau2 run --task-set-name`),
    loaded as `tau2 run` loads them (`load_tasks`): the set's loader with the split's name.

    Built once per τ² install and domain: later processes read it from tauproxy's cross-process cache
    (tauproxy/derived_cache.py), keyed by τ²'s version and the bytes of every file it is read from."""
    domain = parse_domain(name)
    load_tau2()
    task_set = registered_task_set(domain, task_set_name)
    environment = tau2_registry().domains.get(domain.domain)
    modules = [task_set.tasks.module, *([task_set.splits.module] if task_set.splits else [])]
    modules += [environment.module] if environment is not None else []
    files = [*domain_files(modules), *prompt_files(), tau2_package() / REGISTRY_FILE]
    inputs = {
        **tau2_inputs(files, "domain.py", "peer.py", "source.py", "registry.py", "environments.py", "cow.py"),
        "domain": domain.name,
        "task_set": task_set.name,
    }
    return cached("tau2-catalog", inputs, Tau2Catalog, lambda: _build_catalog(domain, task_set))


def _build_catalog(domain: Tau2Domain, task_set: TaskSet) -> Tau2Catalog:
    version = load_tau2()
    from tau2.utils.utils import DATA_DIR

    from tauproxy.tau2bench.source import tau2_prompts

    splits = task_set.splits.load()() if task_set.splits is not None else None  # mock registers no split loader
    if splits is not None and domain.split not in splits:
        raise ConfigError(
            f"τ²-bench task set {task_set.name!r} has no task split {domain.split!r} "
            f"(splits: {', '.join(sorted(splits))}; name one as tau2/{domain.domain}:<split>)"
        )
    try:
        tasks = task_set.tasks.load()(task_split_name=domain.split)
    except ValueError as exc:  # mock has no splits file entry for an unknown split
        raise ConfigError(f"τ²-bench domain {domain.domain!r}: {exc}") from None
    environment = environment_factory(domain.domain)()  # a fork: its tools and policy are τ²'s
    tools = environment.get_tools()
    try:
        user_tools = environment.get_user_tools()
    except Exception:  # τ²'s run_task reads a domain without user tools the same way
        user_tools = None
    policy = environment.get_policy()
    agent_schemas = [tool.openai_schema for tool in tools]
    user_schemas = [tool.openai_schema for tool in user_tools or []]
    task_dumps = [_without_timestamps(task.model_dump(mode="json")) for task in tasks]
    by_id = {task.id: task for task in tasks}
    digest = hashlib.sha256(
        json.dumps(
            {
                "tau2": version,
                "domain": domain.domain,
                "split": domain.split,
                # Only another set than the domain's own is named, so a default run's hash is unchanged.
                **({"task_set": task_set.name} if task_set.name != domain.domain else {}),
                "tasks": task_dumps,
                "policy": policy,
                "agent_tools": agent_schemas,
                "user_tools": user_schemas,
            },
            sort_keys=True,
            default=str,
        ).encode()
    ).hexdigest()
    return Tau2Catalog(
        domain=domain,
        task_set=task_set.name,
        version=version,
        tasks=by_id,
        policy=policy,
        agent_tools=agent_schemas,
        user_tools=user_schemas,
        has_user_tools=user_tools is not None,
        agent_system_prompt=tau2_prompts().agent_system_prompt(policy),
        root=Path(DATA_DIR) / "tau2" / "domains" / domain.domain,
        content_sha256=digest,
        task_models=tuple(_read_tasks(domain, list(by_id.values()))),
    )


def registered_task_set(domain: Tau2Domain, name: str | None) -> TaskSet:
    """The task set `tau2 run` loads for this domain: `--task-set-name`, else the domain's own name."""
    task_sets = tau2_registry().task_sets
    chosen = name or domain.domain
    if chosen not in task_sets:
        given = "--task-set-name" if name else f"domain {domain.domain!r}'s default task set"
        raise ConfigError(f"τ²-bench registers no task set {chosen!r} ({given}; task sets: {', '.join(task_sets)})")
    task_set = task_sets[chosen]
    if not task_set.takes_split():
        raise ConfigError(
            f"τ²-bench's task set {chosen!r} cannot be loaded as `tau2 run` loads it (its loader takes no "
            f"task split, so `tau2 run --task-set-name {chosen}` raises TypeError); pick its tasks with "
            f"tau2/{domain.domain}:<split> instead"
        )
    return task_set


def _without_timestamps(value: Any) -> Any:
    """τ² stamps a task's message history with the time it was loaded: not content, so not hashed."""
    if isinstance(value, dict):
        return {k: _without_timestamps(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list):
        return [_without_timestamps(v) for v in value]
    return value


def our_tasks(catalog: Tau2Catalog) -> list[Task]:
    """τ²'s tasks in our task model (fields we do not model dropped), for results and reports."""
    return list(catalog.task_models)


def _read_tasks(domain: Tau2Domain, tasks: list[Any]) -> list[Task]:
    document = {
        "info": {"environment_info": {"domain_name": domain.domain}},
        "tasks": [task.model_dump(mode="json") for task in tasks],
        "simulations": [],
    }
    converted = {task.id: task for task in tau2_to_results(document, source=domain.name).tasks}
    # A task our model cannot read still runs on τ²'s side; it is kept by id with its user scenario.
    return [converted.get(str(task.id)) or _bare_task(str(task.id)) for task in tasks]


def _bare_task(task_id: str) -> Task:
    return Task.model_validate({"id": task_id, "user_scenario": {"instructions": "(τ²-bench task; see the package)"}})


def load_tau2_pack(name: str, task_set_name: str | None = None) -> DomainPack:
    """The runner's view of a τ²-bench domain (no functions of ours: τ²'s environment runs the tools)."""
    catalog = load_catalog(name, task_set_name)
    # The databases every trial forks from, loaded now with the rest of what a run prepares, not by the
    # first trial: the CLI then freezes them out of the garbage collector's scans (cli/run_view.py), as
    # it did when building the catalog loaded them; a catalog read from the cache does not.
    environment_factory(catalog.domain.domain)
    return DomainPack(
        name=catalog.domain.name,
        root=catalog.root,
        policy=catalog.policy,
        tasks=our_tasks(catalog),
        functions={},
        base_state=BaseState({}),
        content_sha256=catalog.content_sha256,
    )


def describe(name: str) -> dict[str, Any]:
    """What `tauproxy domains list | show` print for a τ²-bench domain."""
    catalog = load_catalog(name)
    return {
        "name": catalog.domain.name,
        "engine": f"tau2 {installed_version()}",
        "root": str(catalog.root),
        "content_sha256": catalog.content_sha256,
        "agent_tools": [_tool_row(s, "agent") for s in catalog.agent_tools],
        "user_tools": [_tool_row(s, "user") for s in catalog.user_tools],
        "tasks": list(catalog.tasks),
        "dual_control": bool(catalog.user_tools),
    }


def _tool_row(schema: dict[str, Any], side: str) -> dict[str, str]:
    function = schema.get("function") or {}
    return {"name": str(function.get("name")), "kind": side, "description": str(function.get("description") or "")}
