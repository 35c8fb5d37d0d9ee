"""`tauproxy cassette import FILE... --into DIR`: vcrpy / pytest-recording cassettes into a tauproxy cassette.

Only typer loads at import time; the importer (serve's app, vcrpy) loads when the command runs.
Errors tauproxy raises on purpose print one red line and exit 2, as every cassette command does.
"""

from pathlib import Path
from typing import Annotated

import typer

from tauproxy_cli.cassette import JsonOpt, _errors, _out, _print_json


def import_command(
    files: Annotated[
        list[Path], typer.Argument(metavar="FILE", help="vcrpy or pytest-recording cassette files (.yaml or .json).")
    ],
    into: Annotated[
        Path, typer.Option("--into", metavar="DIR", help="Cassette directory to write into (created if absent).")
    ],
    prices: Annotated[
        Path | None, typer.Option(help="Prices file overriding litellm's price map, as serve's --prices.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Import recorded model calls from vcrpy cassettes, keyed as `tauproxy serve` keys a live call.

    Calls it cannot key are listed one line each and left out; samples the cassette holds are kept."""
    from dataclasses import asdict

    from tauproxy.proxy.pricing import Pricing
    from tauproxy.vcr_import import import_vcr_files

    with _errors():
        report = import_vcr_files(files, into, Pricing.from_file(prices))
    if as_json:
        _print_json({**asdict(report), "into": str(into)})
        return
    for left_out in report.left_out:
        _out.print(f"left out: {left_out.line()}", markup=False)
    _out.print(
        f"imported {report.imported} of {report.interactions} interactions from {report.files} file(s) into {into}"
        f" ({report.already_there} already there, {len(report.left_out)} left out)",
        markup=False,
    )
