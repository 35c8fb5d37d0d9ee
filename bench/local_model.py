"""Seconds per agent call of local/smollm2-135m on the mock domain, and whether temperature 0 repeats.

    .venv/bin/python bench/local_model.py          (needs the tauproxy[local] extra)

Times the agent's opening request of five different mock tasks (system prompt with the policy, the
domain's tools, the user's first message), as the engine builds it, after one untimed call that
loads the model. Different requests, like in a run, so llama.cpp's prompt cache only reuses the
shared system prompt. Then asks the same five again and checks the answers are identical.
Threads: TAUPROXY_LOCAL_THREADS (default 1). Prints one line.
"""

from __future__ import annotations

import statistics
import sys

from tauproxy.data_model.call import ModelCall, ModelRequest, ModelResponse
from tauproxy.data_model.key import TrialScope
from tauproxy.data_model.message import Message
from tauproxy.domain.pack import load_pack
from tauproxy.engine.agent import AgentPrompt
from tauproxy.errors import TauproxyError
from tauproxy.proxy.client import ModelClient
from tauproxy.proxy.local import LocalTransport, local_threads
from tauproxy.proxy.pricing import Pricing

MODEL = "local/smollm2-135m"
SAMPLES = 5
GREETING = "Hi! How can I help you today?"


def agent_calls(transport: LocalTransport) -> list[ModelCall]:
    pack = load_pack("mock")
    system = Message(role="system", content=AgentPrompt().render(pack.policy))
    calls = []
    for task in pack.tasks[:SAMPLES]:
        instructions = task.user_scenario.instructions
        opening = f"{instructions.reason_for_call} {instructions.known_info}"
        request = ModelRequest(
            model=MODEL,
            messages=[
                system,
                Message(role="assistant", content=GREETING),
                Message(role="user", content=opening),
            ],
            tools=list(pack.agent_tool_schemas),
            tool_choice="auto",
            params={"temperature": 0},
        )
        client = ModelClient(transport, Pricing(), TrialScope(task_id=task.id, trial=0))
        calls.append(client.prepare(request, "agent"))
    return calls


def main() -> int:
    transport = LocalTransport()
    calls = agent_calls(transport)
    try:
        transport.complete(calls[-1])  # loads the model; not timed
        first = [transport.complete(call) for call in calls]
        again: list[ModelResponse] = [transport.complete(call).response for call in calls]
    except TauproxyError as exc:
        print(f"bench/local_model.py: {exc}", file=sys.stderr)
        return 1
    median = statistics.median(c.latency_s for c in first)
    identical = all(c.response == r for c, r in zip(first, again, strict=True))
    tool_calls = sum(1 for c in first if c.response.message.is_tool_call())
    print(
        f"{MODEL} agent on mock: {median:.2f} s/call (median of {SAMPLES}, "
        f"min {min(c.latency_s for c in first):.2f}, max {max(c.latency_s for c in first):.2f}, "
        f"{local_threads()} threads, {tool_calls}/{SAMPLES} tool calls); "
        f"temperature 0 identical on repeat: {'yes' if identical else 'NO'}"
    )
    return 0 if identical else 2


if __name__ == "__main__":
    sys.exit(main())
