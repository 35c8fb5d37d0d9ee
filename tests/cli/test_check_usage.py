"""`tauproxy check` without --baseline is a usage error (exit 2, one line), not "cannot test" (125):
`git bisect run` would skip every commit of a script that forgot it instead of failing at once."""

from __future__ import annotations

from pathlib import Path

from conftest import invoke_cli


def test_check_without_baseline_is_a_one_line_usage_error(oracle_run: Path) -> None:
    run_dir = oracle_run
    for extra in ((), ("--json",)):
        proc = invoke_cli("check", str(run_dir), *extra, check=False)
        assert proc.returncode == 2, (proc.returncode, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "--baseline" in lines[0] and "Traceback" not in proc.stderr
        assert proc.stdout == ""
    judged = invoke_cli("check", str(run_dir), "--baseline", str(run_dir), check=False)
    assert judged.returncode in (0, 125), "with --baseline it is judged as before"
