"""One trajectory as an HTML section: messages, tool calls and results, reward checks, model calls."""

from __future__ import annotations

import json

from tauproxy.data_model.message import Message
from tauproxy.data_model.result import SimulationRun
from tauproxy.reports.grid import call_source
from tauproxy.reports.markup import cell, element, row, table
from tauproxy.reports.metrics import EXCLUDED_TERMINATIONS, is_success
from tauproxy.reports.trajectory import reward_checks, tool_names_by_call

SOURCE_LABELS = {"live": "live", "replay": "replayed", "shared": "shared"}

CHECK = {True: "✓", False: "✗"}


def trajectory_section(run: SimulationRun, anchor: str) -> str:
    """A <details> page the grid links to by `anchor`; collapsed so a long report stays scannable."""
    success = is_success(run)
    reward = run.reward_info.reward if run.reward_info else None
    title = (
        f" task {run.task_id} · trial {run.trial} · seed {run.seed} · reward {reward} · "
        f"{run.termination_reason.value} · calls {call_source(run)}"
    )
    mark = element("span", CHECK[success], class_="mark-pass" if success else "mark-fail")
    parts = [
        messages_block(run.messages),
        reward_block(run),
        calls_block(run),
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
    info = run.reward_info
    if info is None:
        return element("h4", "Reward") + element("p", "not evaluated")
    breakdown = ", ".join(f"{basis} {value:g}" for basis, value in (info.reward_breakdown or {}).items())
    basis = ", ".join(info.reward_basis or [])
    line = f"reward {info.reward:g}; basis {basis or 'none'}; breakdown {breakdown or 'none'}"
    checks = [row(cell(c.kind), cell(CHECK[c.met]), cell(c.label), cell(c.detail)) for c in reward_checks(info)]
    return (
        element("h4", "Reward") + element("p", line) + (table(["check", "", "what", "why"], checks) if checks else "")
    )


def calls_block(run: SimulationRun) -> str:
    if not run.calls:
        return element("h4", "Model calls") + element("p", "none recorded (live or replayed unknown)")
    rows = [
        row(
            cell(str(c.index), number=True),
            cell(c.role),
            cell(SOURCE_LABELS[c.source], class_=f"src-{c.source}"),
            cell(c.model),
            cell(f"{c.usage.prompt_tokens}/{c.usage.completion_tokens}", number=True),
            cell("unknown" if c.cost_usd is None else f"${c.cost_usd:.6f}", number=True),
            cell(f"{c.latency_s:.3f}s", number=True),
        )
        for c in run.calls
    ]
    headers = ["#", "role", "source", "model", "tokens in/out", "cost", "latency"]
    return element("h4", "Model calls") + table(headers, rows)
