"""uvicorn's HTTP/1.1 protocol (h11) with a header-read timeout, and its own errors in JSON.

uvicorn times out only an idle keep-alive connection, and only until its first byte: a client that
connects and sends nothing, or sends a request's head a byte at a time, holds a connection (and a
file descriptor) for ever. Here a request's head (request line and headers) must arrive within
`read_timeout_s` of its first byte, or of the connection's opening: a silent connection is closed, a
partial head gets a JSON 408 and the connection is closed. The body's own deadline is the app's
(app.py), which can answer in the usual way because a request exists by then.

uvicorn answers an unparseable request with a plain-text 400; here it is the JSON error every other
refusal of `tauproxy serve` is.

uvicorn writes a response's head and its body with one `transport.write` each, and asyncio sends
each at once: two segments, so a client wakes twice per answer (a Python client with many threads
waits for its GIL each time). Here the writes of one pass of the event loop go out as one
(`_OneSendPerTurn`): a replayed answer, head and body, leaves in one send.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from tauproxy.serve.errors import HttpError


def _raw_error(error: HttpError, reason: str) -> bytes:
    """A whole HTTP/1.1 response for `error`, closing the connection, written without h11: h11 will
    not send a response before it has a request, and a timed-out head is exactly that."""
    body = json.dumps(error.body(), separators=(",", ":")).encode("utf-8")
    head = (
        f"HTTP/1.1 {error.status} {reason}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class _OneSendPerTurn:
    """A transport whose writes are held until the event loop's next turn, then written as one.

    Everything else is the wrapped transport's; closing (or a write_eof) writes what is held first,
    in order, and an abort drops it with the rest of the connection's unsent bytes.
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._held:
            self._loop.call_soon(self._flush)
        self._held.append(bytes(data))

    def writelines(self, lines: Iterable[bytes | bytearray | memoryview]) -> None:
        for data in lines:
            self.write(data)

    def _flush(self) -> None:
        if self._held:
            data = b"".join(self._held) if len(self._held) > 1 else self._held[0]
            self._held = []
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._held = []
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(data) for data in self._held)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class ServeProtocol(H11Protocol):
    """One connection; `read_timeout_s` is set by `protocol_with` for a server's settings."""

    read_timeout_s: float = 30.0
    _head_timer: asyncio.TimerHandle | None = None
    _head_started = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # uvicorn's flow control keeps the transport itself; its writes (and ours) go through this.
        self.transport = _OneSendPerTurn(transport, self.loop)  # type: ignore[assignment]
        self._arm_head_timer()  # a connection that never sends a head is closed too

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        awaiting_head = self.conn.their_state is h11.IDLE
        if awaiting_head and not self._head_started:
            self._head_started = True
            self._arm_head_timer()  # the head's deadline runs from its first byte
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the head is complete (or broken and answered)
            self._cancel_head_timer()
            self._head_started = False

    def send_400_response(self, msg: str) -> None:
        event = h11.Response(
            status_code=400,
            headers=[(b"content-type", b"application/json"), (b"connection", b"close")],
            reason=b"Bad Request",
        )
        body = json.dumps(HttpError(400, f"not an HTTP/1.1 request: {msg}").body()).encode("utf-8")
        self.transport.write(self.conn.send(event) or b"")
        self.transport.write(self.conn.send(h11.Data(data=body)) or b"")
        self.transport.write(self.conn.send(h11.EndOfMessage()) or b"")
        self.transport.close()

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self.read_timeout_s, self._head_too_slow)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self._head_started:
            message = f"request headers not received within {self.read_timeout_s:g} s (--read-timeout)"
            self.transport.write(_raw_error(HttpError(408, message), "Request Timeout"))
        self.transport.close()


def protocol_with(read_timeout_s: float) -> type[ServeProtocol]:
    """The protocol class for one server: uvicorn instantiates it per connection."""

    class Configured(ServeProtocol):
        pass

    Configured.read_timeout_s = read_timeout_s
    return Configured
