"""A scripted player of τ²-bench's tasks, for `tauproxy domains check tau2/<name>`.

Each task runs as any trial of a tau2/ domain does (tauproxy/tau2bench/trial.py: τ²'s rules,
environment and evaluators); only the answers to its agent's and user's model calls come from here
instead of a model. The player is handed the task, so it need not guess it, and answers
from the task's evaluation criteria:

- the agent takes one golden action per turn: its own as a tool call, the user's as a request to
  the user (`PERFORM name {json}`); then it says every `communicate_info` string and `DONE`;
- the user opens, performs a requested action with its own tool, says it did after a tool result,
  and ends the conversation with τ²'s stop token once the agent is done;
- `silent` is the do-nothing agent: it says it is done at once.

So the oracle's pass rate is how many tasks τ²'s own grader accepts when its golden actions are
taken as written, and the do-nothing rate how many pass without any.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from tauproxy.data_model.call import ModelCall
from tauproxy.data_model.completion import Completion

PERFORM = re.compile(r"PERFORM (\w+) (\{.*\})", re.DOTALL)
DONE = "That is everything. ALL DONE"
OPENING = "Hello, I need some help."


AGENT_CALL_PREFIX = "agent-"


def _is_own_action(message: dict[str, Any]) -> bool:
    calls = message.get("tool_calls") or []
    return any(str(c.get("id", "")).startswith(AGENT_CALL_PREFIX) for c in calls) or "PERFORM " in str(
        message.get("content") or ""
    )


def _text(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def _tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ],
    }


class Tau2Player:
    """Plays one τ² task (a `tau2.data_model.tasks.Task`) as agent and as user.

    `drop_last` makes a slip: the last golden action, or (with none) the information, is left out.
    `opening` is what the user says first (the test upstream adds a marker naming the task)."""

    def __init__(self, task: Any, *, silent: bool = False, drop_last: bool = False, opening: str = OPENING) -> None:
        criteria = task.evaluation_criteria
        self.actions = list(criteria.actions or []) if criteria is not None and not silent else []
        self.info = [str(i) for i in criteria.communicate_info or []] if criteria is not None and not silent else []
        if drop_last:
            if self.actions:
                del self.actions[-1]
            else:
                self.info = []
        self.opening = opening

    def agent(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        # The actions taken so far are the player's own turns: a task's initial message history and
        # τ²'s fixed greeting are assistant messages too, and are not counted.
        step = sum(1 for m in messages if m["role"] == "assistant" and _is_own_action(m))
        if 0 <= step < len(self.actions):
            action = self.actions[step]
            if action.requestor == "user":
                return _text(f"Please do this on your phone: PERFORM {action.name} {json.dumps(action.arguments)}")
            return _tool_call(f"{AGENT_CALL_PREFIX}{len(messages)}", action.name, action.arguments)
        return _text(" ".join([*self.info, DONE]))

    def user(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The user's turn; its roles are flipped (the agent's messages arrive as "user")."""
        from tau2.user.base import STOP

        last = messages[-1]
        if not any(m["role"] == "assistant" for m in messages):
            return _text(self.opening)
        if last["role"] == "tool":
            return _text("I did it on my phone. Done.")
        said = str(last.get("content") or "")
        if DONE in said:
            return _text(f"Thank you, goodbye. {STOP}")
        asked = PERFORM.search(said)
        if asked:
            return _tool_call(f"user-{len(messages)}", asked.group(1), json.loads(asked.group(2)))
        return _text("Okay.")


def completion_body(model: str, body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    """A chat.completion answering `body` with `message`: a pure function of the request."""
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    prompt = 10 * len(body.get("messages") or [])
    return {
        "id": f"chatcmpl-{digest[:24]}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7},
    }


class Tau2PlayerTransport:
    """A Transport answering one trial's agent and user calls with a Tau2Player (nothing leaves the process)."""

    def __init__(self, player: Tau2Player) -> None:
        self.player = player

    def complete(self, call: ModelCall) -> Completion:
        messages = list(call.wire.get("messages") or [])
        message = self.player.user(messages) if call.role == "user" else self.player.agent(messages)
        return Completion(body=completion_body(call.model, call.wire, message), source="live")

    def close(self) -> None:
        pass
