"""Charts as geometry for inline SVG (no JavaScript chart library, nothing from a CDN).

Each function returns plain numbers and labels; the templates draw them with SVG
elements and presentation attributes (no inline ``style``, which the CSP forbids).
Labels are escaped by Jinja like any other value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from tracker.common.records import JSONObject
from tracker.common.timefmt import human_utc, to_utc


def fmt_time(value: datetime | None, with_time: bool = True) -> str:
    """UTC for people (``tracker.common.timefmt.human_utc``: ``2026-11-25 09:26:15 UTC``), or
    its date: the same instant reads the same for every team member and in documents."""
    if value is None:
        return "—"
    return human_utc(value) if with_time else to_utc(value).strftime("%Y-%m-%d")


def _axis(peak: int) -> tuple[int, int]:
    """(axis maximum, tick step): whole numbers, a round step (1, 2, 5 × 10^k), at most
    five ticks above zero."""
    peak = max(1, peak)
    step = 1
    while True:
        for m in (1, 2, 5):
            if m * step * 5 >= peak:
                unit = m * step
                return unit * -(-peak // unit), unit
        step *= 10


@dataclass
class Bar:
    x: float
    y: float
    w: float
    h: float
    label: str
    value: int
    href: str | None = None


@dataclass
class TimeChart:
    width: int
    height: int
    left: int
    bottom: int
    bars: list[Bar] = field(default_factory=list)
    yticks: list[tuple[float, int]] = field(default_factory=list)  # (y, value)
    xlabels: list[tuple[float, str]] = field(default_factory=list)  # (x, label)
    unit: str = "day"
    total: int = 0


def time_chart(by_day: list[tuple[str, int]], width: int = 760, height: int = 200) -> TimeChart:
    """Matches per day (per month when the range is longer than about three months)."""
    left, right, top, bottom = 44, 10, 12, 28
    chart = TimeChart(width=width, height=height, left=left, bottom=height - bottom)
    counts: dict[date, int] = {}
    for day, n in by_day:
        try:
            counts[date.fromisoformat(str(day)[:10])] = counts.get(
                date.fromisoformat(str(day)[:10]), 0
            ) + int(n)
        except ValueError:
            continue
    if not counts:
        return chart
    first, last = min(counts), max(counts)
    # At least two weeks on the axis: one busy day must not fill the chart as one slab.
    first = min(first, last - timedelta(days=13))
    buckets: list[tuple[str, int]] = []
    if (last - first).days <= 92:
        d = first
        while d <= last:
            buckets.append((d.isoformat(), counts.get(d, 0)))
            d += timedelta(days=1)
    else:
        chart.unit = "month"
        months: dict[str, int] = {}
        y, m = first.year, first.month
        while (y, m) <= (last.year, last.month):
            months[f"{y:04d}-{m:02d}"] = 0
            y, m = (y + 1, 1) if m == 12 else (y, m + 1)
        for d, n in counts.items():
            months[f"{d.year:04d}-{d.month:02d}"] += n
        buckets = list(months.items())
    peak, step = _axis(max(n for _, n in buckets))
    plot_w = width - left - right
    plot_h = height - top - bottom
    slot = plot_w / len(buckets)
    bar_w = max(1.0, min(slot * 0.8, 36.0))
    for i, (label, n) in enumerate(buckets):
        h = plot_h * n / peak
        chart.bars.append(
            Bar(
                x=left + i * slot + (slot - bar_w) / 2,
                y=top + plot_h - h,
                w=bar_w,
                h=h,
                label=label,
                value=n,
            )
        )
    for value in range(0, peak + 1, step):
        chart.yticks.append((top + plot_h - plot_h * value / peak, value))
    every = max(1, len(buckets) // 8)
    for i in range(0, len(buckets), every):
        chart.xlabels.append((left + i * slot + slot / 2, buckets[i][0]))
    chart.total = sum(n for _, n in buckets)
    return chart


@dataclass
class BarList:
    width: int
    height: int
    label_width: int
    bars: list[Bar] = field(default_factory=list)


def shorten(label: str, width: float) -> str:
    """``label`` cut to about ``width`` em (a Chinese character is 1 em, Latin about
    0.55), with an ellipsis: the SVG label column has a fixed width."""
    used = 0.0
    for i, ch in enumerate(label):
        used += 1.0 if ord(ch) > 0x2E7F else 0.55
        if used > width:
            return label[: max(1, i - 1)] + "…"
    return label


def bar_list(items: list[tuple[str, int, str | None]], width: int = 460) -> BarList:
    """Horizontal bars, one per (label, count, link), biggest first."""
    label_width, row = 180, 26
    chart = BarList(width=width, height=max(row, row * len(items)) + 4, label_width=label_width)
    if not items:
        return chart
    peak = max(n for _, n, _ in items) or 1
    plot_w = width - label_width - 50
    for i, (label, n, href) in enumerate(items):
        w = max(2.0, plot_w * n / peak)
        short = shorten(label, 14.0)
        chart.bars.append(
            Bar(x=label_width, y=i * row + 4, w=w, h=row - 8, label=short, value=n, href=href)
        )
    return chart


# A colour per verdict (tracker.common.records.VERDICTS), in the bar's order: confirmed first.
VERDICT_COLOURS = {"confirmed": "#c53030", "pending": "#d69e2e", "dismissed": "#718096"}


def verdict_chart(by_verdict: dict[str, int], width: int = 460) -> JSONObject:
    """One stacked bar split by verdict, with a legend."""
    total = sum(by_verdict.values())
    segments: list[JSONObject] = []
    x = 0.0
    for verdict in VERDICT_COLOURS:
        n = int(by_verdict.get(verdict, 0))
        w = width * n / total if total else 0.0
        segments.append(
            {
                "verdict": verdict,
                "x": x,
                "w": w,
                "value": n,
                "colour": VERDICT_COLOURS[verdict],
                "share": n / total if total else 0.0,
            }
        )
        x += w
    return {"width": width, "height": 34, "segments": segments, "total": total}
