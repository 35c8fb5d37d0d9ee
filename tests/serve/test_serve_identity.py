"""serve's sample identity without a scope header, at the service layer (no HTTP, no subprocess).

Conversations shaped like τ²-bench's: every task of a trial has the same seed, and tasks that share
a scenario send an identical first request; they part ways only at a tool result of their own task.
Against a noisy upstream (every live answer differs), recording at one concurrency and replaying at
another, in any order, must give every conversation its own answers back with no miss; and a
second run against the same service must be free.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tauproxy.data_model.call import ModelCall
from tauproxy.proxy.mock import MockTransport, text_body
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import Pricing
from tauproxy.serve.completions import CompletionService
from tauproxy.serve.errors import HttpError
from tauproxy.store.cassette import Cassette

SYSTEM = {"role": "system", "content": "You are a helpful agent."}
# Six tasks; tasks 0-1, 2-3 and 4-5 share a scenario, so each pair's first request is identical.
TASKS = [{"task": f"t{i}", "scenario": f"scenario {i // 2}"} for i in range(6)]


class Noisy:
    """A live upstream whose every answer is new, as a sampling model at temperature 1 would be."""

    def __init__(self) -> None:
        self._count = itertools.count()
        self._lock = threading.Lock()

    def __call__(self, call: ModelCall) -> dict[str, Any]:
        with self._lock:
            draw = next(self._count)
        return text_body(f"answer #{draw}")


def service(cassette: Path, mode: RecordMode, live: MockTransport | None) -> CompletionService:
    return CompletionService(mode, Cassette.open(cassette), live, Pricing())


async def converse(served: CompletionService, task: dict[str, str], seed: int = 7) -> list[str]:
    """Three turns; the second request carries a tool result of this task's own."""
    messages: list[dict[str, Any]] = [SYSTEM, {"role": "user", "content": task["scenario"]}]
    answers = []
    for turn in range(3):
        body = await served.complete({"model": "gpt-x", "messages": list(messages), "seed": seed}, None, None)
        answer = body["choices"][0]["message"]["content"]
        answers.append(answer)
        messages.append({"role": "assistant", "content": answer})
        extra = f"tool result of {task['task']}" if turn == 0 else f"turn {turn}"
        messages.append({"role": "user", "content": extra})
    return answers


def run_all(served: CompletionService, order: list[dict[str, str]], concurrency: int) -> dict[str, list[str]]:
    results: dict[str, list[str]] = {}

    async def main() -> None:
        limiter = anyio.Semaphore(concurrency)

        async def one(task: dict[str, str]) -> None:
            async with limiter:
                results[task["task"]] = await converse(served, task)

        async with anyio.create_task_group() as group:
            for task in order:
                group.start_soon(one, task)

    anyio.run(main)
    return results


@pytest.mark.parametrize(("record_at", "replay_at"), [(4, 1), (1, 4), (6, 6)])
def test_noisy_shared_scenarios_replay_identically_in_any_order(tmp_path: Path, record_at: int, replay_at: int) -> None:
    live = MockTransport(Noisy())
    recorded = run_all(service(tmp_path / "c", RecordMode.AUTO, live), TASKS, record_at)
    # Conversations identical so far got identical answers; they part ways at their own tool result.
    assert recorded["t0"][0] == recorded["t1"][0] and recorded["t0"][1] != recorded["t1"][1]
    for seed in range(3):
        order = random.Random(seed).sample(TASKS, len(TASKS))
        replayer = service(tmp_path / "c", RecordMode.REPLAY, None)
        assert run_all(replayer, order, replay_at) == recorded
        assert replayer.stats.snapshot()["misses"] == 0


def test_a_second_run_against_the_same_server_is_free(tmp_path: Path) -> None:
    live = MockTransport(Noisy())
    served = service(tmp_path / "c", RecordMode.AUTO, live)
    first = run_all(served, TASKS, 3)
    sent = len(live.calls)
    second = run_all(served, list(reversed(TASKS)), 2)
    assert second == first and len(live.calls) == sent  # 0 paid calls, 0 misses
    strict = service(tmp_path / "c", RecordMode.REPLAY, None)
    assert run_all(strict, TASKS, 1) == first
    assert run_all(strict, TASKS, 1) == first  # and again, reusing the replay server


def test_concurrent_identical_misses_go_upstream_once(tmp_path: Path) -> None:
    noisy = Noisy()

    def slow(call: ModelCall) -> dict[str, Any]:
        time.sleep(0.2)  # so the five first requests are in flight together
        return noisy(call)

    live = MockTransport(slow)
    served = service(tmp_path / "c", RecordMode.AUTO, live)
    twins = [{"task": f"twin{i}", "scenario": "same"} for i in range(5)]
    results = run_all(served, twins, 5)
    assert len({answers[0] for answers in results.values()}) == 1
    first_requests = [c for c in live.calls if len(c.wire["messages"]) == 2]
    assert len(first_requests) == 1


def test_with_a_scope_header_identical_calls_stay_distinct_samples(tmp_path: Path) -> None:
    from tauproxy.data_model.key import TrialScope

    live = MockTransport(Noisy())
    served = service(tmp_path / "c", RecordMode.AUTO, live)
    scope = TrialScope(task_id="t0", trial=0)
    body = {"model": "gpt-x", "messages": [SYSTEM, {"role": "user", "content": "again"}], "seed": 1}

    async def twice() -> list[str]:
        return [(await served.complete(body, scope, "agent"))["choices"][0]["message"]["content"] for _ in range(2)]

    answers = anyio.run(twice)
    assert answers[0] != answers[1] and len(live.calls) == 2
    replayer = service(tmp_path / "c", RecordMode.REPLAY, None)

    async def replay_twice() -> list[str]:
        return [(await replayer.complete(body, scope, "agent"))["choices"][0]["message"]["content"] for _ in range(2)]

    assert anyio.run(replay_twice) == answers

    async def third() -> None:
        await replayer.complete(body, scope, "agent")

    with pytest.raises(HttpError) as miss:
        anyio.run(third)
    assert miss.value.status == 404 and "not as this sample" in miss.value.message
