"""How reports look in a notebook: the parts of a short `repr` and of a small HTML table (`_repr_html_`),
which the summary of a run (summary.py), runs side by side (compare.py) and a check's verdict
(regression.py) build from.

Jupyter shows an object's `_repr_html_` when it has one and its `repr` otherwise; pydantic's default
repr of these models prints every field (a run's grid and costs by task: pages of text). What is shown
here is what a reader acts on: pass^k with its interval, the cost live and saved, the models, the
verdict and why. The full data stays on the object (`.model_dump()`), and every value is escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape

STYLE = "border-collapse:collapse;font-family:ui-monospace,monospace;font-size:12px"
CELL = "padding:2px 8px;border-bottom:1px solid #ddd;text-align:{align}"
MAX_K_SHOWN = 8  # pass^1..pass^8 in a row; more trials than that are rare and would run off a cell


def usd(value: float | None) -> str:
    """Money as the terminal report writes it; unknown is "unknown", never $0."""
    return "unknown" if value is None else f"${value:,.4f}"


def pass_line(pass_hat_k: Mapping[int, float]) -> str:
    shown = list(pass_hat_k.items())[:MAX_K_SHOWN]
    return " ".join(f"pass^{k} {value:.3f}" for k, value in shown) or "no scored trials"


def with_interval(value: float | None, interval: tuple[float, float] | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if interval is None else f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = "".join(f'<th style="{CELL.format(align="left")}">{escape(text)}</th>' for text in header)
    body = "".join(
        "<tr>" + "".join(f'<td style="{CELL.format(align="left")}">{escape(text)}</td>' for text in row) + "</tr>"
        for row in rows
    )
    return f'<table style="{STYLE}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def facts(named: Iterable[tuple[str, str]]) -> str:
    body = "".join(
        f'<tr><th style="{CELL.format(align="left")}">{escape(name)}</th>'
        f'<td style="{CELL.format(align="left")}">{escape(value)}</td></tr>'
        for name, value in named
    )
    return f'<table style="{STYLE}"><tbody>{body}</tbody></table>'
