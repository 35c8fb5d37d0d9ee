"""Each trial of the HTML report: its task panel (scenario, golden actions, criteria and which held),
the agent's prompt and policy, and every model call with its raw request and response from the run's
cassette (masked), through `render_html` on in-process results and a tiny cassette."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke_cli
from recordings import recording
from report_runs import mock_run, tiny_results

from tauproxy.data_model.call import CallRecord
from tauproxy.data_model.message import Message
from tauproxy.data_model.result import (
    ActionCheck,
    DBCheck,
    NLAssertionCheck,
    Results,
    RewardInfo,
)
from tauproxy.data_model.task import Action, EvaluationCriteria, RewardType
from tauproxy.redact import MASK, Redactor
from tauproxy.reports.html import render_html
from tauproxy.reports.html_data import DATA_ID
from tauproxy.reports.html_trajectory import trajectory_section
from tauproxy.reports.recorded_calls import find_cassette, read_recorded_calls
from tauproxy.reports.summary import summarize
from tauproxy.store.cassette import Cassette

FAKE_KEY = "sk-test-" + "not-a-real-key"  # built, so no key-like literal sits in the tree
POLICY = "Refunds only within 30 days."
SYSTEM = f"You are a careful agent.\n\n<policy>\n{POLICY}\n</policy>"
TOOLS = [{"type": "function", "function": {"name": "get_order", "parameters": {"type": "object"}}}]


def page_of(results: Results) -> str:
    return render_html(summarize(results), results)


def trial_of(page: str, anchor: str) -> str:
    return page.split(f'id="{anchor}"', 1)[1].split('<section class="trajectory"', 1)[0]


def page_data(page: str) -> dict[str, Any]:
    block = page.split(f'id="{DATA_ID}">', 1)[1].split("</script>", 1)[0]
    data: dict[str, Any] = json.loads(block)
    return data


def request_from(data: dict[str, Any], index: int) -> dict[str, Any]:
    """A stored request put back together as the page's script does."""
    stored = dict(data["requests"][index])
    stored["messages"] = [data["values"][i] for i in stored["messages"]]
    if isinstance(stored.get("tools"), int):
        stored["tools"] = data["values"][stored["tools"]]
    return stored


def graded_results() -> Results:
    """One trial of a task with every kind of criterion; the reward info says some held, some not."""
    results = tiny_results()
    task = results.tasks[0]
    criteria = EvaluationCriteria(
        actions=[
            Action(action_id="a1", name="find_user", arguments={"email": "ada@example.com"}),
            Action(action_id="a2", name="refund", arguments={"order": "o7"}, compare_args=["order"]),
        ],
        communicate_info=["the refund number"],
        nl_assertions=["The agent apologises.", "The agent explains the 30-day rule."],
        reward_basis=[RewardType.DB, RewardType.ACTION, RewardType.NL_ASSERTION],
    )
    task = task.model_copy(update={"evaluation_criteria": criteria})
    actions = criteria.actions or []
    info = RewardInfo(
        reward=0.0,
        db_check=DBCheck(db_match=True, db_reward=1.0),
        action_checks=[
            ActionCheck(action=actions[0], action_match=True, action_reward=1.0),
            ActionCheck(action=actions[1], action_match=False, action_reward=0.0),
        ],
        nl_assertions=[
            NLAssertionCheck(nl_assertion="The agent apologises.", met=True, justification="it said sorry"),
            NLAssertionCheck(nl_assertion="The agent explains the 30-day rule.", met=False, justification="never"),
        ],
        reward_basis=criteria.reward_basis,
        # No communicate checks: COMMUNICATE is not in the basis, so the evaluator did not run them.
    )
    run = results.simulations[0].model_copy(update={"reward_info": info})
    return results.model_copy(update={"tasks": [task], "simulations": [run]})


