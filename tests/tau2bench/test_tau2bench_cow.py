"""Copy-on-write τ² environments (tauproxy/tau2bench/cow.py) against τ²'s own, task by task."""

from __future__ import annotations

import contextlib
import importlib
import itertools
import os
import pickle
import subprocess
import sys
import threading
from typing import Any

import pytest
from pydantic import BaseModel

pytest.importorskip("tau2")

from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage
from tau2.evaluator.evaluator_env import EnvironmentEvaluator
from tau2.utils import get_dict_hash

from tauproxy.tau2bench.cow import CowDict, EnvironmentFactory, fast_copy

DOMAINS = ["mock", "airline", "retail", "telecom"]


def _module(domain: str) -> Any:
    return importlib.import_module(f"tau2.domains.{domain}.environment")


_FACTORIES: dict[str, EnvironmentFactory] = {}
_TASKS: dict[str, list[Any]] = {}
_FRESH_DBS: dict[str, tuple[bytes, bytes | None]] = {}


def _fresh_environment(domain: str, **kwargs: Any) -> Any:
    """τ²'s own environment from its own `get_environment`, given deep copies (a pickle round trip)
    of the DB it loaded once: reloading and validating the JSON for every task costs far more, and
    the load itself is not under test here (test_a_copied_db_is_a_fresh_load proves them equal)."""
    if domain not in _FRESH_DBS:
        loaded = _module(domain).get_environment()
        user = pickle.dumps(loaded.user_tools.db) if loaded.user_tools is not None else None
        _FRESH_DBS[domain] = (pickle.dumps(loaded.tools.db), user)
    db, user_db = _FRESH_DBS[domain]
    if user_db is not None:
        kwargs["user_db"] = pickle.loads(user_db)
    return _module(domain).get_environment(db=pickle.loads(db), **kwargs)


def _factory(domain: str) -> EnvironmentFactory:
    if domain not in _FACTORIES:
        _FACTORIES[domain] = EnvironmentFactory.for_domain(domain, check_base=True)
    return _FACTORIES[domain]


def _tasks(domain: str) -> list[Any]:
    if domain not in _TASKS:
        # mock has no base split: all of its tasks; the others' default is the base split.
        _TASKS[domain] = list(_module(domain).get_tasks())
    return _TASKS[domain]


def _gold(task: Any) -> list[Any]:
    criteria = task.evaluation_criteria
    return list(criteria.actions or []) if criteria is not None else []


def _play(env: Any, task: Any, actions: list[Any]) -> Any:
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


def _dumps(env: Any) -> tuple[Any, Any]:
    user = env.user_tools.db.model_dump() if env.user_tools is not None else None
    return env.tools.db.model_dump(), user


def _full_hash(env: Any) -> str:
    return str(get_dict_hash(env.tools.db.model_dump()))


def _full_hash_of(dump: tuple[Any, Any]) -> str:
    """τ²'s full hash (as `_full_hash`) of a DB already dumped by `_dumps`."""
    return str(get_dict_hash(dump[0]))


def _read_records(fork: Any, keys_from: Any, factory: EnvironmentFactory) -> None:
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


@pytest.mark.slow
@pytest.mark.parametrize("domain", DOMAINS)
def test_forks_play_every_task_like_fresh_environments_and_hash_alike(domain: str) -> None:
    factory = _factory(domain)
    differing_pairs = 0
    for task in _tasks(domain):
        gold = _gold(task)
        fresh = _play(_fresh_environment(domain), task, gold)
        forks = {
            "all": _play(factory(), task, gold),
            "all_but_last": _play(factory(), task, gold[:-1]),
            "none": _play(factory(), task, []),
            "read_only": _play(factory(), task, []),
        }
        _read_records(forks["read_only"], forks["all"], factory)
        fresh_dump = _dumps(fresh)
        dumps = {name: _dumps(env) for name, env in forks.items()}
        assert dumps["all"] == fresh_dump, task.id
        assert forks["all"].get_user_db_hash() == fresh.get_user_db_hash(), task.id
        full = {name: _full_hash_of(dump) for name, dump in dumps.items()}
        fast = {name: env.get_db_hash() for name, env in forks.items()}
        assert full["all"] == get_dict_hash(fresh_dump[0]), task.id
        for a, b in itertools.combinations(forks, 2):
            assert (fast[a] == fast[b]) == (full[a] == full[b]), (task.id, a, b)
            differing_pairs += full[a] != full[b]
        assert full["read_only"] == full["none"], task.id
    assert factory.base_unchanged()
    if domain in ("airline", "retail"):
        assert differing_pairs > 0  # the pairs above were not all trivially equal


