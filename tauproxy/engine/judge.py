"""The NL-assertion judge: asks a model whether the agent's conversation meets each assertion."""

from __future__ import annotations

import json

from pydantic import ValidationError

from tauproxy.data_model.call import ModelRequest
from tauproxy.data_model.judge import (
    ASSERTIONS_CLOSE,
    ASSERTIONS_OPEN,
    TRANSCRIPT_CLOSE,
    TRANSCRIPT_OPEN,
    JudgeVerdict,
)
from tauproxy.data_model.message import Message
from tauproxy.data_model.result import NLAssertionCheck
from tauproxy.engine.llm_config import LLMConfig
from tauproxy.proxy.client import ModelClient

JUDGE_INSTRUCTIONS = """You grade customer-service conversations. For each assertion, decide from the \
transcript alone whether the agent's behaviour meets it. Answer with JSON only, in this shape: \
{"results": [{"assertion": "...", "met": true, "justification": "one sentence"}]}, one item per \
assertion, in the order given."""


def transcript(messages: list[Message]) -> str:
    lines = []
    for message in messages:
        if message.role == "tool" or not message.has_text():
            continue
        lines.append(f"{message.role}: {message.content}")
    return "\n".join(lines)


def judge_prompt(messages: list[Message], assertions: list[str]) -> str:
    listed = "\n".join(f"- {assertion}" for assertion in assertions)
    return (
        f"{TRANSCRIPT_OPEN}\n{transcript(messages)}\n{TRANSCRIPT_CLOSE}\n\n"
        f"{ASSERTIONS_OPEN}\n{listed}\n{ASSERTIONS_CLOSE}"
    )


class Judge:
    def __init__(self, llm: LLMConfig, client: ModelClient, seed: int | None) -> None:
        self._llm = llm
        self._client = client
        self._params = llm.params(seed)
        self._connection = llm.connection()

    def evaluate(self, messages: list[Message], assertions: list[str]) -> list[NLAssertionCheck]:
        request = ModelRequest(
            model=self._llm.model,
            messages=[
                Message(role="system", content=JUDGE_INSTRUCTIONS),
                Message(role="user", content=judge_prompt(messages, assertions)),
            ],
            params=self._params,
            connection=self._connection,
        )
        reply = self._client.complete(request, role="judge").message.content or ""
        return parse_verdict(reply, assertions)


def parse_verdict(reply: str, assertions: list[str]) -> list[NLAssertionCheck]:
    """Judge output -> one check per assertion; anything unreadable counts as not met, with the reason."""
    text = reply.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        verdict = JudgeVerdict.model_validate(json.loads(text))
    except (json.JSONDecodeError, ValidationError) as exc:
        reason = f"judge reply is not the expected JSON: {str(exc).splitlines()[0]}"
        return [NLAssertionCheck(nl_assertion=a, met=False, justification=reason) for a in assertions]
    checks = []
    for index, assertion in enumerate(assertions):
        item = verdict.results[index] if index < len(verdict.results) else None
        if item is None:
            checks.append(NLAssertionCheck(nl_assertion=assertion, met=False, justification="judge gave no verdict"))
        else:
            checks.append(NLAssertionCheck(nl_assertion=assertion, met=item.met, justification=item.justification))
    return checks
