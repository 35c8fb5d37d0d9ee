"""Building HTML/SVG elements with every text and attribute value escaped, so no caller can forget."""

from __future__ import annotations

from html import escape
from typing import Any


def element(tag: str, text: str = "", children: str = "", **attrs: object) -> str:
    """One element: `text` is escaped, `children` is markup already built by `element`.

    Attribute names use _ for - (stroke_width -> stroke-width) and a trailing _ for keywords (class_).
    None and False drop the attribute; True writes it bare-valued (open="").
    """
    rendered = "".join(
        f' {name.rstrip("_").replace("_", "-")}="{"" if value is True else escape(_text(value))}"'
        for name, value in attrs.items()
        if value is not None and value is not False
    )
    body = escape(text) + children
    if tag in _HTML_VOID:
        return f"<{tag}{rendered}>"
    return f"<{tag}{rendered}>{body}</{tag}>" if body or tag not in _SVG_EMPTY else f"<{tag}{rendered}/>"


# HTML void elements never take a closing tag; empty SVG shapes self-close; anything else is
# written open-and-closed, since `<div/>` does not close a div in HTML.
_HTML_VOID = frozenset({"meta", "br", "hr", "img", "input", "link"})
_SVG_EMPTY = frozenset({"line", "rect", "circle", "polygon", "polyline", "path"})


def _text(value: object) -> str:
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def money(value: float | None) -> str:
    """USD for people; unknown stays "unknown", never $0."""
    return "unknown" if value is None else f"${value:.4f}"


def cell(text: str, number: bool = False, **attrs: object) -> str:
    """A table cell; numbers align right."""
    extra: dict[str, Any] = dict(attrs)  # attributes only: element's own parameters are passed by position
    return element("td", text, "", class_="num" if number else extra.pop("class_", None), **extra)


def table(headers: list[str], rows: list[str], **attrs: object) -> str:
    """A table from header texts and rows built with `row`."""
    head = element("tr", children="".join(element("th", h) for h in headers)) if headers else ""
    extra: dict[str, Any] = dict(attrs)
    return element("table", "", head + "".join(rows), **extra)


def row(*cells: str) -> str:
    return element("tr", children="".join(cells))


def section(section_id: str, title: str, *parts: str) -> str:
    return element("section", id=section_id, children=element("h2", title) + "".join(parts))
