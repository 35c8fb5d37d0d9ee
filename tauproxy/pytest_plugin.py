"""The pytest plugin (entry point `pytest11: tauproxy`): a test records its model calls, or a whole small
run, into a cassette beside the test file, and replays them strictly in CI.

    def test_the_oracle_solves_mock(tauproxy_run):
        report = tauproxy_run(domain="mock", agent="scripted/oracle", num_tasks=2, num_trials=2)
        assert report.pass_hat_k[2] == 1.0

Fixtures:

    tauproxy_record_mode  this test's record mode (a RecordMode; `once` already resolved)
    tauproxy_cassette     this test's cassette directory: <test dir>/cassettes/<module>/<test name>
    tauproxy_client       a ModelClient (tauproxy.proxy.client) answering through that cassette
    tauproxy_run          run(config=None, **run_config_fields) -> tauproxy.api.RunReport, bound to both
    tauproxy_intercept    a tauproxy.Intercept over both: .http_client(), .async_http_client(),
                          .base_url, for an agent that calls the openai or anthropic SDK itself
    tauproxy_sdk_env      that intercept, with OPENAI_BASE_URL and ANTHROPIC_BASE_URL pointing at its
                          local server for the test (and placeholder keys when none is set), so code
                          that builds its own SDK client records and replays unchanged
    tauproxy_upstream     where the intercept's live calls go: None (litellm's defaults by model name),
                          or the marker's `upstream=` map file; override it in a conftest.py

The record mode: `--tauproxy-record-mode MODE` wins, then the test's `@pytest.mark.tauproxy(record_mode=
...)`, then the default: `replay` when the CI environment variable is set (to anything but "", "0",
"false" or "no"), else `once`. `once` records a new test's cassette on its first run and replays it
strictly after that, so a changed request fails on a laptop as it will in CI instead of quietly paying
for a new call; re-record on purpose with `record` (everything), `auto` (only what is missing) or
`rewrite` (everything, and at the end the cassette holds exactly this test's calls: one the test no
longer makes is dropped; the fixtures' calls are collected by `_tauproxy_session`).

Strict replay (`replay`, or `once` over a recorded cassette): a miss fails the test with the miss diff
(what was asked, the nearest recorded call and what differs), and the test cannot connect to anything
but loopback, so a call that goes around the client fails instead of reaching a provider.

The marker also takes `cassette=PATH` (relative to the test file's directory), for tests that share one,
and `upstream=PATH`, an upstream map file as `tauproxy serve --upstream-map` reads it.

A live call through `tauproxy_client` to a provider with no key is one line ("no API key: set
OPENAI_API_KEY ..."), checked before the call instead of litellm's traceback.

Importing this module imports nothing of tauproxy: the plugin loads in every pytest session of an
environment where tauproxy is installed, and only tests that use it pay for the rest.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tauproxy.api import RunReport
    from tauproxy.data_model.call import ModelCall
    from tauproxy.data_model.completion import Completion
    from tauproxy.interception import Intercept, Upstream
    from tauproxy.proxy.client import ModelClient
    from tauproxy.proxy.modes import RecordMode
    from tauproxy.proxy.pricing import Pricing
    from tauproxy.proxy.transport import Transport
    from tauproxy.runner.config import RunConfig

OPTION = "--tauproxy-record-mode"
MARKER = "tauproxy"
CASSETTES_DIR = "cassettes"
# Values of CI that mean "not in CI" (CI=false is how some runners switch it off).
NOT_CI = frozenset({"", "0", "false", "no"})
# Characters a cassette directory name cannot hold on some file system (parametrize ids may carry them).
_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f]')
_MODE_KEY = pytest.StashKey["RecordMode"]()
# What the SDKs read for where to send calls, and the keys their constructors insist on.
BASE_URL_ENV = {"OPENAI_BASE_URL": "base_url", "ANTHROPIC_BASE_URL": "url"}
SDK_KEY_ENV = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
PLACEHOLDER_KEY = "tauproxy-placeholder-key"
REPLAY_MISS_PREFIX = "replay miss"  # how a miss report (tauproxy.errors.ReplayMiss) begins


class NetworkBlockedError(ConnectionError):
    """A test in strict replay tried to reach a non-loopback address.

    A ConnectionError (not a tauproxy error) because socket callers, the HTTP clients, expect one.
    """


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tauproxy", "tauproxy record/replay of model calls")
    group.addoption(
        OPTION,
        dest="tauproxy_record_mode",
        default=None,
        metavar="MODE",
        help="replay, record, auto, off, once or rewrite (vcrpy's none, all and new_episodes too); "
        "default: replay when the CI environment variable is set, else once",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(record_mode=None, cassette=None, upstream=None): this test's record mode (the {OPTION} "
        "flag wins), cassette directory and upstream map file (both relative to the test file's directory)",
    )
    value = config.getoption("tauproxy_record_mode", None)
    if value is not None:
        from tauproxy.errors import ConfigError
        from tauproxy.proxy.modes import parse_record_mode

        try:
            parse_record_mode(value)
        except ConfigError as exc:
            raise pytest.UsageError(f"{OPTION}: {exc}") from None


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in NOT_CI


@pytest.fixture
def tauproxy_cassette(request: pytest.FixtureRequest) -> Path:
    """<test dir>/cassettes/<module>/<test name>, as pytest-recording names its cassettes (a class's
    tests as Class.test); the marker's `cassette=` instead, relative to the test file's directory."""
    test_file = Path(request.node.path)
    given = _marker_option(request, "cassette")
    if given is not None:
        path = Path(str(given))
        return path if path.is_absolute() else test_file.parent / path
    name = request.node.name if request.cls is None else f"{request.cls.__name__}.{request.node.name}"
    return test_file.parent / CASSETTES_DIR / test_file.stem / _UNSAFE.sub("-", name)


@pytest.fixture
def tauproxy_record_mode(
    request: pytest.FixtureRequest, tauproxy_cassette: Path, monkeypatch: pytest.MonkeyPatch
) -> RecordMode:
    """The mode this test runs in, `once` resolved against its cassette; strict replay blocks the network."""
    from tauproxy.errors import ConfigError
    from tauproxy.proxy.modes import RecordMode, parse_record_mode
    from tauproxy.store.format import CALLS_FILE

    given = request.config.getoption("tauproxy_record_mode", None) or _marker_option(request, "record_mode")
    try:
        chosen = parse_record_mode(str(given)) if given is not None else None
    except ConfigError as exc:
        pytest.fail(f"@pytest.mark.{MARKER}: {exc}", pytrace=False)
    if chosen is None:
        chosen = RecordMode.REPLAY if in_ci() else RecordMode.ONCE
    calls = tauproxy_cassette / CALLS_FILE
    mode = chosen.resolved(cassette_is_empty=not calls.exists() or calls.stat().st_size == 0)
    request.node.stash[_MODE_KEY] = mode
    if mode is RecordMode.REPLAY:
        _block_network(monkeypatch)
    return mode


class _Session:
    """The calls one test recorded through any of its fixtures: what `rewrite` keeps when it ends."""

    def __init__(self, cassette: Path, mode: RecordMode) -> None:
        from tauproxy.proxy.modes import RecordMode

        self.cassette = cassette
        self.rewrite = mode is RecordMode.REWRITE
        # The mode each fixture's cassette layer works in: `rewrite` records, and prunes at the end.
        self.layer_mode = RecordMode.RECORD if self.rewrite else mode
        self.recorded: set[str] = set()

    def finish(self) -> None:
        from tauproxy.store.cassette import Cassette
        from tauproxy.store.format import CALLS_FILE
        from tauproxy.store.maintenance import prune

        if self.rewrite and (self.cassette / CALLS_FILE).exists():
            cassette = Cassette.open(self.cassette, create=False)
            try:
                prune(cassette, self.recorded)
            finally:
                cassette.close()


@pytest.fixture
def _tauproxy_session(tauproxy_cassette: Path, tauproxy_record_mode: RecordMode) -> Iterator[_Session]:
    """Torn down after every fixture that records (they all ask for it), so `rewrite` sees all their calls."""
    session = _Session(tauproxy_cassette, tauproxy_record_mode)
    yield session
    session.finish()


@pytest.fixture
def tauproxy_client(
    request: pytest.FixtureRequest, tauproxy_cassette: Path, _tauproxy_session: _Session
) -> Iterator[ModelClient]:
    """A model client whose calls replay from this test's cassette and record into it, as the mode says.
    Its calls are one trial, scoped by the test's name. A live call is checked for a key first."""
    from tauproxy.data_model.key import TrialScope
    from tauproxy.proxy.client import ModelClient
    from tauproxy.proxy.pricing import Pricing
    from tauproxy.proxy.recorder import CassetteTransport

    pricing = Pricing.from_file(None)
    transport = _transport(tauproxy_cassette, _tauproxy_session.layer_mode, pricing)
    try:
        yield ModelClient(transport, pricing, TrialScope(task_id=request.node.name, trial=0))
    finally:
        if isinstance(transport, CassetteTransport):
            _tauproxy_session.recorded |= transport.recorded_keys
        transport.close()


