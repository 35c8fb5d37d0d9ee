"""OpenAI-shaped error answers: what every failure of `tauproxy serve` looks like on the wire."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Types clients already know (the openai SDK maps status codes, but humans read the type).
_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}


@dataclass
class HttpError(Exception):
    """An answer that is not a completion: status, message and OpenAI error fields."""

    status: int
    message: str
    type: str | None = None
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        kind = (
            self.type or _TYPES.get(self.status) or ("server_error" if self.status >= 500 else "invalid_request_error")
        )
        return {
            "error": {
                "message": self.message,
                "type": kind,
                "param": None,
                "code": self.code or str(self.status),
            }
        }

    def __str__(self) -> str:
        return f"{self.status}: {self.message}"
