"""Copied passages as text segments for the side-by-side view.

The templates print each segment through Jinja's autoescape and wrap passage segments
in ``<mark>``: the highlighting is built around escaped text, never by inserting
markup into the (hostile) text itself.
"""

from __future__ import annotations

from dataclasses import dataclass

FULL_TEXT_LIMIT = 200_000  # longer texts show the passages with some context only
CONTEXT = 400


@dataclass
class Segment:
    text: str
    passage: int | None = None  # passage number (1-based) when this is copied text
    gap: bool = False  # text left out between excerpts


def segments(
    text: str,
    spans: list[tuple[int, int, int]],
    *,
    full_limit: int = FULL_TEXT_LIMIT,
    context: int = CONTEXT,
) -> list[Segment]:
    """Split ``text`` at the passages ``(start, end, number)``.

    Overlapping passages are clipped so every character is printed once; a passage
    clipped to nothing still gets an (empty) segment so its anchor exists. Texts
    longer than ``full_limit`` are shown as excerpts around the passages.
    """
    n = len(text)
    clean: list[tuple[int, int, int]] = []
    pos = 0
    for start, end, number in sorted(spans, key=lambda s: (s[0], s[1])):
        start = min(max(start, pos, 0), n)
        end = min(max(end, start), n)
        clean.append((start, end, number))
        pos = max(pos, end)

    if n <= full_limit:
        windows = [(0, n)]
    else:
        windows = []
        for start, end, _ in clean:
            lo, hi = max(0, start - context), min(n, end + context)
            if windows and lo <= windows[-1][1]:
                windows[-1] = (windows[-1][0], max(windows[-1][1], hi))
            else:
                windows.append((lo, hi))
        if not windows:
            windows = [(0, min(n, full_limit))]

    out: list[Segment] = []
    cursor_span = 0
    for wi, (lo, hi) in enumerate(windows):
        if lo > 0 and (wi == 0 or lo > windows[wi - 1][1]):
            out.append(Segment("…", gap=True))
        pos = lo
        while cursor_span < len(clean) and clean[cursor_span][0] <= hi:
            start, end, number = clean[cursor_span]
            if start > pos:
                out.append(Segment(text[pos:start]))
            out.append(Segment(text[start:end], passage=number))
            pos = max(pos, end)
            cursor_span += 1
        if pos < hi:
            out.append(Segment(text[pos:hi]))
    if windows and windows[-1][1] < n:
        out.append(Segment("…", gap=True))
    return out