@pytest.fixture
def tauproxy_run(tauproxy_cassette: Path, _tauproxy_session: _Session) -> Callable[..., RunReport]:
    """`run(config)` or `run(**fields)` (tauproxy.api.run_config's arguments): the run, its cassette
    and record mode replaced by this test's, as tauproxy.api.run returns it."""
    from tauproxy.api import run, run_config
    from tauproxy.proxy.modes import RecordMode

    mode = _tauproxy_session.layer_mode

    def run_bound(config: RunConfig | None = None, **fields: Any) -> RunReport:
        if config is not None and fields:
            raise TypeError("tauproxy_run takes a RunConfig or run_config's fields, not both")
        if config is None:
            config = run_config(**fields)
        if mode is RecordMode.OFF:
            return run(config.model_copy(update={"cassette": None, "record_mode": RecordMode.OFF}))
        _require_recorded(tauproxy_cassette, mode)
        report = run(config.model_copy(update={"cassette": tauproxy_cassette, "record_mode": mode}))
        _tauproxy_session.recorded |= {c.sample_key for s in report.results.simulations for c in s.calls}
        return report

    return run_bound


@pytest.fixture
def tauproxy_upstream(request: pytest.FixtureRequest) -> Upstream | None:
    """Where `tauproxy_intercept`'s live calls go: the marker's `upstream=` file (relative to the test
    file's directory), else None: litellm's defaults by model name, keys from the environment. Override
    it in a conftest.py to return a map ({name: {model, api_base, api_key_env}}) or a file."""
    given = _marker_option(request, "upstream")
    if given is None:
        return None
    path = Path(str(given))
    return path if path.is_absolute() else Path(request.node.path).parent / path


@pytest.fixture
def tauproxy_intercept(
    tauproxy_cassette: Path, _tauproxy_session: _Session, tauproxy_upstream: Upstream | None
) -> Iterator[Intercept]:
    """An intercept (tauproxy.intercept) over this test's cassette and record mode: hand its
    `http_client()` to `openai.OpenAI(...)` or `anthropic.Anthropic(...)`, or use its `base_url`."""
    from tauproxy.interception import intercept
    from tauproxy.proxy.modes import RecordMode

    mode = _tauproxy_session.layer_mode
    _require_recorded(tauproxy_cassette, mode)
    with intercept(tauproxy_cassette if mode is not RecordMode.OFF else None, mode, upstream=tauproxy_upstream) as tp:
        yield tp
        _tauproxy_session.recorded |= tp.recorded_keys


@pytest.fixture
def tauproxy_sdk_env(tauproxy_intercept: Intercept, monkeypatch: pytest.MonkeyPatch) -> Intercept:
    """OPENAI_BASE_URL and ANTHROPIC_BASE_URL point at the intercept's local server for this test, and
    OPENAI_API_KEY / ANTHROPIC_API_KEY hold a placeholder when unset (the SDKs refuse to start without
    one; the upstream's key is the environment's, never a client's): code that builds its own client
    records and replays with no change."""
    for name, attribute in BASE_URL_ENV.items():
        monkeypatch.setenv(name, getattr(tauproxy_intercept, attribute))
    for name in SDK_KEY_ENV:
        if not os.environ.get(name):
            monkeypatch.setenv(name, PLACEHOLDER_KEY)
    return tauproxy_intercept


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A strict-replay miss fails the test with the miss diff alone: the traceback through the engine
    (or through an SDK, which raised the intercept's 404 as its own error) says nothing the diff does not."""
    report = yield
    mode = item.stash.get(_MODE_KEY, None)
    if mode is not None and call.excinfo is not None and report.failed:
        from tauproxy.errors import ConfigError, ReplayMissError

        cause = call.excinfo.value.__cause__
        miss = str(call.excinfo.value) if call.excinfo.errisinstance(ReplayMissError) else None
        miss = miss or _sdk_replay_miss(call.excinfo.value)
        if isinstance(cause, ConfigError) or call.excinfo.errisinstance(ConfigError):
            # A setting to fix (a key to set): its one line says which; the traceback adds nothing.
            report.longrepr = f"tauproxy: {cause if isinstance(cause, ConfigError) else call.excinfo.value}"
        elif miss is not None:
            report.longrepr = (
                f"tauproxy: strict replay ({mode.value}) met a call its cassette does not hold\n"
                f"{miss}\n"
                f"if the change is intended, record again: pytest {item.nodeid} {OPTION} record "
                "(or auto, to record only what is missing)"
            )
    return report


def _sdk_replay_miss(exc: BaseException) -> str | None:
    """The miss report in an SDK's error for the intercept's 404 (the openai and anthropic SDKs keep the
    error body they were sent as `body`), or None."""
    body = getattr(exc, "body", None)
    while isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message.startswith(REPLAY_MISS_PREFIX):
            return message
        body = body.get("error")
    return None


def _marker_option(request: pytest.FixtureRequest, name: str) -> object | None:
    marker = request.node.get_closest_marker(MARKER)
    return marker.kwargs.get(name) if marker is not None else None


def _require_recorded(cassette: Path, mode: RecordMode) -> None:
    from tauproxy.proxy.modes import RecordMode
    from tauproxy.store.format import CALLS_FILE

    if mode is RecordMode.REPLAY and not (cassette / CALLS_FILE).exists():
        pytest.fail(
            f"tauproxy: strict replay, but this test has no cassette at {cassette}; record it first "
            f"(pytest {OPTION} once, outside CI)",
            pytrace=False,
        )


def _transport(cassette: Path, mode: RecordMode, pricing: Pricing) -> Transport:
    """The provider router under this test's cassette layer (none when the mode is off)."""
    from tauproxy.proxy.modes import RecordMode
    from tauproxy.proxy.router import ProviderRouter

    if mode is RecordMode.OFF:
        return ProviderRouter({})
    _require_recorded(cassette, mode)
    from tauproxy.proxy.recorder import over_cassette

    return over_cassette(cassette, mode, _KeyChecked(ProviderRouter({})), pricing)


class _KeyChecked:
    """The live transport, but a provider model's first live call is checked first (proxy/preflight.py):
    without a key it is one ConfigError line naming the variable, not the provider SDK's traceback."""

    def __init__(self, inner: Transport) -> None:
        self._inner = inner
        self._checked: set[tuple[str, str | None]] = set()

    def complete(self, call: ModelCall) -> Completion:
        from tauproxy.errors import ConfigError
        from tauproxy.proxy.preflight import check_provider
        from tauproxy.proxy.router import LOCAL_PREFIX
        from tauproxy.proxy.scripted import PREFIX as SCRIPTED_PREFIX

        model = call.upstream_model or call.model
        checked = (model, call.connection.api_base)
        if not model.startswith((SCRIPTED_PREFIX, LOCAL_PREFIX)) and checked not in self._checked:
            hint = "set api_key in the ModelRequest's connection: tauproxy.api.ConnectionSettings"
            try:
                check_provider(model, call.connection, key_hint=hint)
            except ConfigError as exc:
                raise ConfigError(f"tauproxy_client, {call.role} call to {model}: {exc}") from None
            self._checked.add(checked)
        return self._inner.complete(call)

    def close(self) -> None:
        self._inner.close()


def _block_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """socket connects to anything but loopback (or a Unix socket) raise NetworkBlockedError."""
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def guarded_connect(self: socket.socket, address: Any) -> None:
        _refuse_remote(self, address)
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        _refuse_remote(self, address)
        return connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)


def _refuse_remote(sock: socket.socket, address: Any) -> None:
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or not isinstance(address, tuple):
        return
    host = str(address[0])
    if not _is_loopback(host):
        raise NetworkBlockedError(
            f"tauproxy: strict replay blocks the network; this test tried to connect to {host}:{address[1]} "
            "(only loopback is allowed)"
        )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:  # a host name: resolving it is already reaching out
        return False
