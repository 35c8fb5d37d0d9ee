"""Copy-on-write forks of a τ²-bench domain's databases: fresh environments in microseconds, graded exactly.

τ² builds three environments per trial (the live one and two in `EnvironmentEvaluator`) and each loads
its DB from disk (airline: 0.25 s), then hashes it whole (`get_dict_hash(db.model_dump())`, 0.085 s).
An `EnvironmentFactory` loads the DB once and hands out forks instead:

- a fork is the real DB class (`model_construct`, no validation); each top-level field that is a large
  dict of records (airline flights/users/reservations, retail products/users/orders) is a `CowDict`
  that shares the base's records until a record is handed out to Python code, then copies that record
  once; every other field is copied whole (telecom and mock DBs are small and keep τ²'s own hash);
- the toolkit of a fork with copy-on-write fields gets an instance attribute `get_db_hash` that hashes
  only the delta from the base (see `_DeltaHasher` for why equal delta hashes mean equal τ² hashes).

Only `tau2.domains.<d>.environment`, `tau2.environment.*` and `tau2.utils.*` are imported (lazily: tau2
is an optional extra): none of them imports litellm, which strict replay must never load.
"""

from __future__ import annotations

import copy
import enum
import hashlib
import importlib
import json
import threading
import typing
import weakref
from collections.abc import Callable, ItemsView, Iterable, Iterator, ValuesView
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from tauproxy.tau2bench import model_pickle
from tauproxy.tau2bench.model_pickle import LazyRecord, load_at, materialize

__all__ = ["COW_MIN_ENTRIES", "BaseDatabases", "CowDict", "EnvironmentFactory", "fast_copy", "fork_db"]

# A dict field with at least this many records is shared copy-on-write; smaller ones are copied whole
# (copying a handful of records is cheaper than tracking them).
COW_MIN_ENTRIES = 32

_ATOMS: frozenset[type] = frozenset({str, int, float, bool, type(None), bytes, complex})


