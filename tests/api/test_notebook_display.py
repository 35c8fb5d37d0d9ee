"""In a notebook, reports show as a short repr and a small HTML table (tauproxy/reports/notebook.py), pass^k
is keyed by int everywhere in Python, and `import tauproxy` gives the API without loading it up front."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import tauproxy
from tauproxy import api
from tauproxy.reports.summary import ReportSummary


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[api.RunReport, api.RunReport]:
    base = tmp_path_factory.mktemp("notebook")

    def one(agent: str, name: str) -> api.RunReport:
        config = api.run_config("mock", agent=agent, num_tasks=4, num_trials=3, seed=5, save_to=base / name)
        return api.run(config)

    return one("scripted/oracle", "good"), one("scripted/oracle?error_rate=0.5", "slips")


def test_a_run_report_shows_its_scores_and_costs_not_every_field(two_runs: tuple[api.RunReport, ...]) -> None:
    report = two_runs[1]
    text = repr(report)
    assert "\n" not in text and len(text) < 400, text
    for k, value in report.pass_hat_k.items():
        assert f"pass^{k} {value:.3f}" in text
    assert "12 new trials" in text and "live $0.0000" in text
    html = report._repr_html_()
    assert html.startswith("<table") and "grid" not in html
    for k, (low, high) in report.pass_hat_k_ci.items():
        assert f"pass^{k}" in html and f"{report.pass_hat_k[k]:.3f}" in html and f"{low:.3f} – {high:.3f}" in html
    assert "scripted/oracle?error_rate=0.5" in html and "12 live" not in html  # calls line is counted below
    assert f"{report.summary.calls.live} live" in html
    assert repr(report.summary).startswith("<ReportSummary mock: 4 tasks x 3 trials")


def test_runs_side_by_side_and_a_verdict_display_what_decides(two_runs: tuple[api.RunReport, ...]) -> None:
    good, slips = two_runs
    side = api.compare(slips, good)
    text = repr(side)
    assert text.startswith("<SideBySide 2 runs: baseline: pass^1") and "\n" not in text
    html = side._repr_html_()
    assert html.count("<table") == 2 and "candidate - baseline" in html
    difference = side.comparisons[0].comparison
    assert difference is not None
    assert f"{difference.differences['pass^1'].difference:+.3f}" in html

    verdict = api.check(slips, good, max_drop=0.05)
    assert repr(verdict) == f"<ScoreComparison {verdict.verdict.value}: {verdict.reason}>"
    html = verdict._repr_html_()
    assert (
        f'<td style="padding:2px 8px;border-bottom:1px solid #ddd;text-align:left">{verdict.verdict.value}</td>' in html
    )


def test_print_shows_the_same_one_line(two_runs: tuple[api.RunReport, ...]) -> None:
    """docs/python.md: they "print as one line"; pydantic's own str would list every field."""
    good, slips = two_runs
    for shown in (slips, slips.summary, api.compare(slips, good), api.check(slips, good, max_drop=0.05)):
        assert str(shown) == repr(shown) and f"{shown}" == repr(shown)
        assert "\n" not in str(shown) and len(str(shown)) < 400, str(shown)


def test_what_a_report_shows_is_escaped(two_runs: tuple[api.RunReport, ...]) -> None:
    summary = two_runs[0].summary.model_copy(update={"domain": "<script>alert(1)</script>"})
    html = summary._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_pass_hat_k_is_keyed_by_int_in_python_and_by_string_in_json(two_runs: tuple[api.RunReport, ...]) -> None:
    summary = two_runs[0].summary
    assert list(summary.pass_hat_k) == [1, 2, 3] == list(summary.pass_hat_k_ci)
    dumped = json.loads(summary.model_dump_json())
    assert list(dumped["pass_hat_k"]) == ["1", "2", "3"]  # JSON object keys are strings
    assert ReportSummary.model_validate(dumped).pass_hat_k == summary.pass_hat_k  # and read back as ints


def test_the_package_re_exports_the_api() -> None:
    assert set(tauproxy.API_NAMES) == set(api.__all__)
    assert tauproxy.run is api.run and tauproxy.RunReport is api.RunReport
    importlib.import_module("tauproxy.interception")  # the code of `intercept`: it must not shadow the function
    assert callable(tauproxy.intercept) and tauproxy.intercept is api.intercept
    assert set(dir(tauproxy)) >= set(api.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        tauproxy.nonesuch  # noqa: B018


def test_importing_the_package_loads_the_api_only_when_a_name_is_used() -> None:
    # A fresh interpreter: what `import tauproxy` loads is the question.
    code = (
        "import sys, tauproxy\n"
        "before = {m for m in ('tauproxy.api', 'litellm', 'tauproxy.runner.run') if m in sys.modules}\n"
        "tauproxy.run_config\n"
        "after = {m for m in ('tauproxy.api', 'litellm') if m in sys.modules}\n"
        "print(sorted(before), sorted(after))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path.cwd())
    assert done.stdout.strip() == "[] ['tauproxy.api']", done.stdout + done.stderr
