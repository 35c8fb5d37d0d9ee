"""A base DB loaded lazily from the cache (tau2bench/model_pickle.py's LazyRecord) against the same DB
loaded whole: every task plays to the same DB and the same hashes, τ²'s whole-DB readers see every
record, and a run loads only the records it reads."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

pytest.importorskip("tau2")

import cow_support as cow
from tau2.utils import get_dict_hash

from tauproxy.tau2bench.cow import BaseDatabases, EnvironmentFactory
from tauproxy.tau2bench.environments import LAZY_FIELDS
from tauproxy.tau2bench.model_pickle import LazyRecord, materialize

LAZY_DOMAINS = ["airline", "retail"]


def lazy_factory(domain: str) -> EnvironmentFactory:
    """A factory over the base as the cache gives it back: pickled with the domain's lazy fields."""
    module = cow.module(domain)
    lazy_fields = LAZY_FIELDS[module.__name__]
    loaded = pickle.loads(pickle.dumps(BaseDatabases.load(module.get_environment, lazy_fields=lazy_fields)))
    assert loaded.lazy_fields == lazy_fields
    return EnvironmentFactory(module.get_environment, bases=loaded)


def unloaded(factory: EnvironmentFactory) -> int:
    base = factory._base_db
    return sum(type(r) is LazyRecord for name in factory.cow_fields for r in dict.values(getattr(base, name)))


def whole_dump(env: Any) -> Any:
    return materialize(env.tools.db).model_dump()


@pytest.mark.slow
@pytest.mark.parametrize("domain", LAZY_DOMAINS)
def test_a_lazy_base_plays_every_task_as_the_whole_one(domain: str) -> None:
    lazy, whole = lazy_factory(domain), cow.factory(domain)
    unplayed = unloaded(lazy)
    assert unplayed > 0
    for task in cow.tasks(domain):
        gold = cow.gold(task)
        played = cow.play(lazy(), task, gold), cow.play(whole(), task, gold)
        untouched = lazy(), whole()
        assert played[0].get_db_hash() == played[1].get_db_hash(), task.id
        assert untouched[0].get_db_hash() == untouched[1].get_db_hash(), task.id
        assert whole_dump(played[0]) == whole_dump(played[1]), task.id
        assert get_dict_hash(whole_dump(played[0])) == cow.full_hash(played[1]), task.id
    assert 0 < unloaded(lazy) < unplayed  # the tasks' records were loaded, not the others
    assert lazy.base_db.model_dump() == whole.base_db.model_dump()  # no fork wrote to the base
    assert whole.base_unchanged()


def test_update_db_on_a_lazy_fork_sees_every_record() -> None:
    lazy, whole = lazy_factory("airline"), cow.factory("airline")
    user_id = next(iter(whole.base_db.users))
    update = {"users": {user_id: {"membership": "gold"}}}
    forks = lazy(), whole()
    for fork in forks:
        fork.tools.update_db(update)  # what τ²'s set_state does with initialization_data
        assert fork.tools.db.users[user_id].membership == "gold"
    assert forks[0].get_db_hash() == forks[1].get_db_hash() == cow.full_hash(forks[1])
    assert unloaded(lazy) > 0  # the fork's records were loaded, the base keeps the rest for later forks
    assert lazy().get_db_hash() == whole().get_db_hash()


def test_a_lazy_fork_copies_and_pickles_as_a_whole_one() -> None:
    lazy, whole = lazy_factory("airline"), cow.factory("airline")
    forks = lazy().tools.db, whole().tools.db
    for name in ("users", "reservations"):
        copies = [copy.deepcopy(getattr(fork, name)) for fork in forks]
        assert all(type(r) is not LazyRecord for r in copies[0].values())
        assert copies[0] == copies[1]
        assert pickle.loads(pickle.dumps(getattr(forks[0], name))) == copies[1]
    assert pickle.loads(pickle.dumps(forks[0])).model_dump() == forks[1].model_dump()
