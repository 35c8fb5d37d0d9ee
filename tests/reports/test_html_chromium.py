"""The HTML report in a real browser: headless Chromium renders the charts, runs the page's script
without a console error, and takes a screenshot.

Chromium prints page console messages to stderr under --enable-logging=stderr as lines like
`[...:INFO:CONSOLE:1] "Uncaught Error: boom", source: file:///... (1)`, at INFO level whatever the
console method, so any CONSOLE line counts as a problem (the report logs nothing on purpose). The
first test proves the detector fires on a page that throws.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli
from report_runs import mock_run

pytestmark = pytest.mark.slow

CHROMIUM = next((c for c in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser"))
                 if c and Path(c).exists()), None)
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--enable-logging=stderr", "--v=0")
_CONSOLE = re.compile(r":CONSOLE[:(\]]|Uncaught")
CHART_IDS = ("chart-pass-hat-k", "chart-pass-hat-k-band", "chart-pass-hat-k-line", "chart-cost-by-role")


@pytest.fixture(autouse=True)
def needs_chromium() -> None:
    if CHROMIUM is None:
        # CI installs Chromium with the README's test command, so there a missing browser is a failure.
        if os.environ.get("CI") == "true":
            pytest.fail("CI must have headless Chromium (the README's test command installs it)")
        pytest.skip("headless Chromium not installed (apt-get install -y chromium chromium-driver)")


def chromium(profile: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    try:
        return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args, url],
                              capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"chromium did not finish rendering {url} within 120 s")


def console_problems(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if _CONSOLE.search(line)]


def test_the_console_detector_catches_a_page_that_throws(tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><p>x</p><script>throw new Error('deliberate boom');</script>")
    good = tmp_path / "good.html"
    good.write_text("<!DOCTYPE html><p id='x'>x</p>"
                    "<script>document.getElementById('x').textContent='ok'</script>")

    thrown = chromium(tmp_path / "profile-bad", bad.as_uri(), "--dump-dom")
    problems = console_problems(thrown.stderr)
    assert any("deliberate boom" in line and "Uncaught" in line for line in problems), thrown.stderr

    clean = chromium(tmp_path / "profile-good", good.as_uri(), "--dump-dom")
    assert console_problems(clean.stderr) == [] and ">ok</p>" in clean.stdout


def test_report_renders_charts_and_runs_its_script_cleanly(tmp_path: Path) -> None:
    run_dir = mock_run(tmp_path / "run", trials=3, seed=2)
    page = tmp_path / "report.html"
    run_cli("report", str(run_dir), "--html", str(page))

    # Opening a trajectory's anchor: the page's script must expand exactly that <details>.
    dumped = chromium(tmp_path / "profile-dom", page.as_uri() + "#traj-1", "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout
    for chart in CHART_IDS:
        assert f'id="{chart}"' in dom, chart
    assert dom.count("<details open") == 1
    opened = dom.split('id="traj-1"')[1][:200]
    assert "<details open" in opened
    assert console_problems(dumped.stderr) == []

    shot = tmp_path / "report.png"
    taken = chromium(tmp_path / "profile-shot", page.as_uri(), f"--screenshot={shot}",
                     "--window-size=1280,2000")
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert console_problems(taken.stderr) == []
