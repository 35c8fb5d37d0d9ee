"""One intercept: serve's app, configured as `tauproxy serve` configures it, answering in-process.

Built with serve's own `build` (serve/server.py) over one `CompletionService`, so every route serve
has answers here with the same keys, sample identity, role recognition, run log, pricing and miss
report, and the clients handed out share one cassette layer (one single flight, one session). Three
ways in, all to that one app:

    http_client()        a client for sync SDK clients (the app on a private loop thread), of httpx2
                         when it is installed, else of httpx (libraries.py)
    async_http_client()  an async one (the app on the caller's loop, via the library's ASGITransport)
    base_url / url       a uvicorn server on 127.0.0.1:<free port>, started on first use, for code
                         that builds its own client; stopped when the intercept closes

Live calls go where serve sends them: the upstream map (or litellm's defaults by model name), with
keys read from this process's environment at each call, never from a client's headers.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from tauproxy.errors import ConfigError
from tauproxy.interception.asgi_sync import LoopThread
from tauproxy.interception.libraries import http_library
from tauproxy.interception.local_server import LocalServer
from tauproxy.interception.routes import ApiRoutes
from tauproxy.interception.transports import AsyncInterceptTransport, InterceptState, InterceptTransport
from tauproxy.proxy.modes import RecordMode, parse_record_mode
from tauproxy.serve.config import ServeConfig, UpstreamMap, UpstreamRoute, load_upstream_map, parse_upstream_map
from tauproxy.serve.server import build
from tauproxy.serve.stats import ServeStats
from tauproxy.store.cassette import Cassette

__all__ = ["Intercept", "Upstream", "intercept"]

# Where live calls go: an upstream map, its file (YAML or JSON, as `serve --upstream-map` reads), or
# its routes by model name.
Upstream = UpstreamMap | Path | str | Mapping[str, UpstreamRoute | Mapping[str, Any]]


def intercept(
    cassette: Path | str | None,
    mode: RecordMode | str = RecordMode.AUTO,
    *,
    upstream: Upstream | None = None,
    prices: Path | str | None = None,
    run_log: Path | str | None = None,
) -> Intercept:
    """An intercept over `cassette` in `mode` (any record mode, vcrpy's names too; `once` is decided
    now, against the cassette as it is). Use it as a context manager; it closes everything on exit."""
    return Intercept(cassette, mode, upstream=upstream, prices=prices, run_log=run_log)


class Intercept:
    """serve's app in-process: httpx clients and a local base_url answering through one cassette."""

    def __init__(
        self,
        cassette: Path | str | None,
        mode: RecordMode | str = RecordMode.AUTO,
        *,
        upstream: Upstream | None = None,
        prices: Path | str | None = None,
        run_log: Path | str | None = None,
    ) -> None:
        self.mode = _resolved(mode if isinstance(mode, RecordMode) else parse_record_mode(mode), cassette)
        config = ServeConfig(
            cassette=Path(cassette) if cassette is not None and self.mode is not RecordMode.OFF else None,
            mode=self.mode,
            upstream=_upstream_map(upstream),
            run_log=Path(run_log) if run_log is not None else None,
            prices=Path(prices) if prices is not None else None,
        )
        self._built = build(config, out=_quiet)
        self._app = self._built.app.starlette()
        self._routes = ApiRoutes(self._app)
        self._state = InterceptState()
        self._lock = threading.Lock()
        self._loop: LoopThread | None = None
        self._server: LocalServer | None = None

    @property
    def cassette(self) -> Cassette | None:
        return self._built.cassette

    @property
    def stats(self) -> ServeStats:
        """Hits, misses, live calls, shared and errors, per model, as serve's /stats counts them."""
        return self._built.service.stats

    @property
    def recorded_keys(self) -> set[str]:
        """The sample keys this intercept recorded (what `rewrite` keeps)."""
        cache = self._built.service.cache
        return set(cache.recorded_keys) if cache is not None else set()

    def http_client(self, library: str | None = None, **options: Any) -> Any:
        """A new sync client answering through the intercept: an `httpx2.Client` when httpx2 is
        installed (the anthropic SDK takes nothing else; the openai SDK takes either), else an
        `httpx.Client`; `library="httpx"` or `"httpx2"` chooses. `options` go to the Client."""
        http = http_library(library)
        return http.Client(transport=self.transport(library), **options)

    def async_http_client(self, library: str | None = None, **options: Any) -> Any:
        """A new async client answering through the intercept (`httpx2.AsyncClient` or
        `httpx.AsyncClient`, chosen as `http_client` chooses)."""
        http = http_library(library)
        return http.AsyncClient(transport=self.async_transport(library), **options)

    def transport(self, library: str | None = None) -> InterceptTransport:
        """The sync transport, for a Client of that library built with options of its own."""
        self._state.check()
        return InterceptTransport(http_library(library), self._app, self._loop_thread(), self._routes, self._state)

    def async_transport(self, library: str | None = None) -> AsyncInterceptTransport:
        self._state.check()
        return AsyncInterceptTransport(http_library(library), self._app, self._routes, self._state)

    @property
    def url(self) -> str:
        """http://127.0.0.1:PORT of the local server (started now if it is not running): an Anthropic
        SDK's base_url, or ANTHROPIC_BASE_URL."""
        self._state.check()
        with self._lock:
            if self._server is None:
                self._server = LocalServer(self._app, self._built.read_timeout_s)
            return self._server.url

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:PORT/v1: an OpenAI SDK's base_url, or OPENAI_BASE_URL (serve's ready line)."""
        return f"{self.url}/v1"

    def close(self) -> None:
        """Stop the local server and the loop thread; under `rewrite`, keep only this intercept's
        calls in the cassette; close the cassette, the live transport and the run log. Idempotent."""
        with self._lock:
            if self._state.closed:
                return
            self._state.closed = True
            server, loop = self._server, self._loop
        try:
            if server is not None:
                server.stop()
            if loop is not None:
                loop.close()
            cache = self._built.service.cache
            if cache is not None and self.mode is RecordMode.REWRITE:
                cache.keep_only_this_session()
        finally:
            self._built.service.close()
            if self._built.service.cache is not None:
                self._built.service.cache.close()
            elif self._built.cassette is not None:
                self._built.cassette.close()
            if self._built.run_log is not None:
                self._built.run_log.close()

    def __enter__(self) -> Intercept:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def _loop_thread(self) -> LoopThread:
        with self._lock:
            if self._loop is None:
                self._loop = LoopThread("tauproxy-intercept-loop")
            return self._loop


def _resolved(mode: RecordMode, cassette: Path | str | None) -> RecordMode:
    if mode is RecordMode.OFF:
        return mode
    if cassette is None:
        raise ConfigError(
            f"tauproxy intercept: mode {mode.value} needs a cassette (or mode='off', which records nothing)"
        )
    if mode is RecordMode.ONCE:
        # Decided once, now: an intercept that flipped to replay midway would surprise its clients.
        opened = Cassette.open(Path(cassette))
        try:
            return mode.resolved(opened.is_empty())
        finally:
            opened.close()
    return mode


def _upstream_map(upstream: Upstream | None) -> UpstreamMap:
    if upstream is None:
        return UpstreamMap({})
    if isinstance(upstream, UpstreamMap):
        return upstream
    if isinstance(upstream, Path | str):
        return load_upstream_map(Path(upstream))
    return parse_upstream_map(upstream, "tauproxy intercept upstream")


def _quiet(line: str) -> None:
    """serve prints its lines; an intercept lives inside someone else's program and says nothing."""
