"""Builds and runs the server: Starlette on uvicorn, one process, one event loop.

Why Starlette + uvicorn rather than the stdlib `http.server`: graceful shutdown is the part that is
easy to get wrong, and uvicorn already does it right (on SIGTERM/SIGINT it stops accepting, lets
every in-flight request finish, then closes idle keep-alive connections; the app bounds "finish" with
its drain, app.py); it speaks HTTP/1.1 keep-alive correctly (protocol.py adds the header-read
timeout) and runs replays on the event loop while live calls and fsyncs wait in threads (the
fsyncs group-committed: store/writer.py). bench/serve_overhead.py measures what a hit adds to calling
the upstream directly, and the miss rate, at concurrency 1 and 32 with τ²-sized bodies. The stdlib
would buy nothing measurable, and we would own the shutdown and keep-alive code ourselves.

The socket is bound before uvicorn starts, so `--port 0` works and the ready line names the real
port: "tauproxy serve: http://HOST:PORT/v1 (MODE, CASSETTE)".
"""

from __future__ import annotations

import gc
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Literal

import uvicorn

from tauproxy.errors import ConfigError
from tauproxy.proxy.live import LiteLLMTransport, load_litellm
from tauproxy.proxy.modes import RecordMode
from tauproxy.proxy.pricing import Pricing
from tauproxy.serve.app import ServeApp
from tauproxy.serve.completions import CompletionService
from tauproxy.serve.config import ServeConfig
from tauproxy.serve.identity import Sessions
from tauproxy.serve.protocol import protocol_with
from tauproxy.serve.runlog import RunLog
from tauproxy.store.cassette import Cassette
from tauproxy.wire_apis.registry import live_transport

# uvicorn's own shutdown limit, after which it cancels what still runs (and logs a traceback for each).
# A backstop only: the app's drain (app.DEFAULT_DRAIN_S, 3 s from the signal) answers every call still
# waiting 503 first, whatever its upstream does, and those answers close their connections, so the
# process is gone in about 3.3 s. A live call still running then was not recorded; a rerun sends it again.
GRACEFUL_SHUTDOWN_S = 5  # seconds, from about 0.2 s after the signal


@dataclass
class Built:
    app: ServeApp
    service: CompletionService
    cassette: Cassette | None
    run_log: RunLog | None
    read_timeout_s: float


def build(config: ServeConfig, out: Callable[[str], None] = print) -> Built:
    """Open the cassette and run log and wire the app; nothing is bound or imported from litellm yet."""
    cassette = None
    if config.cassette is not None:
        cassette = Cassette.open(config.cassette, create=config.mode != RecordMode.REPLAY)
    live = live_transport(LiteLLMTransport()) if config.goes_live else None
    run_log = RunLog(config.run_log) if config.run_log is not None else None
    pricing = Pricing.from_file(config.prices)
    sessions = Sessions(config.session_idle_s)
    service = CompletionService(config.mode, cassette, live, pricing, config.upstream, run_log, sessions)

    def model_names() -> list[str]:
        names = set(config.upstream.names())
        if cassette is not None:
            names.update(e.request.model for e in cassette.entries() if e.request.model)
        return sorted(names)

    def on_shutdown() -> None:
        snapshot = service.stats.snapshot()
        out(
            f"tauproxy serve: stopped after {snapshot['requests']} requests "
            f"({snapshot['hits']} replayed, {snapshot['live']} live, {snapshot['shared']} shared, "
            f"{snapshot['errors']} upstream errors)"
        )
        service.close()
        if run_log is not None:
            run_log.close()
        if config.mode is RecordMode.REWRITE and service.cache is not None:
            # The server's lifetime is the session `rewrite` delimits: its calls are what stays.
            removed = service.cache.keep_only_this_session()
            kept = len(service.cache.recorded_keys)
            out(f"tauproxy serve: rewrite kept the {kept} calls this server recorded, removed {removed}")
        if cassette is not None:
            cassette.close()  # its index takes the calls it holds (store/index_pending.py); a late write reopens it

    describe = {
        "mode": config.mode.value,
        "cassette": str(cassette.directory) if cassette is not None else None,
    }
    app = ServeApp(
        service,
        auth_token=config.auth_token,
        max_body_bytes=config.max_body_bytes,
        read_timeout_s=config.read_timeout_s,
        model_names=model_names,
        describe=describe,
        on_shutdown=on_shutdown,
    )
    return Built(app, service, cassette, run_log, config.read_timeout_s)


