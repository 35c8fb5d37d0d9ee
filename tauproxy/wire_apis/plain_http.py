"""Serve's pass-through POSTs to a plain-http upstream (a local model server, a stub): HTTP/1.1 over
kept-alive sockets, one call at a time on each.

Why not httpx's transport, which carries every other call (TLS, a proxy): a miss at concurrency 32
spent about a fifth of serve's CPU in it. Its HTTP/1.1 state machine (h11) costs about 0.2 ms of CPU
per call, and its socket calls (a readability poll, a poll before every send and receive, a timeout
set before each) each let go of the GIL, which 32 threads then hand round: every hand-over is a
context switch. Here a call is one `sendall` of its head and body and, usually, one `recv`; the
timeout is the socket's own (SO_RCVTIMEO, SO_SNDTIMEO), set once per connection and timeout.
Measured with the bench's misses at concurrency 32 (bench/serve_overhead.py's miss arm, 9 runs of
each, interleaved), serve's CPU per miss went from 3.55 to 2.59 ms (medians).

What the upstream sees and what the caller gets are httpx's: the request's head is the one the
client builds (`Client.build_request`: its Host, Accept, Accept-Encoding, Connection and User-Agent,
then the call's headers), the answer is an `httpx.Response` (its body decoded by its
Content-Encoding, as httpx decodes), and a failure raises the httpx exception the client raises
(ConnectError, ConnectTimeout, ReadTimeout, WriteTimeout, ReadError, WriteError,
RemoteProtocolError), with the same text for a refused connection.

A connection is kept only after a complete HTTP/1.1 answer that does not close it; before it is used
again, one look (a peek that does not wait) finds whether the upstream closed it meanwhile, and one
idle longer than httpx's keep-alive expiry (5 s) is closed rather than used. A POST is never sent
twice: a connection that fails mid-call raises, as httpx's does.
"""

from __future__ import annotations

import queue
import socket
import struct
import threading
import time
from dataclasses import dataclass

import httpx

KEEPALIVE_EXPIRY_S = 5.0  # httpx's default for an idle connection
MAX_HEAD_BYTES = 256 * 1024  # an answer's status line and headers
RECV_BYTES = 256 * 1024
_HEADS_KEPT = 256  # distinct (url, headers) request heads remembered
_NO_BODY_STATUSES = frozenset({204, 304})
_HEX_DIGITS = b"0123456789abcdefABCDEF"


@dataclass(frozen=True)
class _Head:
    """A request's head as the client builds it, less its Content-Length; and where it goes."""

    origin: tuple[str, int]
    host: str
    start: bytes  # request line and every header line but Content-Length


class _Connection:
    __slots__ = ("buffer", "idle_since", "sock", "timeout")

    def __init__(self, sock: socket.socket, timeout: float | None) -> None:
        self.sock = sock
        self.buffer = b""
        self.timeout = timeout
        self.idle_since = 0.0


