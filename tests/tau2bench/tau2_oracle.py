"""An OpenAI-compatible upstream that plays τ²-bench's tasks from their evaluation criteria (tests only).

tauproxy's `scripted/` models know only our task format, and a `tau2/` run's model calls carry no task
id (they are keyed as serve keys `tau2 run`'s). This upstream stands in for a model behind an
`api_base`, so τ²-bench's own agent and user simulator run unchanged, and finds the task the way a
model could, from the request:

- the user (model `oracle-user`) reads its `<scenario>` from the system prompt and takes the first
  task of the domain with that scenario (in telecom most scenarios are shared, so a task whose
  scenario an earlier task has is played as that earlier one: a natural failure). It opens with a
  marker naming the task, performs a tool call on its device when the agent asks
  (`PERFORM name {json}`), says it is done after a tool result, and stops when the agent says it is.
- a judge (model `judge-yes` or `judge-no`, for τ²'s repetition judge) answers "yes" or "no";
  `judge-broken` fails with HTTP 500.
- the agent (model `oracle`, `oracle-e<NN>` for an error rate of NN%, `silent`) reads the marker and
  takes one golden action per turn: its own as a tool call, the user's as a PERFORM request; then it
  says every communicate_info string. With an error rate, a trial (seeded by the request's seed)
  drops its last golden action or the information; `silent` does nothing.
Both play through tauproxy's own player of τ² tasks (tauproxy/tau2bench/oracle.py, which
`domains check tau2/<name>` runs in-process); what this adds is finding the task from the request.

Every answer is a pure function of the request body, so replays are byte-identical. The τ² tasks are
read from the installed package at test time, never copied.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tauproxy.tau2bench.oracle import DONE, Tau2Player, completion_body

MARKER = re.compile(r"<<task:(.*?)>>")
SCENARIO = re.compile(r"<scenario>\n(.*)\n</scenario>", re.DOTALL)


class Tau2Oracle:
    """A loopback HTTP server answering `/v1/chat/completions` for one τ²-bench domain's tasks."""

    def __init__(self, domain: str) -> None:
        from tauproxy.tau2bench.domain import load_catalog

        catalog = load_catalog(domain)
        self.tasks: dict[str, Any] = catalog.tasks
        self.by_scenario: dict[str, str] = {}
        for task_id, task in catalog.tasks.items():
            self.by_scenario.setdefault(str(task.user_scenario), task_id)
        self.requests = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> Tau2Oracle:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests += 1
        model = str(body["model"])
        messages = body["messages"]
        if model.startswith("judge-"):
            message = _text(model.removeprefix("judge-"))
        elif model == "oracle-user":
            message = self._user(messages)
        else:
            message = self._agent(model, messages, body.get("seed"))
        return completion_body(model, body, message)

    # -- the user: it finds its task by its scenario and names it in a marker for the agent

    def _user(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        found = SCENARIO.search(str(messages[0].get("content") or ""))
        task_id = self.by_scenario.get(found.group(1) if found else "", "unknown")
        task = self.tasks.get(task_id)
        if task is None:
            return _text(f"Hello, I need some help. <<task:{task_id}>>")
        return Tau2Player(task, opening=f"Hello, I need some help. <<task:{task_id}>>").user(messages)

    # -- the agent: it reads the marker; with an error rate a trial (seeded by the request) slips

    def _agent(self, model: str, messages: list[dict[str, Any]], seed: Any) -> dict[str, Any]:
        task_id = next(
            (
                m.group(1)
                for msg in messages
                if msg["role"] == "user"
                for m in [MARKER.search(str(msg.get("content") or ""))]
                if m
            ),
            None,
        )
        task = self.tasks.get(task_id) if task_id is not None else None
        if task is None:
            return _text(DONE)
        rate = int(model.removeprefix("oracle-e")) / 100 if model.startswith("oracle-e") else 0.0
        draw = int(hashlib.sha256(f"{task_id}:{seed}".encode()).hexdigest()[:12], 16)
        return Tau2Player(task, silent=model == "silent", drop_last=draw % 1000 < rate * 1000).agent(messages)


def _text(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def _handler(oracle: Tau2Oracle) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            broken = body.get("model") == "judge-broken"  # a provider failing the judge's calls
            answer = {"error": {"message": "judge backend down", "type": "server_error"}} if broken else None
            payload = json.dumps(answer or oracle.answer(body)).encode()
            self.send_response(500 if broken else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler
