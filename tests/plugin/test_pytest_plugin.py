"""The pytest plugin, driven by pytester: a test file records its cassette, replays it strictly with CI
set, and a changed request fails with the miss diff; the client fixture, cassette names, the marker,
the network block and the entry point."""

from __future__ import annotations

import importlib.metadata
import re
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

RUN_TEST = """
import os

def test_mock_run(tauproxy_run, tauproxy_record_mode):
    report = tauproxy_run(domain="mock", agent=os.environ.get("AGENT", "scripted/oracle?error_rate=0.3"),
                          num_tasks=2, num_trials=2, seed=4)
    calls = report.summary.calls
    print(f"MODE={tauproxy_record_mode.value} LIVE={calls.live} REPLAYED={calls.replayed}")
    assert report.summary.num_tasks == 2 and len(report.rows) == 4
"""


def counts(output: str) -> tuple[str, int, int]:
    found = re.search(r"MODE=(\w+) LIVE=(\d+) REPLAYED=(\d+)", output)
    assert found, output
    return found.group(1), int(found.group(2)), int(found.group(3))


@pytest.fixture(autouse=True)
def _preloaded() -> None:
    """pytester's in-process runs drop the modules they imported when they end, and a C extension
    (numpy's) cannot load twice in one process: import them here, once, before any inner run."""
    importlib.import_module("numpy")
    importlib.import_module("tauproxy.api")


