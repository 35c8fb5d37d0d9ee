"""`tauproxy serve`: an OpenAI-compatible record/replay endpoint for any harness."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Annotated

import typer

# ServeConfig's defaults (tauproxy/serve/config.py, identity.py), written out so that `--help` does not
# import the server's models; tests/cli/test_serve_options.py keeps them equal.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
DEFAULT_READ_TIMEOUT_S = 30.0
DEFAULT_SESSION_IDLE_S = 30.0

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def serve_command(
    cassette: Annotated[
        Path | None, typer.Option(help="Cassette directory (required unless --record-mode off).")
    ] = None,
    record_mode: Annotated[
        str, typer.Option(help="auto | replay | record | off | once | rewrite (vcrpy names too).")
    ] = "auto",
    host: Annotated[str, typer.Option(help="Address to bind; loopback unless you mean to share it.")] = DEFAULT_HOST,
    port: Annotated[
        int, typer.Option(help="Port to bind; 0 picks a free one (the ready line names it).")
    ] = DEFAULT_PORT,
    upstream_map: Annotated[
        Path | None,
        typer.Option(help="YAML/JSON: {name: {model, api_base, api_key_env, timeout, num_retries}}."),
    ] = None,
    auth_token: Annotated[
        str | None,
        typer.Option(envvar="TAUPROXY_SERVE_TOKEN", help="Require 'Authorization: Bearer TOKEN' from clients."),
    ] = None,
    max_body_bytes: Annotated[int, typer.Option(help="Larger request bodies get 413.")] = DEFAULT_MAX_BODY_BYTES,
    read_timeout_s: Annotated[
        float,
        typer.Option(
            "--read-timeout", help="Seconds a client has to send a request's headers, then its body (else 408)."
        ),
    ] = DEFAULT_READ_TIMEOUT_S,
    run_log: Annotated[Path | None, typer.Option(help="Append one JSON line per call to this file.")] = None,
    prices: Annotated[Path | None, typer.Option(help="Prices file overriding litellm's price map.")] = None,
    session_idle_s: Annotated[
        float,
        typer.Option(
            "--session-idle",
            help="Seconds with nothing in flight after which a request begins a new session (unseeded "
            "requests count from 0 again); 0: only a restart or POST /v1/tauproxy/session does.",
        ),
    ] = DEFAULT_SESSION_IDLE_S,
) -> None:
    """Serve OpenAI chat completions, the Responses API and Anthropic's Messages API from a cassette;
    misses go live and are recorded (mode permitting)."""
    from tauproxy.errors import ConfigError
    from tauproxy.proxy.modes import RecordMode, parse_record_mode
    from tauproxy.serve.config import ServeConfig, load_upstream_map
    from tauproxy.store.cassette import Cassette
    from tauproxy_cli.output import warn

    check_host_and_token(host, auth_token)
    mode = parse_record_mode(record_mode)
    if mode == RecordMode.ONCE:
        if cassette is None:
            raise ConfigError("--cassette is required with --record-mode once")
        # Decided once at start: a server that flipped to replay mid-run would surprise its clients.
        mode = RecordMode.RECORD if Cassette.open(cassette).is_empty() else RecordMode.REPLAY
    config = ServeConfig(
        cassette=cassette if mode != RecordMode.OFF else None,
        mode=mode,
        host=host,
        port=port,
        upstream=load_upstream_map(upstream_map),
        auth_token=auth_token,
        max_body_bytes=max_body_bytes,
        read_timeout_s=read_timeout_s,
        run_log=run_log,
        prices=prices,
        session_idle_s=session_idle_s,
    )
    if config.goes_live:
        for name in config.upstream.missing_key_envs():
            warn(f"upstream key variable {name} is not set; calls routed through it will fail")
    if host not in LOOPBACK and auth_token is None:
        warn(f"serving on {host} without --auth-token: anyone who can reach it can spend your keys")
    from tauproxy.serve.server import serve  # the HTTP stack: imported once the flags are known good

    serve(config)
    # Stopped, and every answered call is on disk: the process ends now. Its final garbage collection
    # would scan every object litellm loaded (4 s on a loaded 2-core box, 0.2 s frozen), which would
    # hold a SIGTERM'd server past its promised 5 s.
    gc.freeze()


def check_host_and_token(host: str, auth_token: str | None) -> None:
    """An empty host would bind every interface; a host or token that cannot be encoded (a byte that
    was not UTF-8, a token outside printable ASCII, which no HTTP header carries) would fail later."""
    from tauproxy.errors import ConfigError

    if not host.strip():
        raise ConfigError("--host is empty (it would bind every interface); give an address, e.g. 127.0.0.1")
    try:
        host.encode("idna")
    except UnicodeError:
        raise ConfigError(f"--host {host!r} is not a host name or address") from None
    if auth_token and not (auth_token.isascii() and auth_token.isprintable() and " " not in auth_token):
        raise ConfigError("--auth-token must be printable ASCII without spaces: it travels in an HTTP header")


if __name__ == "__main__":  # `python -m tauproxy_cli.serve`, usable before the command is wired in main
    typer.run(serve_command)
