"""The garbage collector held off while a run prepares (tauproxy/runner/collector.py): no collection inside,
what was allocated inside leaves in the oldest generation, nothing stays frozen, the collector's state is
given back whatever happens inside, and objects someone froze stay frozen."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from tauproxy.runner.collector import paused_collector


class Node:
    """A tracked object that can sit in a cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture(autouse=True)
def collector_as_found() -> Iterator[None]:
    enabled, frozen = gc.isenabled(), gc.get_freeze_count()
    yield
    assert gc.get_freeze_count() == frozen
    if enabled:
        gc.enable()
    else:
        gc.disable()


def in_generation(obj: object, generation: int) -> bool:
    return any(found is obj for found in gc.get_objects(generation=generation))


def test_nothing_is_collected_inside_and_the_young_leave_in_the_oldest_generation() -> None:
    gc.enable()
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(count)
    try:
        with paused_collector():
            assert not gc.isenabled()
            kept = [Node() for _ in range(5000)]  # far past the youngest generation's threshold
    finally:
        gc.callbacks.remove(count)
    assert collections == []
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    assert in_generation(kept[0], 2) and in_generation(kept[-1], 2)
    assert not in_generation(kept[0], 0)


def test_garbage_made_inside_is_still_collected() -> None:
    with paused_collector():
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle: only the collector frees it
    gone = weakref.ref(a)
    del a, b
    assert gone() is not None  # nothing collected it on the way out
    gc.collect()
    assert gone() is None


def test_the_collector_is_given_back_as_it_was_even_when_the_inside_raises() -> None:
    gc.disable()
    with paused_collector():
        pass
    assert not gc.isenabled()  # it was off before: it stays off
    gc.enable()
    with pytest.raises(ValueError), paused_collector():
        raise ValueError("a refused flag")
    assert gc.isenabled()


def test_objects_someone_froze_stay_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with paused_collector():
            kept = Node()
        assert gc.get_freeze_count() == frozen  # no unfreeze of theirs to promote ours
        assert kept.other is None
    finally:
        gc.unfreeze()