def _trajectory(domain: str, task: Any, actions: list[Any]) -> list[Any]:
    """Messages carrying `actions` as tool calls, with the tool results of a fresh τ² environment."""
    env = _fresh_environment(domain)
    state = task.initial_state
    env.set_state(
        initialization_data=state.initialization_data if state is not None else None,
        initialization_actions=state.initialization_actions if state is not None else None,
        message_history=[],
    )
    messages: list[Any] = []
    for i, action in enumerate(actions):
        call = ToolCall(id=f"call_{i}", name=action.name, arguments=action.arguments, requestor=action.requestor)
        if action.requestor == "user":
            messages.append(UserMessage(role="user", tool_calls=[call]))
        else:
            messages.append(AssistantMessage(role="assistant", tool_calls=[call]))
        messages.append(env.get_response(call))
    return messages


def _reward(constructor: Any, task: Any, trajectory: list[Any]) -> Any:
    try:
        info = EnvironmentEvaluator.calculate_reward(
            environment_constructor=constructor, task=task, full_trajectory=trajectory
        )
    except Exception as error:  # τ²'s own evaluator raises for some tasks: the factory must raise alike
        return ("raised", type(error).__name__, str(error))
    return info.model_dump()


@pytest.mark.slow
@pytest.mark.parametrize("domain", DOMAINS)
def test_evaluator_gives_the_same_reward_with_the_factory(domain: str) -> None:
    factory = _factory(domain)
    tasks = _tasks(domain)
    if domain in ("airline", "retail"):
        tasks = tasks[::6]  # τ²'s constructor loads the DB twice per call: a spread sample
    rewards: list[float] = []
    for task in tasks:
        gold = _gold(task)
        for actions in (gold, gold[:-1]):
            trajectory = _trajectory(domain, task, actions)
            ours = _reward(factory, task, trajectory)
            theirs = _reward(lambda **kwargs: _fresh_environment(domain, **kwargs), task, trajectory)
            assert ours == theirs, task.id
            if isinstance(theirs, dict):
                rewards.append(theirs["reward"])
    assert factory.base_unchanged()
    assert 1.0 in rewards and 0.0 in rewards  # both successes and failures were compared


@pytest.mark.slow
@pytest.mark.parametrize("domain", DOMAINS)
def test_a_copied_db_is_a_fresh_load(domain: str) -> None:
    """The shortcut above: τ²'s environment on a copied DB is its environment on a fresh file load,
    before and after playing a task, and the copy shares nothing with the one it was made from."""
    loaded = _module(domain).get_environment()
    copied = _fresh_environment(domain)
    assert _dumps(copied) == _dumps(loaded)
    assert copied.get_db_hash() == loaded.get_db_hash()
    assert copied.get_user_db_hash() == loaded.get_user_db_hash()
    assert copied.tools.db is not _fresh_environment(domain).tools.db
    task = max(_tasks(domain), key=lambda t: len(_gold(t)))
    played = _play(copied, task, _gold(task))
    fresh = _play(_module(domain).get_environment(), task, _gold(task))
    assert _dumps(played) == _dumps(fresh)
    assert _dumps(_fresh_environment(domain)) == _dumps(loaded)  # playing left the copied-from DB alone


def test_reading_a_record_keeps_the_hash_and_changing_it_does_not() -> None:
    factory = _factory("airline")
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
    assert (fork.get_db_hash() == untouched.get_db_hash()) == (_full_hash(fork) == _full_hash(untouched))
    user.reservations = list(original)  # back to the base's content: equal again, as τ²'s hash says
    assert fork.get_db_hash() == untouched.get_db_hash()
    del fork.tools.db.reservations[next(iter(fork.tools.db.reservations))]
    assert fork.get_db_hash() != untouched.get_db_hash()
    assert factory.base_unchanged()


def test_a_replaced_db_falls_back_to_tau2s_hash() -> None:
    factory = _factory("airline")
    fork = factory()
    fork.tools.update_db({})  # what τ²'s set_state does with initialization_data
    assert fork.get_db_hash() == _full_hash(fork)


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
    factory = _factory(domain)
    tasks = [t for t in _tasks(domain) if _gold(t)][:6]
    expected = {t.id: (_dumps(_play(factory(), t, _gold(t))), None) for t in tasks}
    failures: list[str] = []

    def work(order: list[Any]) -> None:
        for _ in range(3):
            for task in order:
                env = _play(factory(), task, _gold(task))
                if _dumps(env) != expected[task.id][0]:
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
