"""What the copy-on-write tests share: τ²'s modules and tasks by domain, its fresh environment built on a
copy of one loaded DB (and such environments reused, put back as loaded after each use), our factory,
playing a task's actions on an environment, a fork's full dump built from its base's where it shares
the base's records, and τ²'s full hash computed once per distinct DB state."""

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
            # A dict of records is compared record by record (a byte-equal field has no stale record);
            # any other field whole.
            if self._mend_records(db, name, value):
                continue
            loaded_exact, loaded_pickle = self._fields[name]
            exact = _exact(value)
            if exact is None or exact != loaded_exact:
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
    """τ²'s full hash of dumped DBs, computed once per distinct state: a dump whose data is exactly one
    already hashed (`_exact`: byte-equal marshal of every part) has the same JSON, so the same hash.

    The memo key is a sha256 over the dump's parts in order: each top-level field's name, and for a
    dict of record dumps its keys (in order) and the sha256 of each record's `_exact` bytes, else the
    sha256 of the field's (marshal's bytes carry their own type and length; digests are 32 bytes).
    Two dumps get the same key only if every part is byte-equal (the same trust τ²'s own comparison
    puts in sha256). The records of a `pin`ned dump (the base's, which fork dumps share by identity,
    see `ForkDumps`) are digested once; any other record is digested each time. Dumps `_exact`
    refuses are always hashed."""

    def __init__(self) -> None:
        self._known: dict[bytes, str] = {}
        self._pinned: dict[int, tuple[Any, bytes | None]] = {}  # id -> (the object, kept alive; digest)
        self.computed = 0

    def pin(self, dump: Any) -> None:
        for value in dump.values():
            if type(value) is dict:
                for record in value.values():
                    self._pinned[id(record)] = (record, self._digest(record))

    def __call__(self, db_dump: Any) -> str:
        key = self._key(db_dump)
        if key is not None and key in self._known:
            return self._known[key]
        self.computed += 1
        found = str(get_dict_hash(db_dump))
        if key is not None:
            self._known[key] = found
        return found

    def _digest(self, value: Any) -> bytes | None:
        pinned = self._pinned.get(id(value))
        if pinned is not None and pinned[0] is value:
            return pinned[1]
        exact = _exact(value)
        return None if exact is None else hashlib.sha256(exact).digest()

    def _key(self, dump: Any) -> bytes | None:
        if type(dump) is not dict:
            exact = _exact(dump)
            return None if exact is None else hashlib.sha256(b"W" + exact).digest()
        key = hashlib.sha256(b"T" + len(dump).to_bytes(8, "big"))
        for name, value in dump.items():
            exact_name = _exact(name)
            if exact_name is None:
                return None
            key.update(exact_name)  # marshal's bytes carry their own type and length
            if type(value) is dict:
                exact_keys = _exact(list(value))  # the record keys in order, then one digest per record
                found = [self._digest(record) for record in value.values()]
                digests = [digest for digest in found if digest is not None]
                if exact_keys is None or len(digests) != len(found):
                    return None
                key.update(b"D" + exact_keys + b"".join(digests))
            else:
                digest = self._digest(value)
                if digest is None:
                    return None
                key.update(b"V" + digest)
        return key.digest()


class ForkDumps:
    """`dumps(fork)` for a factory's forks, built from one dump of the base: a copy-on-write field's
    record that is still the base's own object (never handed out) dumps as the base's record did, so
    its part of the base's dump is taken as it is; every other record is dumped on its own, and the
    other fields through the DB's own `model_dump`. A fork whose DB or field was replaced, a record
    of another class than the base's, or a DB whose dump is not its fields in order falls back to
    `dumps`. test_fork_dumps_built_from_the_base_are_the_full_dumps checks the two agree. The parts
    taken from the base dump are shared: read them, never change them."""

    def __init__(self, factory: EnvironmentFactory) -> None:
        base = factory.base_db
        self.base_dump: dict[str, Any] = base.model_dump()
        self._fields = {name: getattr(base, name) for name in factory.cow_fields}
        self._record_types = {name: {type(record) for record in field.values()} for name, field in self._fields.items()}

    def __call__(self, env: Any) -> tuple[Any, Any]:
        db = env.tools.db
        cow_dumps: dict[str, dict[str, Any]] = {}
        for name, base_field in self._fields.items():
            field_dump = self._field_dump(db.__dict__.get(name), name, base_field)
            if field_dump is None:
                return dumps(env)
            cow_dumps[name] = field_dump
        rest = db.model_dump(exclude=set(self._fields))
        names = list(type(db).model_fields)
        if list(rest) != [name for name in names if name not in cow_dumps]:
            return dumps(env)
        user = env.user_tools.db.model_dump() if env.user_tools is not None else None
        return {name: cow_dumps[name] if name in cow_dumps else rest[name] for name in names}, user

    def _field_dump(self, held: Any, name: str, base_field: dict[str, Any]) -> dict[str, Any] | None:
        if type(held) is not CowDict or held.base is not base_field:
            return None
        (record_type,) = self._record_types[name]
        base_dump = self.base_dump[name]
        field_dump: dict[str, Any] = {}
        for key in dict.keys(held):
            record = dict.__getitem__(held, key)
            if record is base_field.get(key):
                field_dump[key] = base_dump[key]
            elif type(record) is record_type:
                field_dump[key] = record.model_dump()
            else:
                return None
        return field_dump


_FORK_DUMPS: dict[str, ForkDumps] = {}


def fork_dumps(domain: str) -> ForkDumps:
    if domain not in _FORK_DUMPS:
        _FORK_DUMPS[domain] = ForkDumps(factory(domain))
    return _FORK_DUMPS[domain]


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
