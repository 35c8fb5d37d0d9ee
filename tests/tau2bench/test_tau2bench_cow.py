"""Copy-on-write τ² environments (tauproxy/tau2bench/cow.py) against τ²'s own, task by task."""

from __future__ import annotations

import gc
import itertools
import os
import subprocess
import sys
import threading
import weakref
from typing import Any

import pytest
from pydantic import BaseModel

pytest.importorskip("tau2")

import cow_support as cow

from tauproxy.tau2bench.cow import CowDict, fast_copy


@pytest.mark.slow
@pytest.mark.parametrize("domain", cow.DOMAINS)
def test_forks_play_every_task_like_fresh_environments_and_hash_alike(domain: str) -> None:
    factory = cow.factory(domain)
    fresh_environments = cow.fresh_environments(domain)
    fork_dumps = cow.fork_dumps(domain)  # the forks' full dumps, their untouched records from the base's
    full_hash_of = cow.Tau2Hashes()  # τ²'s own hash, once per distinct DB state
    full_hash_of.pin(fork_dumps.base_dump)
    differing_pairs = 0
    for task in cow.tasks(domain):
        gold = cow.gold(task)
        fresh = cow.play(fresh_environments(), task, gold)
        forks = {
            "all": cow.play(factory(), task, gold),
            "all_but_last": cow.play(factory(), task, gold[:-1]),
            "none": cow.play(factory(), task, []),
            "read_only": cow.play(factory(), task, []),
        }
        cow.read_records(forks["read_only"], forks["all"], factory)
        fresh_dump = cow.dumps(fresh)
        dumps = {name: fork_dumps(env) for name, env in forks.items()}
        assert dumps["all"] == fresh_dump, task.id
        assert forks["all"].get_user_db_hash() == fresh.get_user_db_hash(), task.id
        full = {name: full_hash_of(dump[0]) for name, dump in dumps.items()}
        fast = {name: env.get_db_hash() for name, env in forks.items()}
        assert full["all"] == full_hash_of(fresh_dump[0]), task.id
        for a, b in itertools.combinations(forks, 2):
            assert (fast[a] == fast[b]) == (full[a] == full[b]), (task.id, a, b)
            differing_pairs += full[a] != full[b]
        assert full["read_only"] == full["none"], task.id
        fresh_environments.release(fresh, fresh_dump)
    assert factory.base_unchanged()
    if domain in ("airline", "retail"):
        assert differing_pairs > 0  # the pairs above were not all trivially equal


@pytest.mark.slow
@pytest.mark.parametrize("domain", cow.DOMAINS)
def test_fork_dumps_built_from_the_base_are_the_full_dumps(domain: str) -> None:
    """The other shortcut above: a fork's dump built from the base's is its full `model_dump`, byte
    for byte, for forks that played tasks, that only read records, and whose DB τ² replaced; and the
    hash memo keys two dumps alike only when they are exactly alike."""
    factory = cow.factory(domain)
    fork_dumps = cow.fork_dumps(domain)
    by_length = sorted(cow.tasks(domain), key=lambda t: len(cow.gold(t)))
    played = [cow.play(factory(), task, cow.gold(task)) for task in (by_length[0], *by_length[-2:])]
    read_only = factory()
    cow.read_records(read_only, played[-1], factory)
    replaced = factory()
    replaced.tools.update_db({})
    hashes = cow.Tau2Hashes()
    hashes.pin(fork_dumps.base_dump)
    for env in (*played, read_only, replaced, factory()):
        built, full = fork_dumps(env), cow.dumps(env)
        assert built == full
        assert cow._exact(built) == cow._exact(full)
        assert hashes(built[0]) == hashes(full[0]) == cow.full_hash(env)
    keys = {hashes._key(fork_dumps(env)[0]) for env in played}
    hashes_seen = {cow.full_hash(env) for env in played}
    assert keys == {None} if domain == "telecom" else len(keys) == len(hashes_seen)  # telecom's enums: no memo
    assert factory.base_unchanged()


