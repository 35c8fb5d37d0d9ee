"""One trajectory as an HTML section: the task panel, the agent's prompt, messages, tool calls and
results, the reward, and every model call with its raw request and response."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tauproxy.data_model.call import CallRecord
from tauproxy.data_model.message import Message
from tauproxy.data_model.result import ModelInfo, SimulationRun
from tauproxy.data_model.task import Task
from tauproxy.reports.grid import call_source
from tauproxy.reports.html_data import PageData
from tauproxy.reports.html_task import prompt_panel, task_panel
from tauproxy.reports.markup import cell, element, row, table
from tauproxy.reports.metrics import EXCLUDED_TERMINATIONS, is_success
from tauproxy.reports.recorded_calls import RecordedCalls
from tauproxy.reports.trajectory import tool_names_by_call

SOURCE_LABELS = {"live": "live", "replay": "replayed", "shared": "shared"}

CHECK = {True: "✓", False: "✗"}


@dataclass(frozen=True)
class TrialSources:
    """What a trajectory section shows beside the trial itself: the run's tasks by id, the agent
    that played, the recorded bodies of the run's calls, and the page data those go into."""

    tasks: dict[str, Task]
    agent: ModelInfo
    calls: RecordedCalls
    data: PageData


def trajectory_section(run: SimulationRun, anchor: str, sources: TrialSources | None = None) -> str:
    """A <details> page the grid links to by `anchor`; collapsed so a long report stays scannable.

    Without `sources` (a trial shown on another run's page, as a comparison shows its baseline's),
    the task panel lists the checks the trial's reward ran, and the calls have no raw bodies."""
    success = is_success(run)
    reward = run.reward_info.reward if run.reward_info else None
    title = (
        f" task {run.task_id} · trial {run.trial} · seed {run.seed} · reward {reward} · "
        f"{run.termination_reason.value} · calls {call_source(run)}"
    )
    mark = element("span", CHECK[success], class_="mark-pass" if success else "mark-fail")
    if sources is not None:
        about = [
            task_panel(run, sources.tasks.get(run.task_id)),
            prompt_panel(run, sources.agent, sources.calls, sources.data),
        ]
    else:
        about = [task_panel(run, None)]
    parts = [
        *about,
        element("h4", "Conversation"),
        messages_block(run.messages),
        reward_block(run),
        calls_block(run, anchor, sources),
        element("p", children=element("a", "back to the grid", href="#grid")),
    ]
    if run.error:
        parts.insert(0, element("p", f"error: {run.error}", class_="notes"))
    head = element("summary", children=mark + element("span", title))
    details = element("details", class_="trial", children=head + "".join(parts))
    # data-outcome is what the page's failures filter reads; an excluded trial is not a pass, so it shows.
    outcome = "excluded" if run.termination_reason in EXCLUDED_TERMINATIONS else ("pass" if success else "fail")
    return element("section", class_="trajectory", id=anchor, data_outcome=outcome, children=details)


def messages_block(messages: list[Message]) -> str:
    names = tool_names_by_call(messages)
    out: list[str] = []
    for message in messages:
        if message.role == "tool":
            badge = element("span", "error", class_="badge") if message.error else ""
            label = element(
                "span", f"tool ← {names.get(message.tool_call_id or '', '?')} ", class_="role", children=badge
            )
            out.append(
                element(
                    "div",
                    class_="msg role-tool" + (" error" if message.error else ""),
                    children=label + tool_result(message.content or ""),
                )
            )
            continue
        calls = "".join(
            element(
                "div", f"→ {c.name}({json.dumps(c.arguments, sort_keys=True, ensure_ascii=False)})", class_="toolcall"
            )
            for c in message.tool_calls or []
        )
        text = element("span", message.content or "") if message.has_text() else ""
        out.append(
            element(
                "div",
                class_=f"msg role-{message.role}",
                children=element("span", message.role, class_="role") + text + calls,
            )
        )
    return element("div", class_="messages", children="".join(out))


FOLD_LINES = 12  # a tool result longer than this starts folded


def tool_result(content: str) -> str:
    """A tool's answer, JSON pretty-printed, in a <details> of its own: open when short, folded when
    long, so a trajectory reads as a conversation and a 200-line lookup is one click away."""
    pretty = pretty_json(content)
    text = content if pretty is None else pretty
    lines = text.count("\n") + 1
    label = f"{lines} lines" + (" of JSON" if pretty is not None else "")
    summary = element("summary", f"{label}: {_preview(content, pretty is not None)}")
    return element(
        "details", class_="result", open=lines <= FOLD_LINES, children=summary + element("pre", text, class_="result")
    )


