"""The HTML report in a real browser: headless Chromium renders the charts, runs the page's script
without a console error, and takes screenshots (plain, with the failures filter from the URL, and
opened at anchors far down the page, which once came out blank). The DOM the browser dumps after the
script ran shows the filter, the search, the anchors and the raw call bodies at work.

Chromium prints page console messages to stderr under --enable-logging=stderr as lines like
`[...:INFO:CONSOLE:1] "Uncaught Error: boom", source: file:///... (1)`, at INFO level whatever the
console method, so any CONSOLE line counts as a problem (the report logs nothing on purpose). The
first test proves the detector fires on a page that throws.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
from html import unescape
from pathlib import Path

import pytest
from conftest import REPO_ROOT, invoke_cli
from report_runs import mock_run, results_json

from tauproxy.data_model.result import Results, SimulationRun
from tauproxy.reports.metrics import is_success

pytestmark = pytest.mark.slow

CHROMIUM = next(
    (
        c
        for c in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser"))
        if c and Path(c).exists()
    ),
    None,
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--enable-logging=stderr",
    "--v=0",
)
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
        return subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args, url],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"chromium did not finish rendering {url} within 120 s")


def console_problems(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if _CONSOLE.search(line)]


def test_the_console_detector_catches_a_page_that_throws(tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><p>x</p><script>throw new Error('deliberate boom');</script>")
    good = tmp_path / "good.html"
    good.write_text("<!DOCTYPE html><p id='x'>x</p><script>document.getElementById('x').textContent='ok'</script>")

    thrown = chromium(tmp_path / "profile-bad", bad.as_uri(), "--dump-dom")
    problems = console_problems(thrown.stderr)
    assert any("deliberate boom" in line and "Uncaught" in line for line in problems), thrown.stderr

    clean = chromium(tmp_path / "profile-good", good.as_uri(), "--dump-dom")
    assert console_problems(clean.stderr) == [] and ">ok</p>" in clean.stdout


DEMO_PRICES = REPO_ROOT / "cassettes" / "demo-prices.json"
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Results]:
    """One priced mock run (so the cost charts are drawn) whose slips give both passes and failures,
    recorded into a cassette (so each call has its raw bodies)."""
    tmp = tmp_path_factory.mktemp("html")
    extra = ("--prices", str(DEMO_PRICES), "--cassette", str(tmp / "cassette"))
    run_dir = mock_run(tmp / "run", trials=3, seed=2, extra=extra)
    page = tmp / "report.html"
    invoke_cli("report", str(run_dir), "--html", str(page))
    return page, Results.model_validate(results_json(run_dir))


def dom_of(tmp_path: Path, url: str) -> str:
    dumped = chromium(tmp_path / "profile-dom", url, "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    assert console_problems(dumped.stderr) == []
    return dumped.stdout


def sections(dom: str) -> dict[str, str]:
    """Trajectory id -> its opening tag, as the browser serialised it after the script ran."""
    return {m.group(1): m.group(0) for m in re.finditer(r'<section class="trajectory" id="([^"]+)"[^>]*>', dom)}


def anchor(run: SimulationRun) -> str:
    return f"trial-{run.task_id}-{run.trial}"


def screenshot(tmp_path: Path, name: str, url: str) -> Path:
    shot = tmp_path / f"{name}.png"
    taken = chromium(tmp_path / f"profile-{name}", url, f"--screenshot={shot}", "--window-size=1280,2000")
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    assert console_problems(taken.stderr) == []
    data = shot.read_bytes()
    assert data[:8] == PNG and len(data) > 20_000, "a blank page compresses to a few kB"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    assert (width, height) == (1280, 2000)
    return shot


def test_report_renders_charts_and_runs_its_script_cleanly(report: tuple[Path, Results], tmp_path: Path) -> None:
    page, results = report
    dom = dom_of(tmp_path, page.as_uri())
    for chart in CHART_IDS:
        assert f'id="{chart}"' in dom, chart
    assert '<details class="trial" open' not in dom, "nothing opens without an anchor"
    assert '<div id="controls">' in dom, "the script shows the controls"
    assert not any("hidden" in tag for tag in sections(dom).values()), "no filter: every trajectory shows"
    assert len(sections(dom)) == len(results.simulations)
    screenshot(tmp_path, "report", page.as_uri())


def test_an_anchor_opens_exactly_its_trajectory(report: tuple[Path, Results], tmp_path: Path) -> None:
    page, results = report
    target = results.simulations[4]
    dom = dom_of(tmp_path, f"{page.as_uri()}#{anchor(target)}")
    assert dom.count('<details class="trial" open') == 1
    opened = dom.split(f'id="{anchor(target)}"')[1][:300]
    assert '<details class="trial" open' in opened


def test_failures_filter_from_the_url_hides_passes_in_trajectories_and_grid(
    report: tuple[Path, Results], tmp_path: Path
) -> None:
    page, results = report
    failed = {anchor(s) for s in results.simulations if not is_success(s)}
    assert failed and len(failed) < len(results.simulations), "the slip model must both pass and fail"
    url = f"{page.as_uri()}?only=failures"
    dom = dom_of(tmp_path, url)
    shown = {name for name, tag in sections(dom).items() if "hidden" not in tag}
    assert shown == failed
    assert f"{len(failed)} of {len(results.simulations)} trajectories shown" in dom
    rows = re.findall(r'<tr data-outcome="(\w+)"( hidden="")?>', dom)
    assert rows and all(bool(hidden) == (outcome == "pass") for outcome, hidden in rows)
    # A link to a passing trial still opens it under the filter: the anchor wins.
    passing = next(s for s in results.simulations if is_success(s))
    pinned = sections(dom_of(tmp_path, f"{url}#{anchor(passing)}"))
    assert "hidden" not in pinned[anchor(passing)]
    screenshot(tmp_path, "failures", url)


def test_search_keeps_the_trajectories_that_contain_the_text(report: tuple[Path, Results], tmp_path: Path) -> None:
    page, results = report
    # The text of each trajectory as the page holds it (what the script searches), and a word that
    # some trajectories contain and others do not.
    html = page.read_text()
    texts = {
        name: unescape(re.sub(r"<[^>]+>", "", chunk)).lower()
        for name, chunk in re.findall(r'<section class="trajectory" id="([^"]+)".*?>(.*?)</section>', html, re.S)
    }
    assert len(texts) == len(results.simulations)
    word = next(
        w
        for text in texts.values()
        for w in sorted(set(re.findall(r"[a-z]{6,}", text)))
        if 0 < sum(w in other for other in texts.values()) < len(texts) / 2
    )
    expected = {name for name, text in texts.items() if word in text}
    dom = dom_of(tmp_path, f"{page.as_uri()}?q={word.upper()}")
    shown = {name for name, tag in sections(dom).items() if "hidden" not in tag}
    assert shown == expected, f"case-insensitive search for {word!r}"
    assert f"{len(shown)} of {len(results.simulations)} trajectories shown" in dom


def test_a_page_opened_at_an_anchor_far_down_shows_it(report: tuple[Path, Results], tmp_path: Path) -> None:
    """Headless Chromium draws a screenshot from the document's top whatever the window's scroll, so a
    page that scrolled the window to a trajectory came out blank; the page scrolls in its own box."""
    page, results = report
    last = results.simulations[-1]
    shot = screenshot(tmp_path, "anchor", f"{page.as_uri()}#{anchor(last)}")
    assert shot.stat().st_size > 20_000
    screenshot(tmp_path, "grid", f"{page.as_uri()}#grid")


def test_a_call_anchor_opens_its_trial_and_fills_its_raw_bodies(report: tuple[Path, Results], tmp_path: Path) -> None:
    page, results = report
    target = results.simulations[1]
    call = target.calls[-1]
    call_anchor = f"{anchor(target)}/call-{call.index}"
    dom = dom_of(tmp_path, f"{page.as_uri()}#{call_anchor}")
    assert dom.count('<details class="trial" open') == 1
    opened = dom.split(f'id="{call_anchor}"')[1].split("</details></td></tr>")[0]
    new_messages, response = re.findall(r'<pre data-(?:request|value)="\d+"[^>]*>(.*?)</pre>', opened, re.S)
    assert json.loads(unescape(new_messages)) and json.loads(unescape(response))["choices"]
    assert opened.count('class="lazy"') == 1, "the whole request, folded inside, fills when it is opened"
    assert '"role": "assistant"' in unescape(opened) and '"choices": [' in unescape(opened)
    untouched = dom.split(f'id="{anchor(results.simulations[0])}"')[1].split('<section class="trajectory"')[0]
    assert 'class="lazy"' in untouched, "other trials fill in only when opened"