@pytest.fixture
def local(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Not in CI, whatever the environment running these tests says."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("AGENT", raising=False)
    return monkeypatch


def test_record_then_strict_replay_in_ci_then_a_change_fails_with_the_diff(
    pytester: pytest.Pytester, local: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_agent=RUN_TEST)
    cassette = pytester.path / "cassettes" / "test_agent" / "test_mock_run" / "calls.jsonl"

    first = pytester.runpytest("-s")  # default outside CI: once, so an empty cassette records
    first.assert_outcomes(passed=1)
    mode, live, replayed = counts(first.stdout.str())
    assert (mode, replayed) == ("record", 0) and live > 0
    recorded = cassette.read_bytes()

    local.setenv("CI", "true")
    again = pytester.runpytest("-s")
    again.assert_outcomes(passed=1)
    assert counts(again.stdout.str()) == ("replay", 0, live)
    assert cassette.read_bytes() == recorded, "a replay writes nothing"

    local.setenv("AGENT", "scripted/oracle")  # the agent changed: its first request is new
    changed = pytester.runpytest()
    changed.assert_outcomes(failed=1)
    out = changed.stdout.str()
    assert "strict replay (replay) met a call its cassette does not hold" in out
    assert "replay miss: task" in out and "nearest recorded call" in out
    assert "--tauproxy-record-mode record" in out
    assert "tauproxy_run(domain=" not in out, "the miss diff alone, not the traceback through the engine"

    local.delenv("CI")  # once over a recorded cassette replays strictly too
    counts_before = cassette.read_bytes()
    pytester.runpytest().assert_outcomes(failed=1)
    assert cassette.read_bytes() == counts_before

    grown = pytester.runpytest("-s", "--tauproxy-record-mode", "auto")  # record what is missing
    grown.assert_outcomes(passed=1)
    mode, live_new, _ = counts(grown.stdout.str())
    assert mode == "auto" and live_new > 0
    assert cassette.read_bytes().startswith(recorded) and len(cassette.read_bytes()) > len(recorded)


CLIENT_TEST = """
import os
import socket

import pytest

from tauproxy.data_model.call import ModelRequest
from tauproxy.data_model.message import Message


def ask(client):
    text = os.environ.get("ASK", "hello")
    response = client.complete(ModelRequest(model="scripted/silent", messages=[Message(role="user", content=text)]),
                               role="agent")
    print(f"SOURCE={client.records[-1].source} ANSWER={response.message.content!r}")


def test_client(tauproxy_client, tauproxy_cassette):
    ask(tauproxy_client)
    print(f"CASSETTE={tauproxy_cassette}")


@pytest.mark.parametrize("name", ["a/b"])
def test_param(tauproxy_cassette, name):
    print(f"CASSETTE={tauproxy_cassette}")


class TestGroup:
    def test_in_class(self, tauproxy_cassette):
        print(f"CASSETTE={tauproxy_cassette}")


@pytest.mark.tauproxy(record_mode="auto", cassette="cassettes/shared")
def test_marked(tauproxy_client, tauproxy_record_mode, tauproxy_cassette):
    ask(tauproxy_client)
    print(f"MARKED={tauproxy_record_mode.value} CASSETTE={tauproxy_cassette}")


def test_network(tauproxy_record_mode):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    with socket.create_connection(server.getsockname(), timeout=5):
        print("LOOPBACK=ok")
    server.close()
    remote = socket.socket()
    remote.settimeout(0.2)
    try:
        remote.connect(("192.0.2.1", 9))  # TEST-NET-1: documentation only, never answers
    except OSError as exc:  # refused or timed out where there is no route; blocked in strict replay
        print(f"REMOTE={type(exc).__name__}: {exc}")
    finally:
        remote.close()
"""


def test_client_fixture_cassette_names_marker_and_network_block(
    pytester: pytest.Pytester, local: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_client=CLIENT_TEST)
    root = pytester.path / "cassettes" / "test_client"

    first = pytester.runpytest("-s")
    first.assert_outcomes(passed=5)
    out = first.stdout.str()
    assert "SOURCE=live" in out and "REMOTE=" in out
    assert "REMOTE=NetworkBlockedError" not in out, "`once` recorded: nothing is blocked"
    shown = set(re.findall(r"CASSETTE=(\S+)", out))
    assert shown == {
        str(root / "test_client"),
        str(root / "test_param[a-b]"),
        str(root / "TestGroup.test_in_class"),
        str(pytester.path / "cassettes" / "shared"),
    }
    assert (root / "test_client" / "calls.jsonl").stat().st_size > 0

    local.setenv("CI", "1")
    ci = pytester.runpytest("-s")
    ci.assert_outcomes(passed=5)
    out = ci.stdout.str()
    assert out.count("SOURCE=replay") == 2 and "SOURCE=live" not in out
    assert "MARKED=auto" in out, "the marker's record mode wins over CI's default"
    assert "LOOPBACK=ok" in out
    assert "REMOTE=NetworkBlockedError: tauproxy: strict replay blocks the network" in out

    flag = pytester.runpytest("-s", "-k", "marked", "--tauproxy-record-mode", "replay")
    flag.assert_outcomes(passed=1)
    assert "MARKED=replay" in flag.stdout.str(), "the flag wins over the marker"

    local.setenv("ASK", "something else")
    miss = pytester.runpytest("test_client.py::test_client")
    miss.assert_outcomes(failed=1)
    assert "replay miss: task test_client, trial 0" in miss.stdout.str()


def test_strict_replay_without_a_cassette_says_to_record_first(
    pytester: pytest.Pytester, local: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_new=RUN_TEST)
    local.setenv("CI", "true")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "has no cassette at" in out and "--tauproxy-record-mode once" in out
    assert not (pytester.path / "cassettes" / "test_new" / "test_mock_run").exists(), "replay creates nothing"


def test_off_runs_without_a_cassette(pytester: pytest.Pytester, local: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_off=RUN_TEST)
    result = pytester.runpytest("-s", "--tauproxy-record-mode", "off")
    result.assert_outcomes(passed=1)
    assert counts(result.stdout.str())[0] == "off"
    assert not (pytester.path / "cassettes").exists()


def test_a_bad_record_mode_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_any="def test_any():\n    pass\n")
    result = pytester.runpytest("--tauproxy-record-mode", "sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "unknown record mode 'sometimes'" in result.stderr.str()

    pytester.makepyfile(
        test_marked=(
            "import pytest\n\n@pytest.mark.tauproxy(record_mode='sometimes')\n"
            "def test_marked(tauproxy_record_mode):\n    pass\n"
        )
    )
    marked = pytester.runpytest("test_marked.py")
    marked.assert_outcomes(errors=1)
    assert "@pytest.mark.tauproxy: unknown record mode 'sometimes'" in marked.stdout.str()


def test_the_plugin_loads_through_its_entry_point(pytester: pytest.Pytester) -> None:
    (point,) = [p for p in importlib.metadata.entry_points(group="pytest11") if p.name == "tauproxy"]
    assert point.value == "tauproxy.pytest_plugin"
    pytester.makepyfile(test_uses="def test_uses(tauproxy_cassette):\n    assert tauproxy_cassette.name\n")
    # A fresh interpreter finds it by the entry point alone (no -p, no conftest) ...
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
    # ... and without the plugin the fixture does not exist.
    pytester.runpytest("-p", "no:tauproxy").assert_outcomes(errors=1)


def test_importing_the_plugin_imports_no_tauproxy_module() -> None:
    """It loads in every pytest session of an environment with tauproxy installed."""
    source = (Path(__file__).resolve().parents[2] / "tauproxy" / "pytest_plugin.py").read_text(encoding="utf-8")
    top_level = [line for line in source.splitlines() if re.match(r"(from|import) ", line)]
    assert top_level and not any("tauproxy" in line for line in top_level)


STUB_TEST = textwrap.dedent("""
    import json
    import os

    from tauproxy.api import LLMConfig

    def test_stub_agent(tauproxy_run):
        args = {"api_base": os.environ["STUB_URL"], "api_key": "sk-test-not-a-real-key", "num_retries": 0,
                **json.loads(os.environ.get("EXTRA_ARGS", "{}"))}
        report = tauproxy_run(domain="mock", agent=LLMConfig(model="openai/stub", args=args), num_tasks=1)
        calls = report.summary.calls
        print(f"MODE=x LIVE={calls.live} REPLAYED={calls.replayed}")
        assert report.summary.excluded_simulations == 0
""")


@pytest.mark.slow
def test_a_live_model_on_a_stub_upstream_records_replays_offline_and_misses(
    pytester: pytest.Pytester, local: pytest.MonkeyPatch, stub
) -> None:
    importlib.import_module("litellm")  # for the same reason as numpy (see _preloaded); slow, so here only
    pytester.makepyfile(test_stub=STUB_TEST)
    local.setenv("STUB_URL", stub.url)
    local.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    recorded = pytester.runpytest("-s", "--tauproxy-record-mode", "auto")
    recorded.assert_outcomes(passed=1)
    _, live, _ = counts(recorded.stdout.str())
    sent = len(stub.requests)
    assert sent > 0 and live >= sent, "every agent call reached the stub (the scripted user's calls are live too)"

    local.setenv("CI", "true")
    stub.stop()  # replay needs no upstream at all
    replayed = pytester.runpytest("-s")
    replayed.assert_outcomes(passed=1)
    assert counts(replayed.stdout.str())[1:] == (0, live)

    local.setenv("EXTRA_ARGS", '{"temperature": 0.5}')
    changed = pytester.runpytest()
    changed.assert_outcomes(failed=1)
    assert "temperature" in changed.stdout.str() and "replay miss" in changed.stdout.str()
