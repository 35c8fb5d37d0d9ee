"""The answers serve keeps for `GET /v1/responses/{id}` (serve/answered.py): the latest ones, bounded by
count and by size, so a long-lived serve does not hold thousands of whole answers."""

from __future__ import annotations

import json

import pytest

from tauproxy.data_model.completion import Completion
from tauproxy.serve.answered import AnsweredBodies


def answer(response_id: str, chars: int) -> Completion:
    raw = json.dumps({"id": response_id, "text": "x" * chars})
    return Completion(body={"id": response_id}, source="live", latency_s=0.0, raw_body=raw)


def test_the_latest_answers_are_kept_within_a_size_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AnsweredBodies, "LIMIT_CHARS", 10_000)
    kept = AnsweredBodies()
    for n in range(50):
        kept.remember("responses", answer(f"resp_{n}", 1_000))
    held = [n for n in range(50) if kept.get("responses", f"resp_{n}") is not None]
    assert held == list(range(50 - len(held), 50)) and 5 <= len(held) <= 10, held  # the newest, within 10,000
    assert kept.get("responses", "resp_49") == answer("resp_49", 1_000).raw_body


def test_the_count_bound_holds_for_small_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AnsweredBodies, "LIMIT", 3)
    kept = AnsweredBodies()
    for n in range(5):
        kept.remember("responses", answer(f"resp_{n}", 10))
    assert [kept.get("responses", f"resp_{n}") is not None for n in range(5)] == [False, False, True, True, True]


def test_an_answer_over_the_bound_is_still_kept_until_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AnsweredBodies, "LIMIT_CHARS", 100)
    kept = AnsweredBodies()
    kept.remember("responses", answer("resp_big", 1_000))
    assert kept.get("responses", "resp_big") is not None  # a client fetching what it was just given finds it
    kept.remember("responses", answer("resp_next", 10))
    assert kept.get("responses", "resp_big") is None and kept.get("responses", "resp_next") is not None


def test_an_answer_given_again_is_counted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AnsweredBodies, "LIMIT_CHARS", 3_000)
    kept = AnsweredBodies()
    for _ in range(10):  # the same response id answered again (a replay of it): one body, not ten
        kept.remember("responses", answer("resp_same", 1_000))
    kept.remember("responses", answer("resp_other", 1_000))
    assert kept.get("responses", "resp_same") is not None and kept.get("responses", "resp_other") is not None