class PlainHttp:
    """Kept-alive HTTP/1.1 connections to plain-http upstreams (module docstring). Thread-safe: each
    call takes a connection no other call is using."""

    def __init__(self, client: httpx.Client) -> None:
        self._client = client  # builds each request's head, as it would send it
        self._lock = threading.Lock()
        self._heads: dict[tuple[str, tuple[tuple[str, str], ...]], _Head] = {}
        self._idle: dict[tuple[str, int], queue.SimpleQueue[_Connection]] = {}
        self._made: set[_Connection] = set()

    def post(self, url: str, content: bytes, headers: dict[str, str], timeout: float) -> httpx.Response:
        """The upstream's answer to a POST of `content` to `url` (http://), read whole."""
        head = self._head(url, headers)
        connection = self._take(head, timeout)
        try:
            message = b"%sContent-Length: %d\r\n\r\n%s" % (head.start, len(content), content)
            try:
                connection.sock.sendall(message)
            except (BlockingIOError, TimeoutError):
                raise httpx.WriteTimeout("timed out") from None
            except OSError as exc:
                raise httpx.WriteError(str(exc)) from None
            status, raw_headers, body, reusable = _read_answer(connection)
        except BaseException:
            self._discard(connection)
            raise
        if reusable:
            self._give_back(head, connection)
        else:
            self._discard(connection)
        return httpx.Response(status, headers=raw_headers, content=body)

    def close(self) -> None:
        """Close every connection; one carrying a call now is closed when that call ends."""
        with self._lock:
            made, self._made = self._made, set()
            self._idle = {}
        for connection in made:
            connection.sock.close()

    def _head(self, url: str, headers: dict[str, str]) -> _Head:
        key = (url, tuple(headers.items()))
        head = self._heads.get(key)
        if head is not None:
            return head
        request = self._client.build_request("POST", url, content=b"", headers=headers)
        target = request.url.raw_path
        lines = [b"POST " + target + b" HTTP/1.1\r\n"]
        lines += [
            name + b": " + value + b"\r\n" for name, value in request.headers.raw if name.lower() != b"content-length"
        ]
        host = request.url.host
        head = _Head((host, request.url.port or 80), host, b"".join(lines))
        if len(self._heads) >= _HEADS_KEPT:
            self._heads = {}
        self._heads[key] = head
        return head

    def _take(self, head: _Head, timeout: float) -> _Connection:
        idle = self._idle.get(head.origin)
        while idle is not None:
            try:
                connection = idle.get_nowait()
            except queue.Empty:
                break
            if time.monotonic() - connection.idle_since < KEEPALIVE_EXPIRY_S and _still_open(connection):
                if connection.timeout != timeout:
                    _set_timeout(connection.sock, timeout)
                    connection.timeout = timeout
                return connection
            self._discard(connection)
        return self._connect(head, timeout)

    def _connect(self, head: _Head, timeout: float) -> _Connection:
        try:
            sock = socket.create_connection(head.origin, timeout=timeout)
        except TimeoutError:
            raise httpx.ConnectTimeout("timed out") from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc)) from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(None)  # blocking: the timeout is the socket's own (_set_timeout)
            _set_timeout(sock, timeout)
        except OSError:
            sock.settimeout(timeout)  # where those options are refused: Python's own timeout
        connection = _Connection(sock, timeout)
        with self._lock:
            self._made.add(connection)
        return connection

    def _give_back(self, head: _Head, connection: _Connection) -> None:
        connection.idle_since = time.monotonic()
        with self._lock:
            if connection not in self._made:  # closed meanwhile (close): never handed to another call
                connection.sock.close()
                return
            idle = self._idle.get(head.origin)
            if idle is None:
                idle = self._idle[head.origin] = queue.SimpleQueue()
        idle.put(connection)

    def _discard(self, connection: _Connection) -> None:
        with self._lock:
            self._made.discard(connection)
        connection.sock.close()


