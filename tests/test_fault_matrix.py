"""The fault matrix: for each way the infrastructure fails, a run records nothing as a success, scores
no trial from it, says why in a clear line, exits with the documented code, and a rerun after the
fault is gone heals the run with only the missing calls sent.

The CLI runs in this process (`tauproxy_cli.main.main`), so litellm is imported once; the agent is
`openai/stub` over litellm and httpx against a real HTTP server on 127.0.0.1 (tests/fault_upstream.py).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import as_a_command_process
from fault_upstream import FAULTS, FaultUpstream

from tauproxy_cli import exit_codes

KEY = "sk-test-not-a-real-key-000"
pytestmark = pytest.mark.slow


def tauproxy(*args: str) -> tuple[int, str]:
    """Exit code and stderr of one `tauproxy` command, run in-process."""
    code, _, err = tauproxy_io(*args)
    return code, err


def tauproxy_io(*args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of one `tauproxy` command, run in-process."""
    from tauproxy_cli.main import main

    err, out = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["tauproxy", *args]
    code = 0
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out), as_a_command_process():
            main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = argv
    return code, out.getvalue(), err.getvalue()


def run_args(cassette: Path, save_to: Path, api_base: str, **llm: object) -> list[str]:
    llm_args = {"api_base": api_base, "api_key": KEY, "num_retries": 0, "timeout": 1, "temperature": 0, **llm}
    llm_args = {name: value for name, value in llm_args.items() if value is not None}
    return [
        "run",
        "--domain",
        "mock",
        "--num-tasks",
        "2",
        "--agent-llm",
        "openai/stub",
        "--agent-llm-args",
        json.dumps(llm_args),
        "--cassette",
        str(cassette),
        "--save-to",
        str(save_to),
    ]


def recorded_calls(cassette: Path) -> int:
    """Recorded calls of the agent's model (the scripted user's answers are recorded too, rightly)."""
    path = cassette / "calls.jsonl"
    if not path.exists():
        return 0
    lines = [json.loads(line) for line in path.read_bytes().split(b"\n") if b'"t":"call"' in line]
    return sum(1 for line in lines if line["request"]["model"] == "openai/stub")


def simulations(save_to: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (save_to / "simulations.jsonl").read_text().split("\n") if line.strip()]


@pytest.fixture(scope="module")
def upstream() -> Iterator[FaultUpstream]:
    with FaultUpstream() as server:
        yield server


def heal(upstream: FaultUpstream, args: list[str], cassette: Path, save_to: Path) -> None:
    """The same command, fault gone: every trial scores, each missing call is sent once, and a
    further rerun sends nothing."""
    upstream.set_fault(None)
    before_calls, before_sent = recorded_calls(cassette), upstream.request_count
    code, err = tauproxy(*args)
    assert code == exit_codes.OK, err
    sent = upstream.request_count - before_sent
    assert sent == recorded_calls(cassette) - before_calls and sent > 0
    results = json.loads((save_to / "results.json").read_text())
    assert {s["termination_reason"] for s in results["simulations"]} <= {"user_stop", "agent_stop"}
    again = upstream.request_count
    assert tauproxy(*args)[0] == exit_codes.OK
    assert upstream.request_count == again  # all finished: nothing more is sent


@pytest.mark.parametrize("fault", FAULTS)
def test_upstream_faults_are_excluded_and_heal(tmp_path: Path, upstream: FaultUpstream, fault: str) -> None:
    cassette, save_to = tmp_path / "cassette", tmp_path / "run"
    args = run_args(cassette, save_to, upstream.url)
    upstream.set_fault(fault)
    code, err = tauproxy(*args)
    assert code == exit_codes.NOTHING_SCORED, err
    assert "no trial could be scored" in err and "openai/stub" in err  # names the model and the cause
    assert "Traceback" not in err and KEY not in err
    assert recorded_calls(cassette) == 0  # nothing recorded as a success
    sims = simulations(save_to)
    assert len(sims) == 2 and all(s["termination_reason"] == "infrastructure_error" for s in sims)
    assert all(s["reward_info"] is None for s in sims)
    heal(upstream, args, cassette, save_to)