@pytest.mark.slow
@pytest.mark.parametrize("domain", cow.DOMAINS)
def test_a_copied_db_is_a_fresh_load(domain: str) -> None:
    """The shortcut above: τ²'s environment on a copied DB is its environment on a fresh file load,
    before and after playing a task, and the copy shares nothing with the one it was made from."""
    loaded = cow.module(domain).get_environment()
    copied = cow.fresh_environment(domain)
    assert cow.dumps(copied) == cow.dumps(loaded)
    assert copied.get_db_hash() == loaded.get_db_hash()
    assert copied.get_user_db_hash() == loaded.get_user_db_hash()
    assert copied.tools.db is not cow.fresh_environment(domain).tools.db
    task = max(cow.tasks(domain), key=lambda t: len(cow.gold(t)))
    played = cow.play(copied, task, cow.gold(task))
    fresh = cow.play(cow.module(domain).get_environment(), task, cow.gold(task))
    assert cow.dumps(played) == cow.dumps(fresh)
    assert cow.dumps(cow.fresh_environment(domain)) == cow.dumps(loaded)  # playing left the copied-from DB alone


@pytest.mark.slow
@pytest.mark.parametrize("domain", cow.DOMAINS)
def test_a_released_environment_is_a_fresh_load(domain: str) -> None:
    """The reuse in the every-task test: an environment given back after playing tasks is handed out
    again dumping exactly (byte for byte) as a fresh load, and plays the next task as a fresh load does."""
    loaded = cow.module(domain).get_environment()
    environments = cow.fresh_environments(domain)
    keeps_its_db = [t for t in cow.tasks(domain) if t.initial_state is None or not t.initial_state.initialization_data]
    played = sorted(keeps_its_db, key=lambda t: len(cow.gold(t)))[-3:]  # τ²'s update_db replaces the DB
    env = environments()
    for task in played:
        cow.play(env, task, cow.gold(task))
    environments.release(env)
    again = environments()
    assert (again is env) == (env.user_tools is None)  # reused where it can be (not with a user DB)
    assert cow.dumps(again) == cow.dumps(loaded)
    assert cow.exact_dump(again) == cow.exact_dump(loaded)  # byte for byte (both None for telecom's enums)
    task = played[0]
    assert cow.dumps(cow.play(again, task, cow.gold(task))) == cow.dumps(cow.play(loaded, task, cow.gold(task)))
    environments.release(again)


def test_reading_a_record_keeps_the_hash_and_changing_it_does_not() -> None:
    factory = cow.factory("airline")
    untouched = factory()
    fork = factory()
    assert fork.get_db_hash() == untouched.get_db_hash()
    user_id = next(iter(fork.tools.db.users))
    user = fork.tools.db.users[user_id]
    assert user is not factory.base_db.users[user_id]  # handed out: a private copy
    assert fork.get_db_hash() == untouched.get_db_hash()
    original = user.reservations
    user.reservations = [*original, "NEW123"]
    assert fork.get_db_hash() != untouched.get_db_hash()
    assert (fork.get_db_hash() == untouched.get_db_hash()) == (cow.full_hash(fork) == cow.full_hash(untouched))
    user.reservations = list(original)  # back to the base's content: equal again, as τ²'s hash says
    assert fork.get_db_hash() == untouched.get_db_hash()
    del fork.tools.db.reservations[next(iter(fork.tools.db.reservations))]
    assert fork.get_db_hash() != untouched.get_db_hash()
    assert factory.base_unchanged()


def test_a_replaced_db_falls_back_to_tau2s_hash() -> None:
    factory = cow.factory("airline")
    fork = factory()
    fork.tools.update_db({})  # what τ²'s set_state does with initialization_data
    assert fork.get_db_hash() == cow.full_hash(fork)


def test_a_dropped_fork_is_freed_at_once_not_left_to_the_garbage_collector() -> None:
    # A replay forks three environments per trial: left in a reference cycle, each with its copied
    # records would wait for the collector, which scans them again at every collection until then.
    factory = cow.factory("airline")
    fork = factory()
    fork.tools.db.flights[next(iter(fork.tools.db.flights))]  # a copied record, held by the fork
    hashed = fork.get_db_hash()
    toolkit, db = weakref.ref(fork.tools), weakref.ref(fork.tools.db)
    collecting = gc.isenabled()
    gc.disable()
    try:
        del fork
        assert toolkit() is None
        assert db() is None
    finally:
        if collecting:
            gc.enable()
    assert factory().get_db_hash() == hashed  # reading a record leaves the hash as it was


class _Leaf(BaseModel):
    tags: list[str]
    n: int


