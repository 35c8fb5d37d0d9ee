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


# -- unseeded requests: a fresh draw each time, counted per session (serve/identity.py) ----------------

EPOCHS = 3
OPENING = [SYSTEM, {"role": "user", "content": "the one scenario"}]


class FakeClock:
    """Time that passes only when a test says so: session idleness without waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def sessions_service(
    cassette: Path, mode: RecordMode, live: MockTransport | None, clock: FakeClock | None = None
) -> CompletionService:
    from tauproxy.serve.identity import Sessions

    sessions = Sessions(clock=clock) if clock is not None else Sessions()
    return CompletionService(mode, Cassette.open(cassette), live, Pricing(), sessions=sessions)


async def epoch(served: CompletionService, name: str) -> list[str]:
    """One epoch of an unseeded harness: the identical opening request, then its own continuation."""
    messages: list[dict[str, Any]] = list(OPENING)
    answers = []
    for turn in range(2):
        body = await served.complete({"model": "gpt-x", "messages": list(messages), "temperature": 0}, None, None)
        answers.append(body["choices"][0]["message"]["content"])
        messages += [{"role": "assistant", "content": answers[-1]}, {"role": "user", "content": f"turn {turn}"}]
    return answers


def run_epochs(served: CompletionService, concurrency: int, epochs: int = EPOCHS) -> list[list[str]]:
    """The epochs' conversations, in no particular order: identical epochs are interchangeable."""
    results: list[list[str]] = []

    async def main() -> None:
        limiter = anyio.Semaphore(concurrency)

        async def one(index: int) -> None:
            async with limiter:
                results.append(await epoch(served, f"epoch {index}"))

        async with anyio.create_task_group() as group:
            for index in range(epochs):
                group.start_soon(one, index)

    anyio.run(main)
    return sorted(results)


@pytest.mark.parametrize(("record_at", "replay_at"), [(EPOCHS, 1), (1, EPOCHS)])
def test_identical_unseeded_requests_are_k_samples_live_and_the_same_k_on_replay(
    tmp_path: Path, record_at: int, replay_at: int
) -> None:
    live = MockTransport(Noisy())
    recorded = run_epochs(sessions_service(tmp_path / "c", RecordMode.AUTO, live), record_at)
    assert len({answers[0] for answers in recorded}) == EPOCHS  # k draws of the one opening request
    assert len(live.calls) == 2 * EPOCHS
    for _ in range(2):
        replayer = sessions_service(tmp_path / "c", RecordMode.REPLAY, None)
        assert run_epochs(replayer, replay_at) == recorded
        assert replayer.stats.snapshot()["misses"] == 0


def test_a_second_unseeded_run_after_an_idle_gap_replays_with_no_miss(tmp_path: Path) -> None:
    from tauproxy.serve.identity import DEFAULT_SESSION_IDLE_S

    clock = FakeClock()
    live = MockTransport(Noisy())
    served = sessions_service(tmp_path / "c", RecordMode.AUTO, live, clock)
    first = run_epochs(served, EPOCHS)
    clock.now += DEFAULT_SESSION_IDLE_S  # the harness ends; it is started again
    assert run_epochs(served, 1) == first and len(live.calls) == 2 * EPOCHS  # 0 paid: shared
    assert served.stats.snapshot()["shared"] == 2 * EPOCHS

    replayer = sessions_service(tmp_path / "c", RecordMode.REPLAY, None, clock)
    for _ in range(2):  # the same replay server, run after run
        clock.now += DEFAULT_SESSION_IDLE_S
        assert run_epochs(replayer, 2) == first
    assert replayer.stats.snapshot()["misses"] == 0 and replayer.sessions.number == 2  # the second run began one