def rows_of(html: str) -> list[list[str]]:
    return [
        [unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        for tr in re.findall(r"<tr>(.*?)</tr>", html, re.S)
    ]


def test_the_task_panel_shows_the_scenario_golden_actions_and_which_criteria_held() -> None:
    results = graded_results()
    task, run = results.tasks[0], results.simulations[0]
    panel = trial_of(page_of(results), f"trial-{task.id}-0").split('<div class="messages">')[0]
    text = unescape(panel)
    instructions = task.user_scenario.instructions
    assert not isinstance(instructions, str)
    for fact in (instructions.reason_for_call, instructions.known_info, task.user_scenario.persona):
        assert fact and fact in text, fact
    rows = rows_of(panel)
    golden = {row[2]: row for row in rows if len(row) == 6}
    assert golden['find_user({"email": "ada@example.com"})'][4:] == ["yes", "✓ held"]
    assert golden['refund({"order": "o7"})'][3:] == ["compares order", "yes", "✗ failed"]
    criteria = {row[1]: row for row in rows if len(row) == 5}
    assert criteria["the database ends as the golden actions leave it"][2:4] == ["yes", "✓ held"]
    assert criteria["The agent apologises."][3:] == ["✓ held", "it said sorry"]
    assert criteria["The agent explains the 30-day rule."][3:] == ["✗ failed", "never"]
    # Not in the reward basis, so never checked: it reads so, and is not counted as failed.
    assert criteria["tells the user: the refund number"][2:4] == ["no", "not checked"]
    assert run.reward_info is not None and "reward basis: DB, ACTION, NL_ASSERTION" in text


def test_checks_of_a_task_the_results_do_not_hold_are_still_listed() -> None:
    results = graded_results()
    page = page_of(results.model_copy(update={"tasks": []}))
    panel = unescape(trial_of(page, f"trial-{results.simulations[0].task_id}-0"))
    assert "its definition is not at hand here" in panel
    assert "The agent explains the 30-day rule." in panel and "✗ failed" in panel


def recorded_run(tmp_path: Path, *, cost: float | None = None) -> Results:
    """Two agent calls of one trial recorded in a cassette; the second request repeats the first's
    messages (as every next turn does), and one user message carries a key someone pasted."""
    cassette = Cassette.open(tmp_path / "cassette")
    results = tiny_results()
    task_id = results.tasks[0].id
    first = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"my key is {FAKE_KEY}"}]
    reply = {"role": "assistant", "content": "Let me look."}
    second = [*first, reply, {"role": "user", "content": "order o7"}]
    calls = []
    for index, (messages, answer) in enumerate([(first, reply), (second, {"role": "assistant", "content": "Done."})]):
        request = {"model": "gpt-4.1", "messages": messages, "tools": TOOLS, "seed": 3}
        response = {
            "id": f"chatcmpl-{index}",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "gpt-4.1",
            "choices": [{"index": 0, "message": answer, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
        }
        entry = cassette.record(recording(request, response, task_id=task_id, call_index=index))
        calls.append(
            CallRecord(
                index=index,
                role="agent",
                model="gpt-4.1",
                key=entry.key,
                sample_key=entry.sample_key,
                source="live" if index == 0 else "replay",
                cost_usd=cost if index == 0 else 0.25,
                latency_s=0.5,
            )
        )
    cassette.close()
    run = results.simulations[0].model_copy(update={"calls": calls})
    agent = results.info.agent_info.model_copy(update={"system_prompt_sha256": None})
    info = results.info.model_copy(update={"cassette": str(tmp_path / "cassette"), "agent_info": agent})
    return results.model_copy(update={"info": info, "simulations": [run]})


def test_raw_calls_come_from_the_cassette_masked_each_message_stored_once(tmp_path: Path) -> None:
    results = recorded_run(tmp_path)
    page = page_of(results)
    assert FAKE_KEY not in page
    data = page_data(page)
    requests = [request_from(data, i) for i in range(len(data["requests"]))]
    assert len(requests) == 2
    assert requests[0]["messages"][1]["content"] == f"my key is {MASK}"
    assert requests[1]["messages"][:2] == requests[0]["messages"], "the second request repeats the first"
    assert requests[0]["tools"] == TOOLS and requests[0]["model"] == "gpt-4.1"
    # Each distinct message and the tool list once, however many requests repeat them.
    assert sum(value == {"role": "system", "content": SYSTEM} for value in data["values"]) == 1
    assert sum(value == TOOLS for value in data["values"]) == 1
    anchor = f"trial-{results.simulations[0].task_id}-0"
    trial = trial_of(page, anchor)
    links = re.findall(r'href="#([^"]+/call-\d+)"', trial)
    assert links == [f"{anchor}/call-0", f"{anchor}/call-1"] == re.findall(r'id="([^"]+/call-\d+)"', trial)
    second = trial.split(f'id="{anchor}/call-1"', 1)[1].split("</details></td></tr>", 1)[0]
    assert "4 messages (2 new since call #0), 1 tool" in unescape(second)
    assert 'data-request="1" data-from="2"' in second, "the second call shows its new messages"
    (response,) = [int(i) for i in re.findall(r'data-response="(\d+)"', second)]
    assert data["values"][response]["choices"][0]["message"]["content"] == "Done."
    assert "raw calls" in page and str(tmp_path / "cassette") in unescape(page.split("</header>")[0])


def test_each_call_says_live_or_replayed_cost_unknown_not_zero_and_latency(tmp_path: Path) -> None:
    page = page_of(recorded_run(tmp_path, cost=None))
    calls = page.split('<table class="calls">', 1)[1].split("</table>", 1)[0]
    rows = [row for row in rows_of(calls) if len(row) == 7]
    assert [row[2] for row in rows] == ["live", "replayed"]
    assert [row[5] for row in rows] == ["unknown", "$0.250000"]
    assert all(row[6] == "0.500s" for row in rows)


def test_the_prompt_and_policy_are_what_the_agent_was_sent_folded(tmp_path: Path) -> None:
    results = recorded_run(tmp_path)
    page = page_of(results)
    data = page_data(page)
    trial = trial_of(page, f"trial-{results.simulations[0].task_id}-0")
    folds = re.findall(
        r'<details class="prompt"><summary>([^<]*)</summary><pre class="lazy" data-value="(\d+)">', trial
    )
    assert len(folds) == 2, "prompt and policy, each folded"
    (prompt_title, prompt), (policy_title, policy) = folds
    assert data["values"][int(prompt)] == "You are a careful agent." and "sent in call #0" in prompt_title
    assert data["values"][int(policy)] == POLICY and "Policy" in policy_title


def test_a_missing_cassette_or_call_is_said_in_one_line(tmp_path: Path) -> None:
    results = recorded_run(tmp_path)
    gone = results.model_copy(update={"info": results.info.model_copy(update={"cassette": str(tmp_path / "gone")})})
    trial = unescape(trial_of(page_of(gone), f"trial-{results.simulations[0].task_id}-0"))
    assert trial.count(f"the run's cassette {tmp_path / 'gone'} is not found") == 2, "the prompt and the calls"
    assert 'class="raw"' not in trial
    none = results.model_copy(update={"info": results.info.model_copy(update={"cassette": None})})
    assert "the run recorded no cassette" in page_of(none)
    run = results.simulations[0]
    stray = run.calls[1].model_copy(update={"sample_key": "f" * 64})
    one_missing = results.model_copy(update={"simulations": [run.model_copy(update={"calls": [run.calls[0], stray]})]})
    trial = unescape(trial_of(page_of(one_missing), f"trial-{run.task_id}-0"))
    assert trial.count("not in the cassette") == 1 and "sample key ffffffffffff" in trial


def test_recorded_text_cannot_close_the_data_block(tmp_path: Path) -> None:
    hostile = "</script><img src=x onerror=alert(1)> & <!--"
    results = recorded_run(tmp_path)
    cassette = Cassette.open(tmp_path / "cassette")
    request = {"model": "gpt-4.1", "messages": [{"role": "user", "content": hostile}], "seed": 3}
    response = {"choices": [{"index": 0, "message": {"role": "assistant", "content": hostile}}]}
    entry = cassette.record(recording(request, response, task_id=results.simulations[0].task_id, call_index=2))
    cassette.close()
    run = results.simulations[0]
    extra = run.calls[0].model_copy(update={"index": 2, "key": entry.key, "sample_key": entry.sample_key})
    page = page_of(results.model_copy(update={"simulations": [run.model_copy(update={"calls": [*run.calls, extra]})]}))
    assert "<img" not in page and page.count("</script>") == 2, "the data block's and the script's"
    assert {"role": "user", "content": hostile} in page_data(page)["values"]


def test_a_relative_cassette_is_found_from_where_the_run_lives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = recorded_run(tmp_path / "project")
    monkeypatch.chdir(tmp_path)
    assert find_cassette("cassette", [str(tmp_path / "project" / "runs" / "r1")]) == tmp_path / "project" / "cassette"
    assert find_cassette("cassette", []) is None
    assert (
        find_cassette(str(tmp_path / "project" / "cassette" / "calls.jsonl"), []) == tmp_path / "project" / "cassette"
    )
    found = read_recorded_calls(results)
    assert found.problem is None and len(found.by_sample_key) == 2


def test_the_redactor_masks_secret_fields_and_key_like_strings() -> None:
    value = {"api_key": "anything", "extra_headers": {"x": "y"}, "messages": [{"content": f"use {FAKE_KEY} now"}]}
    assert Redactor().value(value) == {
        "api_key": MASK,
        "extra_headers": MASK,
        "messages": [{"content": f"use {MASK} now"}],
    }
    assert Redactor(("hunter2-secret",)).text("pw hunter2-secret") == f"pw {MASK}"


def test_a_page_without_recorded_calls_still_lists_them() -> None:
    call = CallRecord(index=0, role="user", model="m", key="k", sample_key="s", source="live", cost_usd=None)
    results = tiny_results(calls=[call])
    results.simulations[0].messages = [Message(role="assistant", content="hi")]
    page = page_of(results)
    assert "the run recorded no cassette" in page and "unknown" in page.split('<table class="calls">')[1]


def test_a_kind_in_the_reward_with_nothing_listed_says_so() -> None:
    results = graded_results()
    task = results.tasks[0]
    assert task.evaluation_criteria is not None
    criteria = task.evaluation_criteria.model_copy(
        update={"communicate_info": [], "reward_basis": [RewardType.DB, RewardType.COMMUNICATE]}
    )
    run = results.simulations[0]
    assert run.reward_info is not None
    info = run.reward_info.model_copy(update={"reward_basis": criteria.reward_basis})
    results = results.model_copy(
        update={
            "tasks": [task.model_copy(update={"evaluation_criteria": criteria})],
            "simulations": [run.model_copy(update={"reward_info": info})],
        }
    )
    page = page_of(results)
    rows = {row[0]: row for row in rows_of(trial_of(page, f"trial-{task.id}-0")) if len(row) == 5}
    assert rows["COMMUNICATE"][1:] == [
        "none listed, so nothing can fail",
        "yes",
        "not checked",
        "its part of the reward is 1",
    ]
    assert "the results keep no call records for this trial" in unescape(page), "no calls, so no prompt to show"


def test_report_cassette_gives_the_raw_calls_of_a_run_whose_cassette_moved(tmp_path: Path) -> None:
    """A run made through serve names no cassette, and a moved one is not found: `--cassette` says where."""
    run_dir = mock_run(tmp_path / "run", trials=1, extra=("--cassette", str(tmp_path / "recorded")))
    (tmp_path / "recorded").rename(tmp_path / "moved")
    page = tmp_path / "report.html"
    invoke_cli("report", str(run_dir), "--html", str(page))
    assert "is not found" in page.read_text() and 'class="raw"' not in page.read_text()
    invoke_cli("report", str(run_dir), "--html", str(page), "--cassette", str(tmp_path / "moved"))
    text = unescape(page.read_text())
    assert f"from the cassette {tmp_path / 'moved'}" in text and 'class="raw"' in text
    for args, message in (
        (("--cassette", str(tmp_path / "moved")), "give --html FILE too"),
        (("--html", str(page), "--cassette", str(tmp_path / "nowhere")), "no cassette there"),
    ):
        failed = invoke_cli("report", str(run_dir), *args, check=False)
        assert failed.returncode == 2 and message in failed.stderr and len(failed.stderr.strip().splitlines()) == 1


def test_a_trial_shown_without_its_run_lists_its_checks_and_calls() -> None:
    """As a comparison shows its baseline's flipped trials: no task, prompt or raw bodies at hand."""
    results = graded_results()
    call = CallRecord(index=0, role="agent", model="m", key="k", sample_key="s", source="replay", cost_usd=None)
    run = results.simulations[0].model_copy(update={"calls": [call]})
    section = unescape(trajectory_section(run, "baseline-trial-x-0"))
    assert "its definition is not at hand here" in section and "✗ failed" in section
    assert "unknown" in section and 'class="raw"' not in section and "/call-" not in section
