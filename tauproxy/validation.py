"""A pydantic validation error as the one line a user sees: the first problem, with its field path.

Every boundary that validates a file or flag says the same kind of line (`field agent.temperature:
Input should be a valid number`), and never shows the value itself: it may be a key.
"""

from __future__ import annotations

from pydantic import ValidationError


def first_problem(exc: ValidationError, where: str = "") -> tuple[str, str]:
    """(the dotted field path of the first problem, or `where` for the whole value; its message)."""
    first = exc.errors()[0]
    return ".".join(str(part) for part in first["loc"]) or where, first["msg"]
