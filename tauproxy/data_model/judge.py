"""The judge's conversation contract, shared by the judge (engine) and any judge model (proxy).

The judge asks with a transcript and a list of assertions between fixed markers and expects JSON:
{"results": [{"assertion": str, "met": bool, "justification": str}, ...]} in the same order.
"""

from __future__ import annotations

from pydantic import BaseModel

TRANSCRIPT_OPEN = "<transcript>"
TRANSCRIPT_CLOSE = "</transcript>"
ASSERTIONS_OPEN = "<assertions>"
ASSERTIONS_CLOSE = "</assertions>"


class JudgeItem(BaseModel):
    assertion: str
    met: bool
    justification: str = ""


class JudgeVerdict(BaseModel):
    results: list[JudgeItem]


def between(text: str, opener: str, closer: str) -> str:
    start = text.find(opener)
    end = text.find(closer, start + len(opener))
    if start < 0 or end < 0:
        return ""
    return text[start + len(opener) : end].strip("\n")