def _preview(content: str, is_json: bool) -> str:
    """What a folded result holds, in a line: an object's keys, an array's length, or its first words."""
    if is_json:
        value = json.loads(content)
        text = "{" + ", ".join(str(key) for key in value) + "}" if isinstance(value, dict) else f"[{len(value)} items]"
    else:
        text = " ".join(content.split())
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


_PREVIEW = 80


def pretty_json(content: str) -> str | None:
    """An object or array indented two spaces, keys in their order; None when it is not JSON of that kind."""
    stripped = content.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return json.dumps(value, indent=2, ensure_ascii=False)


def reward_block(run: SimulationRun) -> str:
    """The reward and its parts; which criteria held is in the task panel above."""
    info = run.reward_info
    if info is None:
        return element("h4", "Reward") + element("p", "not evaluated")
    breakdown = ", ".join(f"{basis} {value:g}" for basis, value in (info.reward_breakdown or {}).items())
    basis = ", ".join(info.reward_basis or [])
    line = f"reward {info.reward:g}; basis {basis or 'none'}; breakdown {breakdown or 'none'}"
    return element("h4", "Reward") + element("p", line)


CALL_HEADERS = ["#", "role", "source", "model", "tokens in/out", "cost", "latency"]


def calls_block(run: SimulationRun, anchor: str, sources: TrialSources | None) -> str:
    """One row per call (live or replayed, cost, latency), each followed by its raw request and
    response, folded; a call's body has its own anchor, `<trial anchor>/call-<index>` (no trial
    anchor holds a `/`, so no call anchor can be one)."""
    title = element("h4", "Model calls")
    if not run.calls:
        return title + element("p", "none recorded (live or replayed unknown)")
    recorded = sources.calls if sources is not None else None
    raw = recorded is not None and recorded.problem is None
    rows: list[str] = []
    previous: dict[str, CallRecord] = {}
    for call in sorted(run.calls, key=lambda c: c.index):
        call_anchor = f"{anchor}/call-{call.index}"
        number = str(call.index)
        if raw:  # the number links the call's body, to share one call
            number_cell = element("td", class_="num", children=element("a", number, href=f"#{call_anchor}"))
        else:
            number_cell = cell(number, number=True)
        rows.append(
            row(
                number_cell,
                cell(call.role),
                cell(SOURCE_LABELS[call.source], class_=f"src-{call.source}"),
                cell(call.model),
                cell(f"{call.usage.prompt_tokens}/{call.usage.completion_tokens}", number=True),
                cell("unknown" if call.cost_usd is None else f"${call.cost_usd:.6f}", number=True),
                cell(f"{call.latency_s:.3f}s", number=True),
            )
        )
        if raw and sources is not None:
            body = _raw_call(call, previous.get(call.role), call_anchor, sources)
            rows.append(element("tr", class_="raw", children=element("td", colspan=len(CALL_HEADERS), children=body)))
        previous[call.role] = call
    problem = recorded.problem if recorded is not None else None
    absent = element("p", f"Raw requests and responses: {problem}.", class_="absent") if problem else ""
    return title + absent + table(CALL_HEADERS, rows, class_="calls")


def _raw_call(call: CallRecord, before: CallRecord | None, anchor: str, sources: TrialSources) -> str:
    """A call's request (the messages new since the same role's previous call, and the whole body)
    and its response, pretty-printed and masked, folded; filled in from the page data when opened."""
    found = sources.calls.of(call)
    if found is None:
        return element("p", f"raw request and response: {sources.calls.absence(call)}", id=anchor, class_="absent")
    request, data = found.request, sources.data
    messages = found.message_keys
    earlier = sources.calls.of(before) if before is not None else None
    start = 0
    if earlier is not None:
        previous = earlier.message_keys  # content hashes: equal lists, equal messages
        start = len(previous) if messages[: len(previous)] == previous else 0
    since = f"{len(messages) - start} new since call #{before.index}" if before is not None and start else "all new"
    tools = len(_list(request.get("tools")))
    summary = element(
        "summary", f"request and response: {len(messages)} messages ({since}), {tools} tool{'s' * (tools != 1)}"
    )
    # Only the summary is written; the page's script lays out the folded bodies (new messages, the
    # whole request, the response) from these attributes when the call is opened: a 50x4 run has
    # thousands of calls, and the same few elements per call would be most of the page.
    return element(
        "details",
        children=summary,
        class_="raw",
        id=anchor,
        data_request=data.request(found),
        data_from=start,
        data_response=data.value(found.response),
    )


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
