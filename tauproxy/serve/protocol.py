"""uvicorn's HTTP/1.1 protocol (httptools) with a header-read timeout and a head-size limit, and its
own errors in JSON.

Why httptools rather than uvicorn's h11 protocol: at concurrency 32 a replayed hit is CPU-bound, and
h11's protocol, written in Python (its parser, events and state machine), took about 0.11 ms of CPU
per call at c=32 and 0.18 ms at c=1 around an app that answers at once, where httptools' (llhttp, in
C) takes 0.05-0.07 ms (bench/serve_overhead.py's docstring).

uvicorn times out only an idle keep-alive connection, and only until its first byte: a client that
connects and sends nothing, or sends a request's head a byte at a time, holds a connection (and a
file descriptor) for ever. Here a request's head (request line and headers) must arrive within
`read_timeout_s` of its first byte, or of the connection's opening: a silent connection is closed, a
partial head gets a JSON 408 and the connection is closed. The body's own deadline is the app's
(app.py), which can answer in the usual way because a request exists by then. httptools sets no
limit on a head's size, so here a head that passes MAX_HEAD_BYTES unfinished gets a JSON 431 and
the connection is closed (h11's limit was 16 KiB).

uvicorn answers an unparseable request with a plain-text 400; here it is the JSON error every other
refusal of `tauproxy serve` is.

uvicorn writes a response's head and its body with one `transport.write` each, and the event loop
sends each at once: two segments, so a client wakes twice per answer (a Python client with many
threads waits for its GIL each time). Here the writes of one pass of the event loop go out as one
(`_OneSendPerTurn`): a replayed answer, head and body, leaves in one send.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from tauproxy.serve.errors import HttpError

# A head (request line and headers) longer than this, still unfinished, is refused (431).
MAX_HEAD_BYTES = 64 * 1024


def _raw_error(error: HttpError) -> bytes:
    """A whole HTTP/1.1 response for `error`, closing the connection: written directly, since the
    protocol refuses before a request exists (a slow or oversized head, bytes that are not HTTP)."""
    body = json.dumps(error.body(), separators=(",", ":")).encode("utf-8")
    head = (
        f"HTTP/1.1 {error.status} {HTTPStatus(error.status).phrase}\r\n"
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


class ServeProtocol(HttpToolsProtocol):
    """One connection; `read_timeout_s` is set by `protocol_with` for a server's settings."""

    read_timeout_s: float = 30.0
    _head_timer: asyncio.TimerHandle | None = None
    _head_started = False  # a head's first byte came, and the head is not complete yet
    _head_bytes: int | None = 0  # bytes received while awaiting a head; None once it is complete

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # uvicorn's flow control keeps the transport itself; its writes (and ours) go through this.
        self.transport = _OneSendPerTurn(transport, self.loop)  # type: ignore[assignment]
        self._arm_head_timer()  # a connection that never sends a head is closed too

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._head_bytes is not None:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._head_bytes is None or self.transport.is_closing():
            return
        if self._head_bytes > MAX_HEAD_BYTES:
            self._refuse(HttpError(431, f"request headers exceed {MAX_HEAD_BYTES} bytes"))
        elif self._head_started and self._head_timer is None:
            # A head begun in these bytes and not complete in them: its deadline runs from now, its
            # first byte's arrival. A head that arrives whole (nearly every one) needs no timer at all.
            self._arm_head_timer()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_started = True
        self._cancel_head_timer()  # the connection's own deadline ends: the head's begins (data_received)

    def on_headers_complete(self) -> None:
        self._head_started = False
        self._head_bytes = None
        self._cancel_head_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._head_bytes = 0  # what comes next is the next request's head

    def send_400_response(self, msg: str) -> None:
        self._refuse(HttpError(400, f"not an HTTP/1.1 request: {msg}"))

    def _refuse(self, error: HttpError) -> None:
        self._cancel_head_timer()
        self.transport.write(_raw_error(error))
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
        if self.transport.is_closing() or self._head_bytes is None:
            return
        if self._head_started:
            message = f"request headers not received within {self.read_timeout_s:g} s (--read-timeout)"
            self._refuse(HttpError(408, message))
        else:
            self.transport.close()


def protocol_with(read_timeout_s: float) -> type[ServeProtocol]:
    """The protocol class for one server: uvicorn instantiates it per connection."""

    class Configured(ServeProtocol):
        pass

    Configured.read_timeout_s = read_timeout_s
    return Configured
