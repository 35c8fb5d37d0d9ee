"""Issue 4 acceptance: cost per call, saved-by-replay, unknown prices, --prices, --max-cost, estimate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import invoke_cli, report_json

from tauproxy.data_model.call import Usage
from tauproxy.proxy.pricing import ModelPrice, Pricing, usage_cost

PRICE_IN, PRICE_OUT = 2e-6, 8e-6


def stub_args(url: str) -> str:
    return json.dumps({"api_base": url, "api_key": "sk-x", "num_retries": 0})


def prices_file(tmp_path: Path, model: str = "openai/stub") -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({model: {"input_cost_per_token": PRICE_IN, "output_cost_per_token": PRICE_OUT}}))
    return path


def live_run(url: str, tmp_path: Path, name: str, *extra: str) -> Path:
    run_dir = tmp_path / name
    invoke_cli(
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "openai/stub",
        "--agent-llm-args",
        stub_args(url),
        "--num-tasks",
        "4",
        "--num-trials",
        "2",
        "--save-to",
        str(run_dir),
        *extra,
    )
    return run_dir


@pytest.fixture(scope="module")
def priced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One priced live run (mock, 4 tasks x 2 trials, `rec`) recorded into `cassette`, for the tests that
    read it; its directory also holds the prices file."""
    from stub_upstream import StubUpstream

    directory = tmp_path_factory.mktemp("priced")
    prices = prices_file(directory)
    with StubUpstream() as stub:
        live_run(stub.url, directory, "rec", "--cassette", str(directory / "cassette"), "--prices", str(prices))
    return directory


def test_replay_costs_nothing_and_saves_the_recorded_amount(tmp_path: Path, stub, priced: Path) -> None:
    prices, cassette = priced / "prices.json", priced / "cassette"
    recorded = report_json(priced / "rec")
    replayed = report_json(
        live_run(
            stub.url, tmp_path, "rep", "--cassette", str(cassette), "--prices", str(prices), "--record-mode", "replay"
        )
    )
    assert recorded["cost"]["live_usd"] > 0
    assert replayed["cost"]["live_usd"] == 0
    assert replayed["cost"]["replayed_usd"] == pytest.approx(recorded["cost"]["live_usd"], rel=1e-12)
    stats = json.loads(invoke_cli("cassette", "stats", str(cassette), "--json").stdout)
    assert stats["recorded_cost_usd"] == pytest.approx(recorded["cost"]["live_usd"], rel=1e-9)


def test_prices_file_cost_matches_hand_computation(priced: Path) -> None:
    run_dir = priced / "rec"
    results = json.loads((run_dir / "results.json").read_text())
    by_hand = sum(
        c["usage"]["prompt_tokens"] * PRICE_IN + c["usage"]["completion_tokens"] * PRICE_OUT
        for s in results["simulations"]
        for c in s["calls"]
        if c["model"] == "openai/stub"
    )
    assert by_hand > 0
    assert report_json(run_dir)["cost"]["live_usd"] == pytest.approx(by_hand, rel=1e-12)
    assert "prices file prices.json" in results["info"]["price_source"]


def test_unknown_price_is_unknown_never_zero(tmp_path: Path, stub) -> None:
    report = report_json(live_run(stub.url, tmp_path, "unpriced"))
    assert report["cost"]["live_usd"] is None
    assert report["cost"]["unknown_price_calls"] > 0
    assert report["cost"]["by_model"]["openai/stub"]["live_usd"] is None
    assert report["cost"]["by_model"]["scripted/user"]["live_usd"] == 0.0, "scripted models are free by declaration"
    table = invoke_cli("report", str(tmp_path / "unpriced")).stdout
    assert "unknown" in table


def test_cached_tokens_are_priced_at_the_cache_rate() -> None:
    price = ModelPrice(input_cost_per_token=1.0, output_cost_per_token=10.0, cache_read_input_token_cost=0.1)
    usage = Usage(prompt_tokens=100, completion_tokens=3, cached_tokens=40)
    assert usage_cost(price, usage) == pytest.approx(60 * 1.0 + 40 * 0.1 + 3 * 10.0)
    assert Pricing().cost("scripted/oracle", usage).usd == 0.0
    assert Pricing().cost("openai/gpt-4.1", usage).usd > 0
    assert Pricing().cost("openai/no-such-model-xyz", usage).usd is None


def test_max_cost_stops_below_budget_and_resume_finishes(tmp_path: Path, stub, priced: Path) -> None:
    prices = priced / "prices.json"
    full = report_json(priced / "rec")
    budget = full["cost"]["live_usd"] / 3
    run_dir = tmp_path / "budget"
    args = [
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        "openai/stub",
        "--agent-llm-args",
        stub_args(stub.url),
        "--num-tasks",
        "4",
        "--num-trials",
        "2",
        "--prices",
        str(prices),
        "--save-to",
        str(run_dir),
    ]
    first = invoke_cli(*args, "--max-cost", str(budget))
    assert "budget" in first.stderr
    partial = report_json(run_dir)
    assert partial["cost"]["live_usd"] <= budget
    assert sum(t["trials"] for t in partial["tasks"]) < 8
    invoke_cli(*args)  # a later run resumes with the same --save-to
    resumed = report_json(run_dir)
    assert sum(t["trials"] for t in resumed["tasks"]) == 8


def test_estimate_from_a_pilot_lands_near_the_real_cost(tmp_path: Path, stub) -> None:
    prices = prices_file(tmp_path)
    common = [
        "--domain",
        "airline",
        "--agent-llm",
        "openai/stub",
        "--agent-llm-args",
        stub_args(stub.url),
        "--num-trials",
        "2",
        "--prices",
        str(prices),
    ]
    full_dir, pilot_dir = tmp_path / "full", tmp_path / "pilot"
    invoke_cli("run", *common, "--save-to", str(full_dir), "--max-concurrency", "4")
    actual = report_json(full_dir)["cost"]["live_usd"]
    invoke_cli("run", *common, "--num-tasks", "6", "--save-to", str(pilot_dir))
    estimate = json.loads(invoke_cli("estimate", *common, "--history", str(pilot_dir), "--json").stdout)
    assert estimate["confidence"] == "history"
    assert abs(estimate["live_cost_p50"] - actual) / actual < 0.25, (estimate["live_cost_p50"], actual)
    assert estimate["live_cost_p90"] >= estimate["live_cost_p50"]


def test_estimate_subtracts_what_the_cassette_replays(tmp_path: Path) -> None:
    cassette = tmp_path / "cassette"
    args = ["--domain", "mock", "--agent-llm", "scripted/oracle", "--num-trials", "2", "--cassette", str(cassette)]
    invoke_cli("run", *args, "--num-tasks", "5", "--save-to", str(tmp_path / "rec"))
    recorded_calls = report_json(tmp_path / "rec")["calls"]["live"]
    estimate = json.loads(invoke_cli("estimate", *args, "--json").stdout)
    assert estimate["replayed_calls"] == recorded_calls, "the recorded half is served exactly"
    assert estimate["confidence"].startswith("low"), "no history: labelled low-confidence"
    assert estimate["roles"]["agent"]["calls_p50"] > 0, "the unrecorded tasks still cost something"