def fast_copy(value: Any) -> Any:
    """A deep copy of validated pydantic data (models, lists, dicts, tuples, sets, immutables).

    Pydantic-validated records hold no shared or cyclic references, so no memo is needed, and
    immutables (str, numbers, enum members) are returned as they are: about 3x faster than
    `copy.deepcopy` on τ²'s records (bench/tau2_env_fork.py). Anything else goes to `copy.deepcopy`.
    """
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {k: v if type(v) in _ATOMS else fast_copy(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _ATOMS else fast_copy(v) for v in value]
    if isinstance(value, BaseModel):
        return _copy_model(value, fast_copy)
    if kind is tuple:
        return tuple(fast_copy(v) for v in value)
    if kind is set or kind is frozenset:
        return kind(fast_copy(v) for v in value)
    if isinstance(value, enum.Enum):
        return value
    return copy.deepcopy(value)


_new_object = object.__new__
_set_attribute = object.__setattr__


def _copy_model(model: BaseModel, copy_field: Callable[[Any], Any]) -> BaseModel:
    # What pydantic's own __deepcopy__ sets, without its memo bookkeeping; atoms inline (the hot path).
    new = _new_object(type(model))
    _set_attribute(
        new,
        "__dict__",
        {k: v if type(v) in _ATOMS else copy_field(v) for k, v in model.__dict__.items()},
    )
    _set_attribute(new, "__pydantic_fields_set__", set(model.__pydantic_fields_set__))
    extra = model.__pydantic_extra__
    _set_attribute(new, "__pydantic_extra__", None if extra is None else fast_copy(extra))
    private = model.__pydantic_private__
    _set_attribute(new, "__pydantic_private__", None if private is None else fast_copy(private))
    return new


# Inside a copied record, a dict of at least this many sub-records (airline flight dates, retail product
# variants) is itself shared copy-on-write: a search that reads every flight then copies ~10 objects per
# flight instead of ~200.
NESTED_COW_MIN_ENTRIES = 4


# Whether a base's nested dict holds records only, by the dict's id: a search reads every flight, and
# checking each flight's dates anew was most of its cost. An entry keeps its dict alive, so the id is
# never reused; only the bases' own dicts get here (a fork copies from its base), and bases never change.
_RECORDS_ONLY: dict[int, tuple[dict[str, Any], bool]] = {}


def _holds_records_only(value: dict[str, Any]) -> bool:
    known = _RECORDS_ONLY.get(id(value))
    if known is not None and known[0] is value:
        return known[1]
    answer = all(isinstance(v, BaseModel) for v in value.values())
    _RECORDS_ONLY[id(value)] = (value, answer)
    return answer


def _private_field(value: Any) -> Any:
    """A field of a shared record copied for the record's new owner, who may mutate it: deep, except that
    large dicts of sub-records become CowDicts over the base's (which guard every path to their records
    in turn)."""
    kind = type(value)
    if kind is dict and len(value) >= NESTED_COW_MIN_ENTRIES:
        known = _RECORDS_ONLY.get(id(value))
        if known[1] if known is not None and known[0] is value else _holds_records_only(value):
            return CowDict(value)
    if isinstance(value, BaseModel):
        return _copy_model(value, _private_field)
    return fast_copy(value)


class CowDict(dict[str, Any]):
    """A dict that starts holding its base's records (shared) and copies a record before handing it out.

    At C level (pydantic's `model_dump`, `dict.__eq__`) it is a plain dict with the right content. Every
    Python-level access that returns a record (`[]`, `get`, `values`, `items`, `pop`, `popitem`,
    `setdefault`, `copy`, `dict(d)`, `{**d}`) first replaces that entry with a private copy, once per key,
    so the caller may mutate it. `touched` holds every key that may differ from the base (copied, set,
    deleted); keys-only access (`in`, `len`, `keys()`, iteration) copies nothing.
    """

    __slots__ = ("base", "touched")

    def __init__(self, base: dict[str, Any]) -> None:
        dict.__init__(self, base)
        self.base = base
        self.touched: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        # One call per record handed out: a scan (airline's flight search) comes here for every record.
        if key in self.touched:
            return dict.__getitem__(self, key)
        value = dict.__getitem__(self, key)  # a missing key raises KeyError, as dict's
        if type(value) is LazyRecord:  # a base loaded lazily (model_pickle): its record, loaded once
            value = value.load()
        value = _copy_model(value, _private_field) if isinstance(value, BaseModel) else fast_copy(value)
        dict.__setitem__(self, key, value)
        self.touched.add(key)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self.touched.add(key)

    def __delitem__(self, key: str) -> None:
        dict.__delitem__(self, key)
        self.touched.add(key)

    # Overriding __iter__ (same behaviour) makes CPython's dict(d), {**d} and d2.update(d) go through
    # keys() and __getitem__ instead of reading the shared records at C level.
    def __iter__(self) -> Iterator[str]:
        return dict.__iter__(self)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if dict.__contains__(self, key) else default

    def values(self) -> ValuesView[Any]:  # type: ignore[override]
        return ValuesView(self)  # iterates keys and copies lazily through __getitem__

    def items(self) -> ItemsView[str, Any]:  # type: ignore[override]
        return ItemsView(self)

    def pop(self, key: str, *default: Any) -> Any:
        if dict.__contains__(self, key):
            value = self[key]
            del self[key]
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self) -> tuple[str, Any]:
        if not dict.__len__(self):
            raise KeyError("popitem(): dictionary is empty")
        key = next(reversed(self))
        return key, self.pop(key)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self[key]
        self[key] = default
        return default

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def clear(self) -> None:
        self.touched.update(dict.keys(self))
        dict.clear(self)

    def copy(self) -> dict[str, Any]:
        # As dict.copy: a plain dict sharing this fork's (now private) records.
        return {key: self[key] for key in dict.keys(self)}

    def __copy__(self) -> dict[str, Any]:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {
            key: copy.deepcopy(value.load() if type(value) is LazyRecord else value, memo)
            for key, value in dict.items(self)
        }

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.copy(),))

    def __or__(self, other: Any) -> dict[str, Any]:  # type: ignore[override]
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: Any) -> dict[str, Any]:  # type: ignore[override]
        merged = dict(other)
        merged.update(self.copy())
        return merged

    def __ior__(self, other: Any) -> CowDict:  # type: ignore[override]
        self.update(other)
        return self

    @classmethod
    def fromkeys(cls, keys: Iterable[str], value: Any = None) -> dict[str, Any]:  # type: ignore[override]
        return dict.fromkeys(keys, value)


def _record_type(db_type: type[BaseModel], field: str) -> type[BaseModel] | None:
    """The record class of a `Dict[str, Model]` field, or None for any other field."""
    annotation = db_type.model_fields[field].annotation
    if typing.get_origin(annotation) is not dict:
        return None
    args = typing.get_args(annotation)
    if len(args) != 2 or args[0] is not str:
        return None
    record = args[1]
    return record if isinstance(record, type) and issubclass(record, BaseModel) else None


