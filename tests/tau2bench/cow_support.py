"""What the copy-on-write tests share: τ²'s modules and tasks by domain, its fresh environment built on a
copy of one loaded DB (and such environments reused, put back as loaded after each use), our factory,
playing a task's actions on an environment, and τ²'s full hash computed once per distinct DB state."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import marshal
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


def _exact(value: Any) -> bytes | None:
    """Bytes that only equal data (dicts in their order, lists, str, int, float, bool, None) serialises
    to: marshal's version 2 writes content only (no back-references) and tells 1, 1.0, True and -0.0
    and 0.0 apart; None for anything else (marshal refuses subclasses and other objects)."""
    try:
        return marshal.dumps(value, 2)
    except ValueError:
        return None


def exact_dump(env: Any) -> bytes | None:
    """`_exact` of an environment's DB dumps (its DB and user DB)."""
    return _exact(dumps(env))


class FreshEnvironments:
    """τ²'s own environments of one domain, each equal to a fresh load, reused from task to task.

    Building one (`fresh_environment`) costs as much as τ²'s file load; most tasks change a handful
    of records. So an environment handed out is later given back with its DB's dump (`release`), and
    put back as loaded: every top-level field whose dump is not byte-equal (`_exact`) to the loaded
    one's is mended, record by record for a dict of records (a record whose dump differs, a key added
    or removed, the order of keys) from pickled copies of the loaded records, whole otherwise. Its DB
    then dumps exactly as the loaded one does, with τ²'s own classes holding no state outside their
    fields (test_a_released_environment_is_a_fresh_load checks it). An environment whose DB object
    was replaced, or that has a user DB, or that a dump cannot be compared for, is simply dropped.
    """

    def __init__(self, domain: str) -> None:
        self._domain = domain
        loaded = module(domain).get_environment()
        self._reusable = loaded.user_tools is None
        db = loaded.tools.db
        self._fields: dict[str, tuple[bytes | None, bytes]] = {}
        self._records: dict[str, dict[str, tuple[bytes | None, bytes]]] = {}
        dump = db.model_dump()
        for name, value in dump.items():
            self._fields[name] = (_exact(value), pickle.dumps(getattr(db, name)))
            if type(getattr(db, name)) is dict and type(value) is dict:
                self._records[name] = {
                    key: (_exact(value[key]), pickle.dumps(record)) for key, record in getattr(db, name).items()
                }
        self._idle: list[Any] = []
        self._out: list[Any] = []
        self._dbs: dict[int, Any] = {}  # id(environment) -> the DB object it was built with

    def __call__(self, **kwargs: Any) -> Any:
        """An environment as `fresh_environment(domain, **kwargs)` gives, out until released."""
        if self._idle and kwargs in ({}, {"solo_mode": False}):
            env = self._idle.pop()
        else:
            env = fresh_environment(self._domain, **kwargs)
            self._dbs[id(env)] = env.tools.db
        self._out.append(env)
        return env

    def release_all(self) -> None:
        """Take back every environment still out (τ²'s evaluator builds two per call)."""
        while self._out:
            self.release(self._out[-1])

    def release(self, env: Any, dump: tuple[Any, Any] | None = None) -> None:
        """Take `env` back; `dump` is `dumps(env)` as it is now, if the caller already has it."""
        self._out = [out for out in self._out if out is not env]
        db = self._dbs.pop(id(env), None)
        if not self._reusable or db is None or env.tools.db is not db or env.solo_mode:
            return
        current = (dump or dumps(env))[0]
        if list(current) != list(self._fields):
            return
        for name, value in current.items():
            exact = _exact(value)
            loaded_exact, loaded_pickle = self._fields[name]
            if exact is not None and exact == loaded_exact:
                continue
            if not self._mend_records(db, name, value):
                object.__setattr__(db, name, pickle.loads(loaded_pickle))
        self._dbs[id(env)] = db
        self._idle.append(env)

    def _mend_records(self, db: Any, name: str, value: Any) -> bool:
        records = self._records.get(name)
        held = db.__dict__.get(name)
        if records is None or type(held) is not dict or type(value) is not dict:
            return False
        stale = {key for key, record in value.items() if key not in records or _exact(record) != records[key][0]}
        stale |= {key for key, (exact, _) in records.items() if exact is None}
        if list(value) == list(records):
            for key in stale:
                held[key] = pickle.loads(records[key][1])
            return True
        mended = {
            key: held[key] if key in held and key not in stale else pickle.loads(p) for key, (_, p) in records.items()
        }
        held.clear()
        held.update(mended)
        return True


_FRESH_ENVIRONMENTS: dict[str, FreshEnvironments] = {}


def fresh_environments(domain: str) -> FreshEnvironments:
    if domain not in _FRESH_ENVIRONMENTS:
        _FRESH_ENVIRONMENTS[domain] = FreshEnvironments(domain)
    return _FRESH_ENVIRONMENTS[domain]


class Tau2Hashes:
    """τ²'s full hash of dumped DBs, computed once per distinct state: a dump byte-equal (`_exact`) to
    one already hashed has the same JSON, so the same hash (the key is a sha256 of those bytes, the
    same trust τ²'s own comparison puts in sha256). Dumps `_exact` refuses are always hashed."""

    def __init__(self) -> None:
        self._known: dict[bytes, str] = {}
        self.computed = 0

    def __call__(self, db_dump: Any) -> str:
        exact = _exact(db_dump)
        key = hashlib.sha256(exact).digest() if exact is not None else None
        if key is not None and key in self._known:
            return self._known[key]
        self.computed += 1
        found = str(get_dict_hash(db_dump))
        if key is not None:
            self._known[key] = found
        return found


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