def test_a_streak_of_the_same_error_stops_the_run(tmp_path: Path, upstream: FaultUpstream) -> None:
    args = [*run_args(tmp_path / "c", tmp_path / "run", upstream.url), "--num-tasks", "6", "--max-infra-errors", "3"]
    upstream.set_fault("500")
    before = upstream.request_count
    code, err = tauproxy(*args)
    assert code == exit_codes.INFRASTRUCTURE_STOP, err
    assert "3 trials in a row" in err and "injected 500" in err
    assert upstream.request_count - before == 3  # stopped: the other 3 trials never went out
    heal(upstream, args, tmp_path / "c", tmp_path / "run")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("name", "change", "says"),
    [
        ("bad model name", {"model": "scripted/orcale"}, "unknown scripted model"),
        ("bad provider name", {"model": "gpt4.1"}, "provider/model"),
        ("missing key", {"api_key": None}, "no API key"),
        ("refused", {"api_base": "refused"}, "cannot reach"),
    ],
)
def test_misconfigurations_stop_before_any_trial(
    tmp_path: Path,
    upstream: FaultUpstream,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    change: dict[str, str | None],
    says: str,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cassette, save_to = tmp_path / "cassette", tmp_path / "run"
    api_base = f"http://127.0.0.1:{_closed_port()}/v1" if change.get("api_base") else upstream.url
    bad = run_args(cassette, save_to, api_base, api_key=KEY if "api_key" not in change else None)
    if "model" in change:
        bad[bad.index("openai/stub")] = str(change["model"])
    before = upstream.request_count
    code, err = tauproxy(*bad)
    assert code == exit_codes.MISCONFIGURED, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and says in errors[0] and "Traceback" not in err
    assert upstream.request_count == before and not (save_to / "simulations.jsonl").exists()
    heal(upstream, run_args(cassette, save_to, upstream.url), cassette, save_to)


def _can_mount() -> bool:
    return os.geteuid() == 0 and shutil.which("mount") is not None


@contextlib.contextmanager
def mounted(kind: str, target: Path, source: Path | None = None) -> Iterator[None]:
    target.mkdir(parents=True, exist_ok=True)
    if kind == "full":
        command = [["mount", "-t", "tmpfs", "-o", "size=48k", "tmpfs", str(target)]]
    else:  # a read-only view of `source`
        command = [["mount", "--bind", str(source), str(target)], ["mount", "-o", "remount,ro,bind", str(target)]]
    for step in command:
        if subprocess.run(step, capture_output=True).returncode != 0:
            pytest.skip(f"cannot {' '.join(step)} here")
    try:
        yield
    finally:
        subprocess.run(["umount", str(target)], capture_output=True)


@pytest.mark.skipif(not _can_mount(), reason="needs root to mount a tmpfs")
def test_a_full_disk_stops_the_run_and_loses_no_finished_call(tmp_path: Path, upstream: FaultUpstream) -> None:
    disk, save_to = tmp_path / "disk", tmp_path / "run"
    upstream.set_fault(None)
    with mounted("full", disk):
        args = run_args(disk / "cassette", save_to, upstream.url)
        args[args.index("2")] = "10"  # --num-tasks 10: more than 48 KB of calls
        before = upstream.request_count
        code, err = tauproxy(*args)
        assert code == exit_codes.INFRASTRUCTURE_STOP, err
        assert "not writable" in err and "No space left" in err
        sent = upstream.request_count - before
        kept = recorded_calls(disk / "cassette")
        shutil.copytree(disk / "cassette", tmp_path / "cassette")
    # Every call is on disk but at most the one whose write failed (it may be the scripted user's),
    # and the run stopped right there instead of paying for more.
    assert sent - 1 <= kept <= sent
    for sim in simulations(save_to):
        assert sim["termination_reason"] != "infrastructure_error"
    healed = run_args(tmp_path / "cassette", save_to, upstream.url)
    healed[healed.index("2")] = "10"
    heal(upstream, healed, tmp_path / "cassette", save_to)


@pytest.mark.skipif(not _can_mount(), reason="needs root to bind-mount read-only")
def test_a_read_only_cassette_is_refused_before_any_call(tmp_path: Path, upstream: FaultUpstream) -> None:
    upstream.set_fault(None)
    writable, view, save_to = tmp_path / "cassette", tmp_path / "ro", tmp_path / "run"
    writable.mkdir()
    (writable / "calls.jsonl").touch()
    with mounted("ro", view, writable):
        before = upstream.request_count
        code, err = tauproxy(*run_args(view, save_to, upstream.url))
        assert code == exit_codes.MISCONFIGURED, err
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "not writable" in errors[0] and "Read-only file system" in errors[0]
        assert " 0/2 " not in err  # refused before the progress bar of any trial
        assert upstream.request_count == before
    heal(upstream, run_args(writable, save_to, upstream.url), writable, save_to)


def test_header_values_echoed_in_errors_are_masked_everywhere(tmp_path: Path, upstream: FaultUpstream) -> None:
    secret = "team-secret-value-123"
    cassette, save_to = tmp_path / "cassette", tmp_path / "run"
    args = run_args(cassette, save_to, upstream.url, extra_headers={"X-Team-Token": secret})
    upstream.set_fault("echo_headers")
    code, err = tauproxy(*args)
    assert code == exit_codes.NOTHING_SCORED and "bad request with headers" in err
    html = tmp_path / "report.html"
    view = tauproxy_io("view", str(save_to), "--task", str(simulations(save_to)[0]["task_id"]), "--trial", "0")
    shown = [err, *tauproxy_io("report", str(save_to), "--html", str(html))[1:], *view[1:]]
    assert "bad request with headers" in view[1] + view[2]  # the error is shown, masked
    written = [path.read_text(errors="replace") for path in save_to.iterdir() if path.is_file()]
    written.append(html.read_text())
    for text in [*shown, *written]:
        assert secret not in text and KEY not in text
    assert any("***" in text for text in written)  # masked, not dropped
    upstream.set_fault(None)