class _Server(uvicorn.Server):
    """uvicorn's server, told to announce readiness and to exit 0 after a signal-initiated drain."""

    def __init__(
        self, config: uvicorn.Config, ready_line: str, out: Callable[[str], None], on_stop: Callable[[], None]
    ) -> None:
        super().__init__(config)
        self._ready_line = ready_line
        self._out = out
        self._on_stop = on_stop

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self._out(self._ready_line)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._on_stop()  # calls in flight get the drain, then a 503 (app.py)
        # uvicorn re-raises the signal once drained, so the process would die of SIGTERM (or raise
        # KeyboardInterrupt) after a clean stop; for this command a signal IS the normal way to stop.
        captured = getattr(self, "_captured_signals", None)
        if isinstance(captured, list):
            captured.clear()


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must say TCP: asyncio only switches Nagle off (TCP_NODELAY) on accepted sockets whose
    # proto is IPPROTO_TCP, and with Nagle on every answer waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except (OSError, OverflowError) as exc:  # OverflowError: a port outside 0-65535
        sock.close()
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(f"cannot listen on {host}:{port}: {reason}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, host: str) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/v1"


def _print(line: str) -> None:
    print(line, flush=True)


def serve(config: ServeConfig, out: Callable[[str], None] = _print) -> None:
    """Run until SIGTERM/SIGINT (or `should_exit`); returns once in-flight requests are answered."""
    built = build(config, out)
    if config.goes_live:
        # Import litellm now. It takes seconds; done before the ready line so that "ready" means a
        # first live call is as fast as any other (a client with a 5 s timeout would fail otherwise).
        load_litellm()
    sock = bind(config.host, config.port)
    where = str(built.cassette.directory) if built.cassette is not None else "no cassette"
    ready = f"tauproxy serve: {url_of(sock, config.host)} ({config.mode.value}, {where})"
    server = make_server(built, ready, out)
    # Everything loaded so far (litellm's hundreds of thousands of objects, uvicorn, the index) lives
    # as long as the server: frozen, the collector never scans it again, so a full collection while
    # serving costs what the calls in flight allocated, not a pause of the whole heap.
    gc.collect()
    gc.freeze()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        sys.stdout.flush()


def event_loop() -> Literal["uvloop", "asyncio"]:
    """uvicorn's `loop` setting: uvloop where it is installed (a dependency except on Windows), asyncio's
    loop otherwise. uvloop takes a quarter to a third less CPU per call (docs/serve.md), and CPU is what
    bounds serve at high concurrency."""
    try:
        import uvloop  # noqa: F401 - only whether it can be loaded
    except ImportError:
        return "asyncio"
    return "uvloop"


def make_server(built: Built, ready_line: str, out: Callable[[str], None] = _print) -> uvicorn.Server:
    uv_config = uvicorn.Config(
        built.app.starlette(),
        loop=event_loop(),
        http=protocol_with(built.read_timeout_s),
        log_level="warning",
        access_log=False,  # never log request lines: scope headers and paths are the client's business
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        lifespan="on",
        server_header=False,
        date_header=False,
        # Nothing in serve reads the client's address or scheme, so X-Forwarded-* need no rewriting
        # of every request's scope (uvicorn's default wraps the app in a middleware that does).
        proxy_headers=False,
    )
    return _Server(uv_config, ready_line, out, built.app.stop_soon)
