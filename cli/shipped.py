"""Shipped cassettes: `cassette replay-check` (what CI runs) and `cassette rerecord`."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tauproxy_cli.run_flags import RunFlags

if TYPE_CHECKING:
    from tauproxy.reports.summary import ReportSummary
    from tauproxy.runner.manifest import ManifestRun

REPLAY_FLAGS = {"cassette", "record_mode", "save_to"}


def manifest_flags(run: ManifestRun, cassette: Path, mode: str, save_to: Path) -> RunFlags:
    known = {f.name for f in fields(RunFlags)} - REPLAY_FLAGS
    unknown = set(run.flags) - known
    if unknown:
        from tauproxy.errors import CassetteError

        raise CassetteError(f"manifest run {run.name!r}: unknown flags {', '.join(sorted(unknown))}")
    return RunFlags(**run.flags, cassette=cassette, record_mode=mode, save_to=save_to)


def _execute(flags: RunFlags) -> ReportSummary:
    from tauproxy.reports.summary import summarize
    from tauproxy.runner.run import execute
    from tauproxy_cli.run_setup import build_run_config

    return summarize(execute(build_run_config(flags)).results)


def replay_check_command(
    cassettes: Annotated[list[Path], typer.Argument(help="Shipped cassette directories (with manifest.json).")],
) -> None:
    """Replay every run of each manifest strictly offline; fail unless all calls replay and scores match."""
    from tauproxy.runner.manifest import load_manifest
    from tauproxy_cli.output import error, out_console

    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for cassette in cassettes:
            manifest = load_manifest(cassette)
            for run in manifest.runs:
                summary = _execute(manifest_flags(run, cassette, "replay", Path(tmp) / f"{cassette.name}-{run.name}"))
                same = summary.pass_hat_k == run.expected_pass_hat_k and summary.calls.replayed == run.calls
                live = summary.calls.live
                if not same or live:
                    failures += 1
                    error(
                        f"{cassette.name}/{run.name}: pass^k {summary.pass_hat_k} (expected "
                        f"{run.expected_pass_hat_k}), {summary.calls.replayed} replayed "
                        f"(expected {run.calls}), {live} live"
                    )
                else:
                    out_console.print(f"{cassette.name}/{run.name}: {run.calls} calls replayed, pass^k matches")
    if failures:
        raise typer.Exit(1)


def rerecord_command(
    cassette: Annotated[Path, typer.Argument(help="Shipped cassette directory (with manifest.json).")],
) -> None:
    """Record every manifest run again (record mode) into a fresh cassette, then swap it in.

    Use after a deliberate change that alters requests (prompt texts, tools, the key); commit the result.
    """
    from tauproxy.runner.manifest import CassetteManifest, load_manifest, write_manifest
    from tauproxy.version import __version__
    from tauproxy_cli.output import out_console

    manifest = load_manifest(cassette)
    staging = cassette.with_name(cassette.name + ".rerecord")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in manifest.runs:
            summary = _execute(manifest_flags(run, staging, "record", Path(tmp) / run.name))
            runs.append(
                run.model_copy(
                    update={
                        "expected_pass_hat_k": summary.pass_hat_k,
                        # Shared calls are answered from the cassette on replay, like the rest.
                        "calls": summary.calls.live + summary.calls.replayed + summary.calls.shared,
                    }
                )
            )
            out_console.print(f"{run.name}: recorded, pass^k {summary.pass_hat_k}")
    updated = CassetteManifest.model_validate(
        {
            **manifest.model_dump(),
            "runs": [r.model_dump() for r in runs],
            "recorded_on": datetime.now(UTC).date().isoformat(),
            "tauproxy_version": __version__,
        }
    )
    write_manifest(staging, updated)
    backup = cassette.with_name(cassette.name + ".old")
    shutil.rmtree(backup, ignore_errors=True)
    cassette.rename(backup)
    staging.rename(cassette)
    shutil.rmtree(backup)
    out_console.print(f"re-recorded {cassette}; review with `git diff --stat {cassette}` and commit")
