"""Copied passages as text segments for the side-by-side view.

The templates print each segment through Jinja's autoescape and wrap passage segments
in ``<mark>``: the highlighting is built around escaped text, never by inserting
markup into the (hostile) text itself.

Inside a passage, the characters that differ between the suspect and the work
(homophones, traditional or variant forms, other characters, characters only on one
side) are cut out as ``pieces`` with their mark, from the character diff of
``tracker.matching.textdiff`` that the evidence reports use too (``diff_marks``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tracker.reports.schema import PassageData, SegmentData

FULL_TEXT_LIMIT = 200_000  # longer texts show the passages with some context only
CONTEXT = 400


# The marks of differing characters, in legend order (css class d-<mark>).
MARKS: tuple[str, ...] = ("homophone", "variant", "edit", "inserted", "deleted")

Mark = tuple[int, int, str]  # (start, end, mark) in a whole text, end exclusive


@dataclass
class Segment:
    text: str
    passage: int | None = None  # passage number (1-based) when this is copied text
    gap: bool = False  # text left out between excerpts
    excluded: bool = False  # inserted text inside a region (an ad line): not copied
    # A passage's text cut along the differing characters: (text, mark), mark "" for
    # characters that are the same on both sides. Empty when there are no marks.
    pieces: list[tuple[str, str]] = field(default_factory=list)


def span_mark(span: Sequence[object]) -> str:
    """The mark of a ``tracker.matching.textdiff`` span ``[start, end, kind, detail]``: "" for
    the same characters, the detail of a substitution (homophone, variant, edit),
    else its kind (inserted: only in the suspect; deleted: only in the work)."""
    kind = span[2]
    if kind == "same":
        return ""
    if kind == "substituted":
        return str((span[3] if len(span) > 3 else "") or "edit")
    return str(kind)


def diff_marks(passages: Iterable[PassageData]) -> tuple[list[Mark], list[Mark]]:
    """The marks of both texts (suspect, work) from the evidence report's passages
    (``tracker.reports.data.report_data(...)["passages"]``): each passage's character
    diff, or its segment pairs' diffs when the aligner split it (a reordered copy),
    moved from passage-relative to whole-text offsets. Overlaps (two passages over the
    same characters) keep the first mark."""
    side: dict[str, list[Mark]] = {"suspect": [], "mother": []}
    for p in passages:
        segments = p.get("segments")
        pairs: list[PassageData | SegmentData] = [*segments] if segments else [p]
        for pair in pairs:
            diff = pair.get("diff")
            if not diff:
                continue
            starts = {"suspect": pair["suspect_start"], "mother": pair["mother_start"]}
            for name in ("suspect", "mother"):
                base = int(starts[name])
                for span in diff[name]:
                    mark = span_mark(span)
                    if mark:
                        side[name].append((base + int(span[0]), base + int(span[1]), mark))
    return _disjoint(side["suspect"]), _disjoint(side["mother"])


def _disjoint(marks: list[Mark]) -> list[Mark]:
    out: list[Mark] = []
    for start, end, mark in sorted(marks):
        if out and start < out[-1][1]:
            start = out[-1][1]
        if start < end:
            out.append((start, end, mark))
    return out


def _pieces(
    text: str, start: int, end: int, marks: list[Mark], ends: list[int]
) -> list[tuple[str, str]]:
    """``text[start:end]`` cut along ``marks`` (sorted, disjoint; ``ends`` their ends)."""
    out: list[tuple[str, str]] = []
    pos = start
    i = bisect.bisect_right(ends, start)
    while i < len(marks) and marks[i][0] < end:
        a, b, mark = max(marks[i][0], start), min(marks[i][1], end), marks[i][2]
        if a > pos:
            out.append((text[pos:a], ""))
        if b > a:
            out.append((text[a:b], mark))
        pos = max(pos, b)
        i += 1
    if pos < end:
        out.append((text[pos:end], ""))
    return out


def segments(
    text: str,
    spans: list[tuple[int, int, int]],
    *,
    full_limit: int = FULL_TEXT_LIMIT,
    context: int = CONTEXT,
    marks: list[Mark] | None = None,
    excluded: list[tuple[int, int]] | None = None,
) -> list[Segment]:
    """Split ``text`` at the passages ``(start, end, number)``.

    Overlapping passages are clipped so every character is printed once; a passage
    clipped to nothing still gets an (empty) segment so its anchor exists. Texts
    longer than ``full_limit`` are shown as excerpts around the passages. ``marks``
    (``diff_marks``) cut each passage into ``pieces``. ``excluded`` (the regions'
    excluded spans, ``(start, end)``) cut the text between passages into segments
    marked ``excluded``.
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
    ends = [m[1] for m in marks] if marks else []
    cuts = sorted(excluded or [])
    cut_ends = [y for _, y in cuts]

    def plain(a: int, b: int) -> None:
        """``text[a:b]`` (no passage in it), the excluded spans cut out."""
        pos = a
        for x, y in cuts[bisect.bisect_right(cut_ends, a) :]:
            if x >= b:
                break
            x, y = max(x, pos), min(y, b)
            if x >= y:
                continue
            if x > pos:
                out.append(Segment(text[pos:x]))
            out.append(Segment(text[x:y], excluded=True))
            pos = y
        if pos < b:
            out.append(Segment(text[pos:b]))

    cursor_span = 0
    for wi, (lo, hi) in enumerate(windows):
        if lo > 0 and (wi == 0 or lo > windows[wi - 1][1]):
            out.append(Segment("…", gap=True))
        pos = lo
        while cursor_span < len(clean) and clean[cursor_span][0] <= hi:
            start, end, number = clean[cursor_span]
            if start > pos:
                plain(pos, start)
            pieces = _pieces(text, start, end, marks, ends) if marks else []
            out.append(Segment(text[start:end], passage=number, pieces=pieces))
            pos = max(pos, end)
            cursor_span += 1
        if pos < hi:
            plain(pos, hi)
    if windows and windows[-1][1] < n:
        out.append(Segment("…", gap=True))
    return out
