"""stats, verify, prune, compact, merge and the `tauproxy cassette` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result
from recordings import recording
from typer.testing import CliRunner

from tauproxy.data_model.call import CallRecord, CallRole, Usage
from tauproxy.data_model.result import ModelInfo, Results, RunInfo, SimulationRun
from tauproxy.errors import CassetteError
from tauproxy.results.keys_used import sample_keys_used
from tauproxy.store.cassette import Cassette
from tauproxy.store.entry import CassetteEntry
from tauproxy.store.format import node_hash
from tauproxy.store.maintenance import check, compact, merge, prune, stats, verify
from tauproxy_cli.cassette import app

SYSTEM = {"role": "system", "content": "You are a support agent."}


def record(
    cassette: Cassette,
    question: str,
    answer: str = "ok",
    *,
    task_id: str = "t1",
    role: CallRole = "agent",
    cost: float | None = 0.01,
    usage: Usage | None = None,
) -> CassetteEntry:
    request = {"model": "gpt-4.1", "messages": [SYSTEM, {"role": "user", "content": question}]}
    reply = {"role": "assistant", "content": answer}
    response = {"id": "r", "created": 1, "model": "gpt-4.1", "choices": [{"message": reply}]}
    return cassette.record(
        recording(
            request,
            response,
            task_id=task_id,
            role=role,
            usage=usage or Usage(prompt_tokens=100, completion_tokens=10, total_tokens=110),
            cost_usd=cost,
            price_source="test" if cost is not None else None,
            latency_s=0.1,
        )
    )


def write_results(run_dir: Path, keys: list[str]) -> Path:
    run_dir.mkdir(parents=True)
    calls = [
        CallRecord(index=i, role="agent", model="gpt-4.1", key=key, sample_key=key, source="replay")
        for i, key in enumerate(keys)
    ]
    model = ModelInfo(llm="gpt-4.1")
    info = RunInfo(
        tauproxy_version="0",
        domain="mock",
        domain_sha256="x" * 64,
        num_trials=1,
        seed=1,
        trial_seeds=[1],
        max_steps=10,
        max_errors=3,
        agent_info=model,
        user_info=model,
        judge_info=model,
    )
    run = SimulationRun(
        id="t1:0", task_id="t1", trial=0, seed=1, termination_reason="user_stop", messages=[], calls=calls
    )
    (run_dir / "results.json").write_text(Results(info=info, tasks=[], simulations=[run]).model_dump_json())
    return run_dir


def call_lines(directory: Path) -> list[str]:
    return [line for line in (directory / "calls.jsonl").read_text().split("\n") if '"t":"call"' in line]


def test_stats_counts_roles_tokens_and_cost(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    record(
        cassette,
        "a",
        usage=Usage(prompt_tokens=100, completion_tokens=10, total_tokens=110, cached_tokens=40),
    )
    record(cassette, "b", role="user", cost=None)
    record(cassette, "c", role="judge", cost=0.02)
    data = stats(cassette)
    assert data["entries"] == 3
    assert data["calls_by_role"] == {"agent": 1, "user": 1, "judge": 1}
    assert data["tokens"] == {"prompt": 300, "completion": 30, "cached": 40, "reasoning": 0, "total": 330}
    assert data["recorded_cost_usd"] == pytest.approx(0.03)
    assert data["unknown_price_calls"] == 1
    assert data["models"] == {"gpt-4.1": 3}
    assert data["messages_stored"] == 5  # one shared system prompt, three questions, one shared answer
    assert data["nodes_stored"] == 4  # the system prompt's node is the shared first link of all three chains
    assert data["bytes"] == (tmp_path / "c" / "calls.jsonl").stat().st_size
    assert data["problems"] == 0


def test_stats_cost_is_null_when_no_call_has_a_price(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    record(cassette, "a", cost=None)
    assert stats(cassette)["recorded_cost_usd"] is None


def test_verify_warns_about_a_sample_recorded_with_different_answers(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    record(cassette, "a", "first")
    record(cassette, "a", "second")
    record(cassette, "b", "same")
    record(cassette, "b", "same")
    report = check(cassette)
    assert report.problems == [] and verify(cassette) == []
    assert len(report.warnings) == 1 and "recorded 2 times with different responses" in report.warnings[0]


def test_verify_catches_a_key_that_does_not_match_its_request(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    entry = record(cassette, "a")
    file = tmp_path / "c" / "calls.jsonl"
    lines = [json.loads(line) for line in file.read_text().splitlines()]
    assert all("key" not in line for line in lines)  # v4 derives it from the request: it cannot be wrong
    # A v3 line carries its key, which the index takes as written and verify checks.
    old = [
        line if line["t"] != "call" else {**entry.model_dump(mode="json"), "t": "call", "v": 3, "key": "f" * 64}
        for line in lines
    ]
    for line in old:
        line.pop("sample_key", None)
    file.write_text("".join(json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n" for line in old))
    problems = verify(cassette)
    assert len(problems) == 1 and "is not the key of its request" in problems[0]


def test_prune_keeps_only_the_calls_the_runs_used(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    kept = [record(cassette, "a"), record(cassette, "b")]
    dropped = record(cassette, "c", "only in c")
    run1 = write_results(tmp_path / "run1", [kept[0].sample_key])
    run2 = write_results(tmp_path / "run2", [])
    results3 = write_results(tmp_path / "run3", [kept[1].sample_key]) / "results.json"
    used = sample_keys_used([run1, run2, results3])
    assert used == {entry.sample_key for entry in kept}

    assert prune(cassette, used) == 1
    assert {e.sample_key for e in cassette.entries()} == used
    assert cassette.lookup(dropped.sample_key) is None
    text = (tmp_path / "c" / "calls.jsonl").read_text()
    assert "only in c" not in text  # its reply and question went with it
    assert verify(cassette) == []


def test_compact_drops_duplicates_superseded_calls_and_unused_messages(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    cassette = Cassette.open(directory)
    record(cassette, "a", "old answer")
    record(cassette, "a", "new answer")
    record(cassette, "b")
    file = directory / "calls.jsonl"
    lines = file.read_text().splitlines(keepends=True)
    file.write_text("".join(lines + lines[:2]))  # what a union merge of shared messages leaves
    before = {e.sample_key: (cassette.request_of(e), cassette.response_of(e)) for e in cassette.entries()}

    result = compact(directory)

    after = Cassette.open(directory, create=False)
    assert {e.sample_key: (after.request_of(e), after.response_of(e)) for e in after.entries()} == before
    text = file.read_text()
    assert "old answer" not in text
    assert len(call_lines(directory)) == 2
    msg_hashes = [json.loads(line)["h"] for line in text.splitlines() if '"t":"msg"' in line]
    assert len(msg_hashes) == len(set(msg_hashes)) == 5  # system, "a", "b", "new answer", "ok"
    nodes = [json.loads(line) for line in text.splitlines() if '"t":"node"' in line]
    node_hashes = [node_hash(node["p"], node["m"]) for node in nodes]
    assert len(node_hashes) == len(set(node_hashes)) == 3  # [system], [system, a], [system, b]
    assert (result.lines_before, result.lines_after, result.entries) == (len(lines) + 2, 10, 2)
    assert verify(after) == []
    compact(directory)
    assert file.read_text() == text  # stable: compacting twice changes nothing


def test_compact_refuses_garbled_lines_unless_asked_to_drop_them(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    cassette = Cassette.open(directory)
    record(cassette, "a")
    file = directory / "calls.jsonl"
    with file.open("a") as handle:
        handle.write("this is not json\n")
    bad_line = len(file.read_text().splitlines())
    with pytest.raises(CassetteError, match=rf"calls\.jsonl:{bad_line}: .*--drop-bad"):
        compact(directory)
    result = compact(directory, drop_bad=True)
    assert result.dropped_bad == 1
    assert verify(cassette) == [] and len(Cassette.open(directory)) == 1


def test_merge_is_a_union_where_the_last_source_wins(tmp_path: Path) -> None:
    one, two, target = Cassette.open(tmp_path / "one"), Cassette.open(tmp_path / "two"), tmp_path / "target"
    only_one = record(one, "x")
    shared = record(one, "shared", "from one")
    record(two, "shared", "from two")
    only_two = record(two, "y")

    result = merge(target, [tmp_path / "one", tmp_path / "two"])

    merged = Cassette.open(target, create=False)
    assert (result.entries, result.added, result.replaced) == (3, 3, 1)
    assert {e.sample_key for e in merged.entries()} == {
        only_one.sample_key,
        shared.sample_key,
        only_two.sample_key,
    }
    winner = merged.lookup(shared.sample_key)
    assert winner is not None and merged.response_of(winner)["choices"][0]["message"]["content"] == "from two"
    assert verify(merged) == []


def test_sample_keys_used_rejects_a_missing_results_file(tmp_path: Path) -> None:
    from tauproxy.errors import ConfigError

    with pytest.raises(ConfigError, match="no such file"):
        sample_keys_used([tmp_path / "nowhere"])


# -- the CLI ------------------------------------------------------------------------------------


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(app, [str(arg) for arg in args])


def test_cli_ls_show_stats(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    entry = record(cassette, "where is my order?", "on its way")
    listing = invoke("ls", tmp_path / "c")
    assert listing.exit_code == 0 and "t1/0" in listing.output and entry.key[:12] in listing.output
    rows = json.loads(invoke("ls", tmp_path / "c", "--json").output)
    assert rows[0]["sample_key"] == entry.sample_key
    shown = invoke("show", tmp_path / "c", entry.key[:10])
    assert shown.exit_code == 0 and "where is my order?" in shown.output and "on its way" in shown.output
    data = json.loads(invoke("show", tmp_path / "c", entry.sample_key, "--json").output)
    assert data["response"]["choices"][0]["message"]["content"] == "on its way"
    assert json.loads(invoke("stats", tmp_path / "c", "--json").output)["entries"] == 1


def test_cli_ls_columns_line_up_with_long_task_ids(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    record(cassette, "a", task_id="t1")
    record(cassette, "b", task_id="airline_0_7_change_flight+baggage_question", role="user")
    lines = invoke("ls", tmp_path / "c").output.splitlines()
    assert len(lines) == 3
    # Every row's role starts under the header's "role", however long the task id before it.
    column = lines[0].index("role")
    assert [line[column:].split()[0] for line in lines] == ["role", "agent", "user"]
    assert lines[0].index("key") == lines[1].index(cassette.entries()[0].key[:12])


def test_cli_verify_exits_1_and_prints_each_problem(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    record(cassette, "a")
    assert invoke("verify", tmp_path / "c").exit_code == 0
    with (tmp_path / "c" / "calls.jsonl").open("a") as handle:
        handle.write("{broken\n")
    result = invoke("verify", tmp_path / "c")
    assert result.exit_code == 1
    assert f"{tmp_path / 'c' / 'calls.jsonl'}:" in result.output and "not JSON" in result.output


def test_cli_errors_are_one_red_line_and_exit_2(tmp_path: Path) -> None:
    result = invoke("ls", tmp_path / "missing")
    assert result.exit_code == 2
    assert "error: no cassette at" in result.output and "Traceback" not in result.output
    assert invoke("compact", tmp_path / "missing").exit_code == 2
    assert not (tmp_path / "missing").exists()


def test_cli_prune_merge_compact(tmp_path: Path) -> None:
    cassette = Cassette.open(tmp_path / "c")
    keep, drop = record(cassette, "a"), record(cassette, "b")
    run1 = write_results(tmp_path / "run1", [keep.sample_key])
    run2 = write_results(tmp_path / "run2", [])
    result = invoke("prune", tmp_path / "c", "--runs", run1, run2, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"before": 2, "removed": 1, "kept": 1}
    assert invoke("prune", tmp_path / "c", "--runs", run2).exit_code == 2  # would remove everything

    other = Cassette.open(tmp_path / "other")
    record(other, "b")
    merged = invoke("merge", tmp_path / "c", tmp_path / "other", "--json")
    assert merged.exit_code == 0 and json.loads(merged.output)["added"] == 1
    assert Cassette.open(tmp_path / "c").lookup(drop.sample_key) is not None
    compacted = invoke("compact", tmp_path / "c", "--json")
    assert compacted.exit_code == 0 and json.loads(compacted.output)["entries"] == 2