def test_a_second_run_against_the_same_replay_server_starts_over_at_once(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """No idle gap, no explicit session: an unseeded request asking, with nothing in flight, for a
    draw past the recorded ones begins a session in replay mode."""
    clock = FakeClock()
    recorded = run_epochs(sessions_service(tmp_path / "c", RecordMode.AUTO, MockTransport(Noisy()), clock), EPOCHS)
    replayer = sessions_service(tmp_path / "c", RecordMode.REPLAY, None, clock)
    for concurrency in (EPOCHS, 1, 2):
        assert run_epochs(replayer, concurrency) == recorded
    assert replayer.stats.snapshot()["misses"] == 0 and replayer.sessions.number == 3
    # The trade-off: a fourth epoch, alone, gets the first draws again rather than a miss, said on stderr.
    assert anyio.run(epoch, replayer, "a fourth epoch") in recorded
    assert "session 4 begins" in capfd.readouterr().err


def test_without_a_session_boundary_a_second_auto_run_draws_again(tmp_path: Path) -> None:
    """The trade-off in auto mode: runs closer together than --session-idle count on, and pay."""
    clock = FakeClock()
    live = MockTransport(Noisy())
    served = sessions_service(tmp_path / "c", RecordMode.AUTO, live, clock)
    first = run_epochs(served, EPOCHS)
    again = run_epochs(served, EPOCHS)
    assert not set(map(tuple, again)) & set(map(tuple, first)) and len(live.calls) == 4 * EPOCHS
    served.sessions.begin()  # what POST /v1/tauproxy/session does
    assert run_epochs(served, 1) == first and len(live.calls) == 4 * EPOCHS


def test_a_seeded_harness_keeps_its_unseeded_calls_one_sample(tmp_path: Path) -> None:
    """τ²-bench's shape: seeded conversations, an unseeded judge call after each. Once a session has
    seen a seed, identical unseeded calls share one answer, as τ²-bench's own calls do in-process,
    and a second run against the same server, at once, is free."""
    clock = FakeClock()
    live = MockTransport(Noisy())

    async def harness(served: CompletionService) -> list[str]:
        said = []
        for task in TASKS[:3]:
            said += await converse(served, task)
            judged = {"model": "gpt-x", "messages": [{"role": "user", "content": "stuck?"}]}  # no seed
            said.append((await served.complete(judged, None, "judge"))["choices"][0]["message"]["content"])
        return said

    served = sessions_service(tmp_path / "c", RecordMode.AUTO, live, clock)
    first = anyio.run(harness, served)
    assert first[3] == first[7] == first[11]  # the judge's identical calls are one sample
    sent = len(live.calls)
    assert anyio.run(harness, served) == first and len(live.calls) == sent
    replayer = sessions_service(tmp_path / "c", RecordMode.REPLAY, None, clock)
    assert anyio.run(harness, replayer) == first and anyio.run(harness, replayer) == first
    assert replayer.stats.snapshot()["misses"] == 0


def test_a_failed_unseeded_attempt_gives_its_draw_back(tmp_path: Path) -> None:
    from tauproxy.errors import ModelCallError

    noisy = Noisy()
    failures = iter([True])

    def flaky(call: ModelCall) -> dict[str, Any]:
        if next(failures, False):
            raise ModelCallError("upstream 503", status_code=503)
        return noisy(call)

    served = sessions_service(tmp_path / "c", RecordMode.AUTO, MockTransport(flaky))
    body = {"model": "gpt-x", "messages": OPENING}
    with pytest.raises(HttpError):
        anyio.run(served.complete, body, None, None)
    retried = anyio.run(served.complete, body, None, None)  # the same sample as the try: occurrence 0
    replayer = sessions_service(tmp_path / "c", RecordMode.REPLAY, None)
    assert anyio.run(replayer.complete, body, None, None) == retried


def test_post_session_begins_a_new_session() -> None:
    import httpx

    from tauproxy.serve.app import ServeApp

    service = CompletionService(RecordMode.OFF, None, MockTransport(Noisy()), Pricing())
    app = ServeApp(service, auth_token="t", max_body_bytes=1 << 20, read_timeout_s=5, model_names=list, describe={})

    async def talk() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app.starlette())
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            refused = await client.post("/v1/tauproxy/session")
            begun = await client.post("/v1/tauproxy/session", headers={"Authorization": "Bearer t"})
            stats = await client.get("/stats", headers={"Authorization": "Bearer t"})
            return [refused, begun, stats]

    refused, begun, stats = anyio.run(talk)
    assert refused.status_code == 401
    assert begun.json() == {"session": 2} and stats.json()["session"] == 2
