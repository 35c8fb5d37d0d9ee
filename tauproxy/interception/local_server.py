"""serve's app on 127.0.0.1, in a thread of this process: the `base_url` of an intercept, for code that
builds its own client (or reads OPENAI_BASE_URL / ANTHROPIC_BASE_URL) and cannot be handed one.

The socket is bound on a free port before uvicorn starts (as `tauproxy serve --port 0` does), so the
address is known at once; uvicorn runs in a daemon thread (it installs no signal handler off the main
thread) with no lifespan, since the intercept itself opens and closes what the app uses. Stopping
lets in-flight requests finish, as uvicorn does on a signal.
"""

from __future__ import annotations

import threading
import time

import uvicorn
from starlette.applications import Starlette

from tauproxy.errors import InfrastructureError
from tauproxy.proxy import own_servers
from tauproxy.serve.protocol import protocol_with
from tauproxy.serve.server import bind

__all__ = ["LocalServer"]

LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


class LocalServer:
    """One uvicorn server on 127.0.0.1:<free port>, running until `stop`."""

    def __init__(self, app: Starlette, read_timeout_s: float) -> None:
        self._socket = bind(LOOPBACK, 0)
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(
            app,
            http=protocol_with(read_timeout_s),
            log_level="warning",
            access_log=False,
            lifespan="off",
            server_header=False,
            date_header=False,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, name="tauproxy-intercept-server", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise InfrastructureError(f"tauproxy intercept: the local server on {LOOPBACK} did not start")
            time.sleep(0.005)
        own_servers.add(self.url)

    @property
    def url(self) -> str:
        """http://127.0.0.1:PORT, with no path."""
        return f"http://{LOOPBACK}:{self.port}"

    def stop(self) -> None:
        own_servers.remove(self.url)
        self._server.should_exit = True
        self._thread.join(STOP_TIMEOUT_S)
        self._socket.close()
