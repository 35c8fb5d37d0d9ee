"""What the copy-on-write tests share: τ²'s modules and tasks by domain, its fresh environment built on a
copy of one loaded DB, our factory, and playing a task's actions on an environment."""

from __future__ import annotations

import contextlib
import importlib
import pickle
from typing import Any

from pydantic import BaseModel
from tau2.utils import get_dict_hash

from tauproxy.tau2bench.cow import CowDict, EnvironmentFactory

DOMAINS = ["mock", "airline", "retail", "telecom"]


def module(domain: str) -> Any:
    return importlib.import_module(f"tau2.domains.{domain}.environment")


_FACTORIES: dict[str, EnvironmentFactory] = {}
_TASKS: dict[str, list[Any]] = {}
_FRESH_DBS: dict[str, tuple[bytes, bytes | None]] = {}


def fresh_environment(domain: str, **kwargs: Any) -> Any:
    """τ²'s own environment from its own `get_environment`, given deep copies (a pickle round trip)
    of the DB it loaded once: reloading and validating the JSON for every task costs far more, and
    the load itself is not under test here (test_a_copied_db_is_a_fresh_load proves them equal)."""
    if domain not in _FRESH_DBS:
        loaded = module(domain).get_environment()
        user = pickle.dumps(loaded.user_tools.db) if loaded.user_tools is not None else None
        _FRESH_DBS[domain] = (pickle.dumps(loaded.tools.db), user)
    db, user_db = _FRESH_DBS[domain]
    if user_db is not None:
        kwargs["user_db"] = pickle.loads(user_db)
    return module(domain).get_environment(db=pickle.loads(db), **kwargs)


def factory(domain: str) -> EnvironmentFactory:
    if domain not in _FACTORIES:
        _FACTORIES[domain] = EnvironmentFactory.for_domain(domain, check_base=True)
    return _FACTORIES[domain]


def tasks(domain: str) -> list[Any]:
    if domain not in _TASKS:
        # mock has no base split: all of its tasks; the others' default is the base split.
        _TASKS[domain] = list(module(domain).get_tasks())
    return _TASKS[domain]


def gold(task: Any) -> list[Any]:
    criteria = task.evaluation_criteria
    return list(criteria.actions or []) if criteria is not None else []


def play(env: Any, task: Any, actions: list[Any]) -> Any:
    """set_state as τ²'s evaluator does, then `actions`, exceptions caught as its evaluator does."""
    state = task.initial_state
    env.set_state(
        initialization_data=state.initialization_data if state is not None else None,
        initialization_actions=state.initialization_actions if state is not None else None,
        message_history=[],
    )
    for action in actions:
        with contextlib.suppress(Exception):
            env.make_tool_call(action.name, requestor=action.requestor, **action.arguments)
    return env


def dumps(env: Any) -> tuple[Any, Any]:
    user = env.user_tools.db.model_dump() if env.user_tools is not None else None
    return env.tools.db.model_dump(), user


def full_hash(env: Any) -> str:
    return str(get_dict_hash(env.tools.db.model_dump()))


def full_hash_of(dump: tuple[Any, Any]) -> str:
    """τ²'s full hash (as `full_hash`) of a DB already dumped by `dumps`."""
    return str(get_dict_hash(dump[0]))


def read_records(fork: Any, keys_from: Any, factory: EnvironmentFactory) -> None:
    """Hand out (materialise) records without changing them: those `keys_from` touched, and every
    record of the first copy-on-write field, through values()."""
    for name in factory.cow_fields:
        mine: CowDict = getattr(fork.tools.db, name)
        theirs: CowDict = getattr(keys_from.tools.db, name)
        for key in theirs.touched:
            if key in mine:
                assert mine[key] is not None
    if factory.cow_fields:
        for record in getattr(fork.tools.db, factory.cow_fields[0]).values():
            assert isinstance(record, BaseModel)