def _set_timeout(sock: socket.socket, timeout: float) -> None:
    """A blocking socket whose sends and receives each give up after `timeout` seconds (EAGAIN)."""
    microseconds = max(1, round(timeout * 1_000_000))  # at least 1: a zero would mean no timeout at all
    value = struct.pack("ll", microseconds // 1_000_000, microseconds % 1_000_000)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)


def _still_open(connection: _Connection) -> bool:
    """Whether an idle connection can carry a call: the upstream has neither closed it nor sent
    anything unasked (a peek that does not wait)."""
    if connection.buffer:
        return False
    try:
        connection.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return True  # nothing to read: open and quiet
    except OSError:
        return False
    return False  # b"": closed by the upstream; anything else: bytes nobody asked for


def _more(connection: _Connection) -> bytes:
    try:
        chunk = connection.sock.recv(RECV_BYTES)
    except (BlockingIOError, TimeoutError):
        raise httpx.ReadTimeout("timed out") from None
    except OSError as exc:
        raise httpx.ReadError(str(exc)) from None
    return chunk


def _read_answer(connection: _Connection) -> tuple[int, list[tuple[bytes, bytes]], bytes, bool]:
    """(status, headers, body, whether the connection can carry another call) of the next answer;
    informational (1xx) answers are skipped."""
    while True:
        head = _read_head(connection)
        lines = head.split(b"\r\n")
        status_line = lines[0].split(b" ", 2)
        if len(status_line) < 2 or not status_line[0].startswith(b"HTTP/1.") or not status_line[1].isdigit():
            raise httpx.RemoteProtocolError(f"malformed status line: {lines[0][:100]!r}")
        status = int(status_line[1])
        headers: list[tuple[bytes, bytes]] = []
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon or not name or name != name.strip() or line[:1] in (b" ", b"\t"):
                raise httpx.RemoteProtocolError(f"malformed header line: {line[:100]!r}")
            headers.append((name, value.strip(b" \t")))
        if 100 <= status < 200 and status != 101:  # informational: the answer follows it
            continue
        break
    fields: dict[bytes, bytes] = {}
    for name, value in headers:
        lower = name.lower()
        fields[lower] = fields[lower] + b", " + value if lower in fields else value
    keep = status_line[0] == b"HTTP/1.1" and b"close" not in fields.get(b"connection", b"").lower()
    if status in _NO_BODY_STATUSES:
        return status, headers, b"", keep
    if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
        return status, headers, _read_chunked(connection), keep
    length = fields.get(b"content-length")
    if length is not None:
        if not length.isdigit():
            raise httpx.RemoteProtocolError(f"malformed Content-Length: {length[:100]!r}")
        return status, headers, _read_exactly(connection, int(length)), keep
    return status, headers, _read_to_close(connection), False


def _read_head(connection: _Connection) -> bytes:
    if not connection.buffer:
        chunk = _more(connection)
        if not chunk:  # httpx's words for an upstream that closed before answering at all
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
        connection.buffer = chunk
    return _read_through(
        connection,
        b"\r\n\r\n",
        too_long="the answer's head is too long",
        closed="peer closed connection without sending a complete answer head",
    )


def _read_exactly(connection: _Connection, length: int) -> bytes:
    parts = [connection.buffer]
    have = len(connection.buffer)
    while have < length:
        chunk = _more(connection)
        if not chunk:
            raise httpx.RemoteProtocolError(
                f"peer closed connection without sending complete message body (received {have} bytes, "
                f"expected {length})"
            )
        parts.append(chunk)
        have += len(chunk)
    data = b"".join(parts)
    connection.buffer = data[length:]
    return data[:length]


def _read_line(connection: _Connection) -> bytes:
    return _read_through(
        connection,
        b"\r\n",
        too_long="a chunk's size line is too long",
        closed="peer closed connection without sending complete message body",
    )


def _read_through(connection: _Connection, delimiter: bytes, *, too_long: str, closed: str) -> bytes:
    """The bytes before the next `delimiter` (which is consumed), reading more as needed; at most
    MAX_HEAD_BYTES are buffered looking for it."""
    while True:
        end = connection.buffer.find(delimiter)
        if end >= 0:
            found, connection.buffer = connection.buffer[:end], connection.buffer[end + len(delimiter) :]
            return found
        if len(connection.buffer) > MAX_HEAD_BYTES:
            raise httpx.RemoteProtocolError(too_long)
        chunk = _more(connection)
        if not chunk:
            raise httpx.RemoteProtocolError(closed)
        connection.buffer += chunk


def _read_chunked(connection: _Connection) -> bytes:
    parts: list[bytes] = []
    while True:
        size_text = _read_line(connection).split(b";", 1)[0].strip(b" \t")
        if not size_text or size_text.strip(_HEX_DIGITS):
            raise httpx.RemoteProtocolError(f"malformed chunk size: {size_text[:100]!r}")
        size = int(size_text, 16)
        if size == 0:
            while _read_line(connection):  # trailers, up to the empty line
                pass
            return b"".join(parts)
        parts.append(_read_exactly(connection, size))
        if _read_line(connection):
            raise httpx.RemoteProtocolError("a chunk does not end where its size says")


def _read_to_close(connection: _Connection) -> bytes:
    parts = [connection.buffer]
    connection.buffer = b""
    while True:
        chunk = _more(connection)
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