def _cow_fields(db: BaseModel) -> dict[str, type[BaseModel]]:
    """The fields of `db` to share copy-on-write, with their record class."""
    fields: dict[str, type[BaseModel]] = {}
    for name in type(db).model_fields:
        record = _record_type(type(db), name)
        value = getattr(db, name)
        if (
            record is not None
            and type(value) is dict
            and len(value) >= COW_MIN_ENTRIES
            and all(type(v) is record or (type(v) is LazyRecord and v.record_type is record) for v in value.values())
        ):
            fields[name] = record
    return fields


def fork_db(base: BaseModel, cow_fields: Iterable[str]) -> BaseModel:
    """A new instance of `base`'s class: `cow_fields` share the base's records, the rest is copied."""
    shared = set(cow_fields)
    values: dict[str, Any] = {
        name: CowDict(getattr(base, name)) if name in shared else fast_copy(getattr(base, name))
        for name in type(base).model_fields
    }
    fork = type(base).model_construct(**values)
    if base.__pydantic_extra__:
        object.__setattr__(fork, "__pydantic_extra__", fast_copy(base.__pydantic_extra__))
    return fork


def _dumps(value: Any) -> str:
    # The serialisation τ²'s get_dict_hash gives this value inside the DB's dump.
    return json.dumps(value.model_dump(), sort_keys=True, default=str)


def _identical(a: Any, b: Any) -> bool:
    """True only if `a` and `b` certainly serialise the same; False means "compare the dumps".

    An untouched copy shares every immutable leaf with the base (fast_copy returns them as they are),
    so a record that was only read is recognised here by identity, without serialising it.
    """
    if a is b:
        return True
    kind = type(a)
    if kind is CowDict:
        return type(b) is dict and _cow_identical(a, b)
    if kind is not type(b):
        return False
    if kind is str or kind is int or kind is bool:
        return bool(a == b)
    if kind is float:
        return bool(a.hex() == b.hex())  # -0.0 == 0.0, but they serialise apart
    if kind is list or kind is tuple:
        if len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):  # noqa: SIM110  (a loop: all() over a generator costs a frame per item)
            if x is not y and not _identical(x, y):
                return False
        return True
    if kind is dict:
        if len(a) != len(b):
            return False
        for k, v in a.items():
            if type(k) is not str or k not in b:
                return False
            w = b[k]
            if v is not w and not _identical(v, w):
                return False
        return True
    if isinstance(a, BaseModel):
        # The dict branch above for the fields, inlined: a fork's hash compares every record it handed
        # out (a flight search hands out all of airline's 300 flights) with the base's.
        extra = a.__pydantic_extra__
        if extra is not b.__pydantic_extra__ and not _identical(extra, b.__pydantic_extra__):
            return False
        fields, base_fields = a.__dict__, b.__dict__
        if len(fields) != len(base_fields):
            return False
        for k, v in fields.items():
            w = base_fields.get(k, _ABSENT)
            if v is not w and (w is _ABSENT or type(k) is not str or not _identical(v, w)):
                return False
        return True
    return False


_ABSENT = object()


def _cow_identical(a: CowDict, b: dict[str, Any]) -> bool:
    # Untouched entries of a CowDict are its base's own objects: only the touched ones need a look.
    if a.base is not b or dict.__len__(a) != len(b):
        return False
    for key in a.touched:
        present = dict.__contains__(a, key)
        if present != (key in b) or (present and not _identical(dict.__getitem__(a, key), load_at(b, key))):
            return False
    return True


class _BaseDumps:
    """The base's per-record serialisations, memoised; shared by every fork of one factory.

    Threads may share a factory: a dict read or write is atomic under the GIL, and two threads that race
    on one key compute the same string, so the lock only keeps the work from being done twice in a row.
    """

    def __init__(self, base: BaseModel, fields: Iterable[str]) -> None:
        self._base = {name: getattr(base, name) for name in fields}
        self._memo: dict[str, dict[str, str]] = {name: {} for name in self._base}
        self._lock = threading.Lock()

    def get(self, field: str, key: str) -> str:
        memo = self._memo[field]
        found = memo.get(key)
        if found is None:
            found = _dumps(load_at(self._base[field], key))
            with self._lock:
                memo[key] = found
        return found


