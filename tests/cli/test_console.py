"""The console script's exit (tauproxy_cli/console.py): out without the interpreter's teardown, losing
nothing of what an ordinary exit would do; and its start-up, with the collector paused. Each case is a
process: leaving it, or starting it, is the point."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def leaving(body: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = "import atexit, sys, threading, time\nfrom tauproxy_cli.console import leave\n" + body
    # Buffered streams, as a user's are: PYTHONUNBUFFERED would hide a flush that leave() forgot.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"} | {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, env=env, timeout=60
    )


def test_the_exit_code_atexit_handlers_and_buffered_output_all_arrive(tmp_path: Path) -> None:
    done = leaving(
        "atexit.register(lambda: open(sys.argv[1] + '/atexit', 'w').write('ran'))\n"
        "sys.stdout.write('x' * 1000 + 'end')  # held in the buffer: a pipe is not a terminal\n"
        "sys.stderr.write('last words')\n"
        "leave(3)\n"
        "raise AssertionError('leave returned')\n",
        tmp_path,
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout == "x" * 1000 + "end"
    assert done.stderr == "last words"
    assert (tmp_path / "atexit").read_text() == "ran"


def test_a_thread_still_running_is_waited_for_as_an_ordinary_exit_does(tmp_path: Path) -> None:
    done = leaving(
        "def late():\n"
        "    time.sleep(0.3)\n"
        "    open(sys.argv[1] + '/thread', 'w').write('finished')\n"
        "threading.Thread(target=late).start()\n"
        "leave(0)\n",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "thread").read_text() == "finished"


@pytest.mark.parametrize(("code", "expected"), [("None", 0), ("True", 1), ("'a message'", 1)])
def test_the_codes_systemexit_takes(tmp_path: Path, code: str, expected: int) -> None:
    done = leaving(f"leave({code})\n", tmp_path)
    assert done.returncode == expected
    assert done.stderr == ("a message\n" if code == "'a message'" else "")


def test_the_console_script_leaves_with_the_commands_code_and_output(tmp_path: Path) -> None:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    missing = subprocess.run(
        [sys.executable, "-m", "tauproxy_cli", "report", str(tmp_path / "absent")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert missing.returncode == 2
    assert missing.stderr.strip().endswith("no such file") and "Traceback" not in missing.stderr
    version = subprocess.run(
        [sys.executable, "-m", "tauproxy_cli", "--version"], capture_output=True, text=True, env=env, timeout=120
    )
    assert version.returncode == 0 and version.stdout.startswith("tauproxy ")


def test_the_cli_starts_a_command_with_no_collection_and_the_collector_runs_again_after() -> None:
    """What the CLI loads before a command's first real work (its modules, the command, typer's option
    checkers, run's config) lives as long as the process: the collector is paused while it loads
    (runner/collector.py), so no collection runs from the CLI's import to `run` refusing its flags;
    afterwards it is on, with nothing left frozen."""
    probe = (
        "import gc, sys\n"
        "n = [0]\n"
        "def count(phase, info):\n"
        "    n[0] += phase == 'start' and 'tauproxy_cli.main' in sys.modules\n"
        "gc.callbacks.append(count)\n"
        "import tauproxy_cli.console\n"
        "sys.argv = ['tauproxy', 'run', '--domain', 'airline', '--num-tasks', '1']\n"
        "try:\n"
        "    tauproxy_cli.console.main()\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "gc.callbacks.remove(count)\n"
        "print(code, n[0], gc.isenabled(), gc.get_freeze_count())\n"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert "no agent model" in done.stderr
    assert done.stdout.split() == ["2", "0", "True", "0"]
