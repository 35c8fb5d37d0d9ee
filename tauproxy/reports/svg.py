"""Inline SVG charts for the HTML report, drawn in Python so the page needs no JS library or network.

Every chart is one <svg> with a stable id (tests and readers find it by id) and a <title> for
screen readers. Elements are built by `element`, which escapes every text and attribute value.
"""

from __future__ import annotations

from pydantic import BaseModel

from tauproxy.reports.markup import element, money

_PASS_W, _PASS_H = 520, 280
_LEFT, _RIGHT, _TOP, _BOTTOM = 48, 20, 16, 40
SERIES_COLOURS = {"live": "#d9480f", "saved": "#1c7ed6", "source unknown": "#868e96"}


def pass_hat_k_chart(
    points: dict[int, float], intervals: dict[int, tuple[float, float]], svg_id: str = "chart-pass-hat-k"
) -> str:
    """pass^k against k, with the bootstrap interval as a shaded band."""
    plot_w = _PASS_W - _LEFT - _RIGHT
    plot_h = _PASS_H - _TOP - _BOTTOM
    ks = sorted(points)

    def x(k: int) -> float:
        if len(ks) == 1:
            return _LEFT + plot_w / 2
        return _LEFT + (k - ks[0]) / (ks[-1] - ks[0]) * plot_w

    def y(value: float) -> float:
        return _TOP + (1.0 - value) * plot_h

    parts: list[str] = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(element("line", x1=_LEFT, x2=_LEFT + plot_w, y1=y(tick), y2=y(tick), stroke="#dee2e6"))
        parts.append(element("text", f"{tick:.2f}", x=_LEFT - 6, y=y(tick) + 4, text_anchor="end"))
    for k in ks:
        parts.append(element("text", str(k), x=x(k), y=_PASS_H - _BOTTOM + 18, text_anchor="middle"))
    parts.append(element("text", "k", x=_LEFT + plot_w / 2, y=_PASS_H - 6, text_anchor="middle"))
    if len([k for k in ks if k in intervals]) == 1:
        # One k: the interval is a vertical bar, since a band needs two points to have width.
        lo, hi = intervals[ks[0]]
        parts.append(
            element(
                "line",
                id=f"{svg_id}-band",
                x1=x(ks[0]),
                x2=x(ks[0]),
                y1=y(lo),
                y2=y(hi),
                stroke="#74c0fc",
                stroke_width=10,
            )
        )
    elif intervals:
        upper = [f"{x(k):.1f},{y(intervals[k][1]):.1f}" for k in ks if k in intervals]
        lower = [f"{x(k):.1f},{y(intervals[k][0]):.1f}" for k in reversed(ks) if k in intervals]
        parts.append(
            element("polygon", id=f"{svg_id}-band", points=" ".join(upper + lower), fill="#74c0fc", fill_opacity="0.45")
        )
    if ks:
        line = " ".join(f"{x(k):.1f},{y(points[k]):.1f}" for k in ks)
        parts.append(
            element("polyline", id=f"{svg_id}-line", points=line, fill="none", stroke="#1864ab", stroke_width=2)
        )
    for k in ks:
        lo, hi = intervals.get(k, (points[k], points[k]))
        tip = element("title", f"pass^{k} = {points[k]:.3f} (95% CI {lo:.3f}–{hi:.3f})")
        parts.append(element("circle", children=tip, cx=x(k), cy=y(points[k]), r=4, fill="#1864ab"))
    return _svg(svg_id, _PASS_W, _PASS_H, "pass^k by k, with its 95% bootstrap interval", parts)


class CostGroup(BaseModel):
    """One group of bars (a role): series name -> USD, None when unknown."""

    label: str
    values: dict[str, float | None]


def cost_chart(groups: list[CostGroup], svg_id: str = "chart-cost-by-role") -> str:
    """Grouped bars per role: live (spent) next to saved (replayed). Unknown is written, never drawn as 0."""
    series = [name for name in SERIES_COLOURS if any(name in g.values for g in groups)]
    bar_w, gap, group_gap = 34, 4, 36
    group_w = max(1, len(series)) * (bar_w + gap)
    width = max(400, _LEFT + len(groups) * (group_w + group_gap) + _RIGHT)
    height, plot_h = 260, 170
    base_y = _TOP + plot_h
    known = [v for g in groups for v in g.values.values() if v is not None]
    top = max(known, default=0.0) or 1.0  # all zero: bars stay at zero height, no division by zero
    parts = [element("line", x1=_LEFT, x2=width - _RIGHT, y1=base_y, y2=base_y, stroke="#495057")]
    for index, group in enumerate(groups):
        left = _LEFT + index * (group_w + group_gap)
        for position, name in enumerate(series):
            if name not in group.values:
                continue
            value = group.values[name]
            centre = left + position * (bar_w + gap) + bar_w / 2
            tip = element("title", f"{group.label} {name}: {money(value)}")
            if value is None:
                rotate = f"rotate(-90 {centre} {base_y - 6})"
                parts.append(
                    element(
                        "text",
                        "unknown",
                        children=tip,
                        class_="unknown",
                        x=centre,
                        y=base_y - 6,
                        text_anchor="start",
                        transform=rotate,
                    )
                )
                continue
            bar_h = value / top * plot_h
            parts.append(
                element(
                    "rect",
                    children=tip,
                    class_="bar",
                    x=centre - bar_w / 2,
                    y=base_y - bar_h,
                    width=bar_w,
                    height=bar_h,
                    fill=SERIES_COLOURS[name],
                )
            )
            parts.append(
                element("text", money(value), x=centre, y=base_y - bar_h - 4, text_anchor="middle", font_size=9)
            )
        parts.append(element("text", group.label, x=left + group_w / 2, y=base_y + 16, text_anchor="middle"))
    for position, name in enumerate(series):
        legend_x = _LEFT + position * 130
        colour = SERIES_COLOURS[name]
        parts.append(element("rect", x=legend_x, y=height - 22, width=12, height=12, fill=colour))
        parts.append(element("text", name, x=legend_x + 16, y=height - 12))
    return _svg(svg_id, width, height, "model cost by role: live (spent) and replayed (saved)", parts)


def _svg(svg_id: str, width: int, height: int, title: str, parts: list[str]) -> str:
    children = element("title", title) + "".join(parts)
    return element(
        "svg",
        children=children,
        id=svg_id,
        xmlns="http://www.w3.org/2000/svg",
        width=width,
        height=height,
        viewBox=f"0 0 {width} {height}",
        role="img",
        font_family="sans-serif",
        font_size=11,
    )
