"""join_run_log: calls from a serve run log land on the simulation messages they produced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tauproxy.data_model.call import Usage
from tauproxy.data_model.key import TrialScope
from tauproxy.data_model.message import Message, ToolCall
from tauproxy.data_model.result import ModelInfo, Results, RunInfo, SimulationRun, TerminationReason
from tauproxy.results.fingerprint import request_fingerprints, system_sha256, wire_fingerprint
from tauproxy.results.run_log import RunLogLine
from tauproxy.results.run_log_join import annotate_results_with_log, join_run_log

GREETING = "Hi! How can I help you today?"
AGENT_SYSTEM = "agent policy"
USER_SYSTEM = "user persona"


def conversation(ask: str, call_id: str) -> list[Message]:
    call = ToolCall(id=call_id, name="get_user_details", arguments={"user_id": "x"})
    return [
        Message(role="assistant", content=GREETING),
        Message(role="user", content=ask),
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", content='{"user": "x"}', tool_call_id=call_id, requestor="assistant"),
        Message(role="assistant", content="Done."),
        Message(role="user", content="Thanks ###STOP###"),
    ]


def simulation(sim_id: str, task_id: str, trial: int, seed: int, messages: list[Message]) -> SimulationRun:
    return SimulationRun(
        id=sim_id,
        task_id=task_id,
        trial=trial,
        seed=seed,
        termination_reason=TerminationReason.USER_STOP,
        messages=messages,
    )


def results(*sims: SimulationRun) -> Results:
    info = RunInfo(
        tauproxy_version="test",
        domain="airline",
        domain_sha256="x",
        num_trials=2,
        seed=300,
        trial_seeds=[300, 301],
        max_steps=200,
        max_errors=10,
        agent_info=ModelInfo(llm="a"),
        user_info=ModelInfo(llm="u"),
        judge_info=ModelInfo(llm="j"),
    )
    return Results(info=info, tasks=[], simulations=list(sims))


def wire(message: Message, flip: bool) -> dict[str, Any]:
    """A trajectory message as a request would carry it; the user simulator sees roles flipped."""
    role = message.role
    if flip:
        role = {"assistant": "user", "user": "assistant"}.get(role, role)
    body: dict[str, Any] = {"role": role, "content": message.content}
    if message.tool_calls:
        body["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": "{}"}}
            for c in message.tool_calls
        ]
    return body


def line_for(
    messages: list[Message], position: int, seed: int, source: str = "live", status: int = 200, model: str = "stub"
) -> RunLogLine:
    """The log line of the call whose answer is messages[position], as serve would write it."""
    said_by_user = messages[position].role == "user"
    history = messages[:position]
    if said_by_user:  # the user simulator sees text only, roles flipped, under its own system prompt
        shown = [wire(m, flip=True) for m in history if m.role in ("user", "assistant") and m.content]
        request = [{"role": "system", "content": USER_SYSTEM}, *shown]
    else:
        request = [{"role": "system", "content": AGENT_SYSTEM}, *(wire(m, flip=False) for m in history)]
    reply = wire(messages[position], flip=said_by_user)
    return RunLogLine(
        ts=0.0,
        sample_key=f"s{seed}-{position}-{messages[1].content}",
        key=f"k{position}",
        model=model,
        scope=TrialScope(task_id="serve", trial=0),
        seed=seed,
        source=source,
        status=status,  # type: ignore[arg-type]
        usage=Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12),
        cost_usd=0.001,
        latency_s=0.01,
        recorded_latency_s=0.5 if source == "replay" else None,
        request_fp=request_fingerprints(request),
        response_fp=wire_fingerprint(reply),
        system_sha256=system_sha256(request),
    )


MODEL_POSITIONS = [1, 2, 4, 5]  # the greeting (0) is fixed text and the tool result (3) is the environment's


def lines_of(sim: SimulationRun, source: str = "live") -> list[RunLogLine]:
    return [line_for(sim.messages, p, sim.seed, source) for p in MODEL_POSITIONS]


def test_each_call_joins_its_own_message_with_its_role() -> None:
    a0 = simulation("a0", "A", 0, 300, conversation("Change my flight.", "call_a0"))
    b0 = simulation("b0", "B", 0, 300, conversation("Cancel my flight.", "call_b0"))
    a1 = simulation("a1", "A", 1, 301, conversation("Change my flight.", "call_a1"))
    log = [*lines_of(b0), *lines_of(a1), *lines_of(a0)]
    joined = join_run_log(results(a0, b0, a1), log)
    assert joined.unmatched == [] and joined.failed == []
    for sim in (a0, b0, a1):
        calls = sorted(joined.by_simulation[sim.id], key=lambda c: c.position)
        assert [c.position for c in calls] == MODEL_POSITIONS
        assert [c.role for c in calls] == ["user", "agent", "agent", "user"]
        assert all(c.exact for c in calls)
        assert {c.line.sample_key for c in calls} == {line.sample_key for line in lines_of(sim)}


def test_identical_conversations_share_out_calls_one_each() -> None:
    # Same seed, same words: nothing tells them apart, but each message is claimed by one call only.
    twin_a = simulation("x", "A", 0, 300, conversation("Same words.", "call_same"))
    twin_b = simulation("y", "B", 0, 300, conversation("Same words.", "call_same"))
    log = [*lines_of(twin_a), *lines_of(twin_b)]
    joined = join_run_log(results(twin_a, twin_b), log)
    assert joined.matched == 8 and not joined.unmatched
    assert len(joined.by_simulation["x"]) == 4 and len(joined.by_simulation["y"]) == 4


def test_judge_calls_stay_unmatched_and_errors_are_failed() -> None:
    sim = simulation("a0", "A", 0, 300, conversation("Change my flight.", "call_a0"))
    judge = line_for(sim.messages, 4, 300, model="judge").model_copy(update={"response_fp": "t:nothere"})
    failed = line_for(sim.messages, 2, 300, status=429).model_copy(update={"response_fp": None})
    joined = join_run_log(results(sim), [*lines_of(sim), judge, failed])
    assert joined.unmatched == [judge] and joined.failed == [failed]
    assert joined.matched == 4


def test_a_rewritten_request_still_joins_loosely_on_seed_and_answer() -> None:
    sim = simulation("a0", "A", 0, 300, conversation("Change my flight.", "call_a0"))
    line = line_for(sim.messages, 4, 300).model_copy(update={"request_fp": ["t:rewritten"]})
    other_seed = line.model_copy(update={"seed": 999, "sample_key": "other"})
    joined = join_run_log(results(sim), [line, other_seed])
    (call,) = joined.by_simulation["a0"]
    assert call.position == 4 and not call.exact
    assert joined.unmatched == [other_seed]


def test_annotate_fills_calls_from_a_log_file(tmp_path: Path) -> None:
    a0 = simulation("a0", "A", 0, 300, conversation("Change my flight.", "call_a0"))
    b0 = simulation("b0", "B", 0, 300, conversation("Cancel my flight.", "call_b0"))
    log = tmp_path / "run.jsonl"
    lines = [*lines_of(a0, "replay"), *lines_of(b0, "live")]
    log.write_text("".join(line.model_dump_json() + "\n" for line in lines) + '{"cut off\n')
    annotated = annotate_results_with_log(results(a0, b0), log)
    calls = {sim.id: sim.calls for sim in annotated.simulations}
    assert [c.index for c in calls["a0"]] == [0, 1, 2, 3]
    assert {c.source for c in calls["a0"]} == {"replay"} and {c.source for c in calls["b0"]} == {"live"}
    assert [c.role for c in calls["b0"]] == ["user", "agent", "agent", "user"]
    assert calls["a0"][0].latency_s == 0.5  # a replay reports its recorded latency, as in-process
    assert calls["b0"][0].usage.total_tokens == 12 and calls["b0"][0].cost_usd == 0.001