class _DeltaHasher:
    """`get_db_hash` for a fork with copy-on-write fields: a hash of its delta from the base.

    Why equal delta hashes <=> equal τ² hashes, for two forks A and B of one base:
    τ²'s hash is sha256 of json.dumps(db.model_dump(), sort_keys=True, default=str). With sorted keys that
    string is an injective function of, per field, the mapping key -> json of the record (each record's
    json is exactly `_dumps(record)` when the record is of the field's declared class, which is checked,
    else we fall back to τ²'s hash). A cow field of a fork equals the base except at `touched` keys, so
    its mapping is fixed by (a) the keys deleted from the base, and (b) the keys added or whose json
    differs from the base's, with that json. We hash exactly (a), (b) (sorted, canonical JSON), plus the
    full dump of every other field: A and B have the same τ² string iff they have the same (a), (b) and
    rest, iff the same delta hash (up to sha256 collisions, as τ²'s own compare). Records that were only
    read are dropped from (b) by `_identical` or by comparing the dumps, never listed, so reading a
    record cannot change the hash.
    """

    def __init__(self, toolkit: Any, fork: BaseModel, cow: dict[str, type[BaseModel]], base_dumps: _BaseDumps) -> None:
        # Held weakly: the toolkit holds this hasher (its get_db_hash), and a cycle between them would
        # leave every finished trial's environment, fork and copied records to the garbage collector,
        # scanned again and again until it frees them; without one they go when the trial drops them.
        self._toolkit = weakref.ref(toolkit)
        self._fork = fork
        self._cow = cow
        self._shared = {name: getattr(fork, name) for name in cow}
        self._base_dumps = base_dumps

    def __call__(self) -> str:
        from tau2.utils import get_dict_hash

        toolkit = self._toolkit()
        if toolkit is None:
            raise ReferenceError("get_db_hash of an environment's toolkit that no longer exists")
        fork = toolkit.db
        if fork is not self._fork or any(fork.__dict__.get(n) is not d for n, d in self._shared.items()):
            # τ²'s update_db (initialization_data) or a tool replaced the DB or a field: no base to diff.
            return str(get_dict_hash(materialize(fork).model_dump()))
        delta: dict[str, Any] = {}
        for name, shared in self._shared.items():
            field_delta = self._field_delta(name, shared, self._cow[name])
            if field_delta is None:
                return str(get_dict_hash(materialize(fork).model_dump()))
            delta[name] = field_delta
        rest = fork.model_dump(exclude=set(self._shared))
        payload = json.dumps({"cow": delta, "rest": rest}, sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()

    def _field_delta(self, name: str, shared: CowDict, record: type[BaseModel]) -> dict[str, Any] | None:
        base = shared.base
        changed: dict[str, str] = {}
        deleted: list[str] = []
        for key in shared.touched:
            if not dict.__contains__(shared, key):
                if key in base:
                    deleted.append(key)
                continue
            value = dict.__getitem__(shared, key)
            if type(value) is not record:
                return None
            if key in base:
                if _identical(value, load_at(base, key)):
                    continue
                dumped = _dumps(value)
                if dumped == self._base_dumps.get(name, key):
                    continue
                changed[key] = dumped
            else:
                changed[key] = _dumps(value)
        return {"changed": changed, "deleted": sorted(deleted)}


@dataclass(frozen=True)
class BaseDatabases:
    """The databases a domain's environments start from, as τ²'s `get_environment()` leaves them: what
    every fork is made from, and what tauproxy's cross-process cache keeps (tau2bench/environments.py)."""

    db: BaseModel
    user_db: BaseModel | None  # telecom's phone; None for a domain without a user database
    # Fields of `db` pickled record by record, each unpickled when first read (model_pickle.LazyRecord):
    # dicts of records the domain's tools only look up by key. Loaded here, every field is whole.
    lazy_fields: tuple[str, ...] = ()

    @classmethod
    def load(
        cls, get_environment: Callable[..., Any], *, user_db: bool = False, lazy_fields: tuple[str, ...] = ()
    ) -> BaseDatabases:
        loaded = get_environment()
        return cls(loaded.tools.db, loaded.user_tools.db if user_db else None, lazy_fields)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled the lean way (tau2bench/model_pickle.py): unpickling airline's tens of thousands of
        # records through pydantic's __setstate__ was most of loading them from the cache.
        db = model_pickle.with_lazy_records(self.db, self.lazy_fields)
        return (_unpickle_databases, (model_pickle.dumps((db, self.user_db)), self.lazy_fields))


def _unpickle_databases(payload: bytes, lazy_fields: tuple[str, ...] = ()) -> BaseDatabases:
    db, user_db = model_pickle.loads(payload)
    return BaseDatabases(db, user_db, lazy_fields)


def _load_unshared(db: BaseModel, cow: Iterable[str]) -> None:
    # A fork copies every field but the copy-on-write ones whole, at C level: their records must be loaded.
    shared = set(cow)
    for name, value in db.__dict__.items():
        if name not in shared and isinstance(value, dict):
            for key in list(dict.keys(value)):
                load_at(value, key)


class _LoadedUpdate:
    """`update_db` of a fork's toolkit whose base was loaded lazily: τ²'s dumps the whole DB at C level
    (`update_pydantic_model_with_dict`), so every record of the fork is loaded first."""

    def __init__(self, toolkit: Any) -> None:
        self._toolkit = weakref.ref(toolkit)  # weakly, as _DeltaHasher and for the same reason

    def __call__(self, update_data: dict[str, Any] | None = None) -> None:
        toolkit = self._toolkit()
        if toolkit is None:
            raise ReferenceError("update_db of an environment's toolkit that no longer exists")
        if toolkit.db is not None:
            materialize(toolkit.db)
        type(toolkit).update_db(toolkit, update_data)


class EnvironmentFactory:
    """Fresh τ² environments of one domain (and policy variant), forked from DBs loaded once.

    `factory(solo_mode=...)` is an `environment_constructor` as τ²'s `EnvironmentEvaluator` calls it;
    every call returns an independent environment, built by the domain's own `get_environment` around
    forks of the base DBs (`bases`, else loaded here by `get_environment()`). Safe to share between
    threads: the base is only read.
    """

    def __init__(
        self,
        get_environment: Callable[..., Any],
        *,
        user_db: bool = False,
        check_base: bool = False,
        bases: BaseDatabases | None = None,
    ) -> None:
        from tau2.utils import get_dict_hash

        self._get_environment = get_environment
        self._user_db = user_db
        if bases is None:
            bases = BaseDatabases.load(get_environment, user_db=user_db)
        self._base_db: BaseModel = bases.db
        self._base_user_db: BaseModel | None = bases.user_db if user_db else None
        self._cow = _cow_fields(self._base_db)
        _load_unshared(self._base_db, self._cow)
        self._lazy = any(
            type(record) is LazyRecord for name in self._cow for record in getattr(self._base_db, name).values()
        )
        self._base_dumps = _BaseDumps(self._base_db, self._cow)
        # The base's full hash, for base_unchanged() only: 85 ms on airline, so tests ask for it.
        self._loaded_hashes = self._hashes(get_dict_hash) if check_base else None

    @classmethod
    def for_domain(cls, domain: str, function: str = "get_environment", check_base: bool = False) -> EnvironmentFactory:
        """The factory of τ²'s domain `domain` (mock, airline, retail, telecom); `function` picks a policy
        variant (telecom's `get_environment_workflow_policy`); `check_base` enables base_unchanged()."""
        module = importlib.import_module(f"tau2.domains.{domain}.environment")
        return cls(getattr(module, function), user_db=domain == "telecom", check_base=check_base)

    @property
    def cow_fields(self) -> tuple[str, ...]:
        """The DB fields shared copy-on-write (empty for the small DBs, which keep τ²'s own hash)."""
        return tuple(self._cow)

    @property
    def base_db(self) -> BaseModel:
        """The shared base DB, every record loaded, for tests and benchmarks: read it, never change it."""
        return materialize(self._base_db)

    def __call__(self, solo_mode: bool = False) -> Any:
        db = fork_db(self._base_db, self._cow)
        if self._base_user_db is not None:
            env = self._get_environment(db=db, user_db=fast_copy(self._base_user_db), solo_mode=solo_mode)
        else:
            env = self._get_environment(db=db, solo_mode=solo_mode)
        if self._cow:
            # An instance attribute on this toolkit only: no class or module is patched.
            env.tools.get_db_hash = _DeltaHasher(env.tools, db, self._cow, self._base_dumps)
        if self._lazy:
            env.tools.update_db = _LoadedUpdate(env.tools)
        return env

    def base_unchanged(self) -> bool:
        """Debug check for tests: τ²'s full hash of the base DBs is still what it was at load."""
        from tau2.utils import get_dict_hash

        if self._loaded_hashes is None:
            raise ValueError("base_unchanged() needs a factory made with check_base=True")
        return self._hashes(get_dict_hash) == self._loaded_hashes

    def _hashes(self, get_dict_hash: Callable[[dict[str, Any]], str]) -> tuple[str, str | None]:
        user = None if self._base_user_db is None else get_dict_hash(self._base_user_db.model_dump())
        return get_dict_hash(self.base_db.model_dump()), user
