"""Reading a request body: its size capped (413) and its media type checked (400).

Its JSON is checked next, alike for every wire API (tauproxy/wire_apis/json_body.py: UTF-8, finite
numbers, no lone surrogates, bounded nesting), then its shape by its API's module.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from tauproxy.serve.errors import HttpError


async def read_capped(declared_length: str | None, chunks: AsyncIterator[bytes], max_bytes: int) -> bytes:
    """The whole body, refusing with 413 as soon as it is known to exceed `max_bytes`."""
    if declared_length is not None:
        try:
            declared = int(declared_length)
        except ValueError:
            raise HttpError(400, "Content-Length is not a number") from None
        if declared > max_bytes:  # refuse before reading a byte of it
            raise HttpError(413, f"request body of {declared} bytes exceeds the limit of {max_bytes}")
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:  # a chunked body has no declared length: count as it comes
        size += len(chunk)
        if size > max_bytes:
            raise HttpError(413, f"request body exceeds the limit of {max_bytes} bytes")
        if chunk:
            parts.append(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)  # one part, nearly always: not copied


def check_content_type(value: str | None) -> None:
    """A body sent as something other than JSON (text/plain, a form) is refused, not guessed at."""
    if value is None:
        return  # many clients send none; the body must still parse as JSON
    media = value.split(";", 1)[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise HttpError(400, f"Content-Type must be application/json, got {media or 'nothing'!r}")