def test_cow_dict_copies_every_record_it_hands_out_and_never_the_base() -> None:
    base = {f"k{i}": _Leaf(tags=[str(i)], n=i) for i in range(5)}
    snapshot = {k: v.model_dump() for k, v in base.items()}
    d = CowDict(base)
    assert len(d) == 5 and "k1" in d and list(d) == list(base) and list(d.keys()) == list(base)
    assert not d.touched  # keys-only access copies nothing
    handed_out = [
        d["k0"],
        d.get("k1"),
        next(iter(d.values())),
        next(iter(d.items()))[1],
        dict(d)["k2"],
        {**d}["k3"],
        d.copy()["k4"],
        d.setdefault("k1"),
        (d | {})["k2"],
    ]
    for record in handed_out:
        assert all(record is not b for b in base.values())
        record.tags.append("mutated")
        record.n = -1
    assert {k: v.model_dump() for k, v in base.items()} == snapshot
    popped = d.pop("k0")
    assert popped is not base["k0"] and "k0" not in d and "k0" in base
    key, value = d.popitem()
    assert key == "k4" and value is not base["k4"]
    d["new"] = _Leaf(tags=[], n=0)
    d.update(k1=_Leaf(tags=["x"], n=9))
    assert d.touched >= {"k0", "k4", "new", "k1"}
    assert d.get("missing", 7) == 7 and d.pop("missing", 8) == 8
    with pytest.raises(KeyError):
        d["missing"]
    assert {k: v.model_dump() for k, v in base.items()} == snapshot


def test_fast_copy_is_a_deep_copy() -> None:
    original = _Leaf(tags=["a"], n=1)
    copied = fast_copy({"x": [original]})
    copied["x"][0].tags.append("b")
    assert original.tags == ["a"] and copied["x"][0].model_dump() == {"tags": ["a", "b"], "n": 1}


@pytest.mark.slow
def test_threads_forking_and_mutating_at_once_do_not_interfere() -> None:
    domain = "retail"
    factory = cow.factory(domain)
    tasks = [t for t in cow.tasks(domain) if cow.gold(t)][:6]
    expected = {t.id: (cow.dumps(cow.play(factory(), t, cow.gold(t))), None) for t in tasks}
    failures: list[str] = []

    def work(order: list[Any]) -> None:
        for _ in range(3):
            for task in order:
                env = cow.play(factory(), task, cow.gold(task))
                if cow.dumps(env) != expected[task.id][0]:
                    failures.append(task.id)

    threads = [threading.Thread(target=work, args=(order,)) for order in (tasks, tasks[::-1])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert factory.base_unchanged()


@pytest.mark.slow
def test_forking_never_imports_litellm() -> None:
    script = (
        "import sys\n"
        "from tauproxy.tau2bench.cow import EnvironmentFactory\n"
        "for d in ('mock', 'airline', 'retail', 'telecom'):\n"
        "    env = EnvironmentFactory.for_domain(d)()\n"
        "    env.get_db_hash()\n"
        "print('litellm' in sys.modules)\n"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False"


class _Leg(BaseModel):
    code: str
    price: float


class _Trip(BaseModel):
    name: str
    legs: list[_Leg]
    stops: dict[str, _Leg]


def test_a_record_is_identical_to_its_base_only_if_it_serialises_the_same() -> None:
    from tauproxy.tau2bench.cow import _dumps, _identical, _private_field

    legs = {f"L{i}": _Leg(code=f"L{i}", price=float(i)) for i in range(6)}
    base = _Trip(name="t", legs=[legs["L0"], legs["L1"]], stops=legs)
    copy_of = lambda: _private_field(base)  # noqa: E731  (a fork's private copy of the record)
    assert _identical(copy_of(), base)
    read = copy_of()
    assert read.stops["L2"].code == "L2"  # read through the nested CowDict: still identical
    assert _identical(read, base)
    changed = []
    for change in (
        lambda t: setattr(t, "name", "u"),
        lambda t: setattr(t.legs[1], "price", 9.0),
        lambda t: t.legs.append(_Leg(code="L9", price=0.0)),
        lambda t: setattr(t.stops["L3"], "price", -0.0 if base.stops["L3"].price == 0.0 else 0.5),
        lambda t: t.stops.pop("L4"),
        lambda t: t.__dict__.pop("name"),
    ):
        record = copy_of()
        change(record)
        changed.append(record)
    zero = copy_of()
    zero.stops["L0"].price = -0.0  # equal to 0.0, but serialised apart
    for record in [*changed, zero]:
        assert not _identical(record, base)
    same_content = copy_of()
    same_content.name = "t" + ""  # another object, equal: identical by value
    assert _identical(same_content, base) and _dumps(same_content) == _dumps(base)
