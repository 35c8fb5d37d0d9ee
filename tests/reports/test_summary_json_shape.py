"""`report --json` and `run --json` keep their shape now that the summary is a model.

Both print `print_json(summarize(results))`. The reference is the dict the summary used to be
(legacy_summary), computed here from the results of real runs: the dump must have its keys, in its
order, and its values. Keys are only ever added: the added ones (ADDED) are taken out before the
comparison and checked on their own.
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from conftest import REPO_ROOT
from legacy_summary import legacy_summary
from report_runs import SLIPS, tau2_fixture

from tauproxy.data_model.result import Results, TerminationReason
from tauproxy.reports.summary import summarize
from tauproxy.results.tau2_format import read_tau2_results
from tauproxy.runner.run import execute
from tauproxy_cli.output import print_json
from tauproxy_cli.run_flags import RunFlags
from tauproxy_cli.run_setup import build_run_config

PRICES = REPO_ROOT / "cassettes" / "demo-prices.json"


# Keys added since the summary was a dict: shared calls (this run's own live answer to an identical
# sample), counted apart from replayed ones, in the call counts, the cost, its latency and every split.
COST_TABLES = ("by_role", "by_model", "by_task")


def without_added(dump: dict[str, Any]) -> dict[str, Any]:
    """The dump without the added keys, every other key in its place."""
    dump = copy.deepcopy(dump)
    dump["calls"].pop("shared")
    cost = dump["cost"]
    cost.pop("shared")
    cost["latency_s"].pop("shared")
    for table in COST_TABLES:
        for split in cost[table].values():
            split.pop("shared")
    return dump


def added_paths(value: Any) -> list[tuple[str, ...]]:
    return [path for path in key_paths(value) if path[-1] == "shared"]


def key_paths(value: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every key of every nested object, as its path from the top, in document order."""
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in [(*path, str(key)), *key_paths(item, (*path, str(key)))]]
    if isinstance(value, list | tuple):
        return [p for index, item in enumerate(value) for p in key_paths(item, (*path, f"[{index}]"))]
    return []


@pytest.fixture(scope="module")
def replayed_and_live(tmp_path_factory: pytest.TempPathFactory) -> Results:
    """Two trials recorded, then three in auto mode: trials 0-1 replay and trial 2 goes live."""
    root = tmp_path_factory.mktemp("shape")
    common: dict[str, Any] = {
        "domain": "mock",
        "agent_llm": SLIPS,
        "seed": 21,
        "cassette": root / "cassette",
        "prices": PRICES,
    }
    execute(build_run_config(RunFlags(**common, num_trials=2, record_mode="record")))
    return execute(build_run_config(RunFlags(**common, num_trials=3, save_to=root / "run"))).results


def test_the_dump_has_the_old_keys_in_the_old_order_and_the_old_values(replayed_and_live: Results) -> None:
    summary = summarize(replayed_and_live)
    legacy = legacy_summary(replayed_and_live)
    assert summary.calls.live and summary.calls.replayed, "the run must have both live and replayed calls"
    assert len(summary.cost.by_model) > 1 and summary.cost.live_usd, "and priced calls of several models"

    dump = summary.model_dump(mode="json")
    assert key_paths(without_added(dump)) == key_paths(legacy)
    assert without_added(dump) == json.loads(json.dumps(legacy))
    # The added keys: shared calls, counted apart (none in this run), in the counts and every split.
    assert dump["calls"]["shared"] == 0 and dump["cost"]["shared"]["calls"] == 0
    assert dump["cost"]["latency_s"]["shared"] == 0.0
    assert all(split["shared"]["calls"] == 0 for split in dump["cost"]["by_role"].values())
    assert len(added_paths(dump)) == 3 + sum(len(dump["cost"][table]) for table in COST_TABLES)


def test_print_json_writes_the_bytes_the_dict_did(
    replayed_and_live: Results, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = summarize(replayed_and_live)
    print_json(summary)
    out = capsys.readouterr().out
    assert out == json.dumps(summary.model_dump(mode="json"), indent=2) + "\n"
    # The same bytes the dict made, once the added keys are out.
    assert json.dumps(without_added(json.loads(out)), indent=2) == json.dumps(
        legacy_summary(replayed_and_live), indent=2
    )


def test_a_tau2_file_keeps_the_shape_too() -> None:
    results = read_tau2_results(tau2_fixture())
    dump = summarize(results).model_dump(mode="json")
    assert key_paths(without_added(dump)) == key_paths(legacy_summary(results))
    assert without_added(dump) == json.loads(json.dumps(legacy_summary(results)))


def test_nan_is_the_one_value_that_changes(replayed_and_live: Results) -> None:
    """With every run excluded the average reward is undefined: NaN before (invalid JSON), null now."""
    excluded = [
        run.model_copy(update={"termination_reason": TerminationReason.INFRASTRUCTURE_ERROR})
        for run in replayed_and_live.simulations
    ]
    results = replayed_and_live.model_copy(update={"simulations": excluded})
    legacy = legacy_summary(results)
    dump = without_added(summarize(results).model_dump(mode="json"))
    assert math.isnan(legacy["avg_reward"]) and dump["avg_reward"] is None
    assert key_paths(dump) == key_paths(legacy)
    assert {**dump, "avg_reward": None} == json.loads(json.dumps({**legacy, "avg_reward": None}))
