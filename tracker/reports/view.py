"""What the HTML and PDF reports draw for each passage: the rows to show (the aligned
segment pairs when the aligner gave them, else the whole passage), each side cut into
pieces marked same / substituted (homophone, variant, edit) / inserted / deleted by the
character diff (``tracker.matching.textdiff``), and the legend of those marks; and for each
region (``region_rows``) one row, its suspect text cut at the excluded spans (the
inserted lines, marked ``excluded``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracker.matching.textdiff import LEGEND
from tracker.reports.schema import DiffData, PassageData, RegionData

# The marks, in legend order: css class / name -> bilingual label.
MARKS: tuple[tuple[str, str], ...] = (
    ("homophone", LEGEND["homophone"]),
    ("variant", LEGEND["variant"]),
    ("edit", LEGEND["edit"]),
    ("inserted", LEGEND["inserted"]),
    ("deleted", LEGEND["deleted"]),
)


# The mark of a region's excluded spans (not a character difference: text the work does
# not hold at that place, left out of the region's similarity).
EXCLUDED: tuple[str, str] = ("excluded", "已排除的插入文字 / excluded inserted text")


@dataclass(frozen=True)
class Piece:
    text: str
    mark: str  # "" for same, else a name of MARKS


@dataclass(frozen=True)
class Row:
    """One side-by-side row of a passage."""

    label: str  # "3" for a passage, "3.2" for its second segment pair
    suspect_range: str  # "[10–125)"
    mother_range: str
    initials_similarity: float | None
    char_similarity: float | None
    suspect: tuple[Piece, ...] | None  # None: the text is missing (record deleted)
    mother: tuple[Piece, ...] | None
    # A region's row: what it says instead of the two similarities (its similarity on
    # initials, the excluded spans, the passages inside it).
    note: str = ""


def _mark(span: Sequence[int | str]) -> str:
    kind, detail = span[2], span[3] if len(span) > 3 else ""
    if kind == "same":
        return ""
    if kind == "substituted":
        return str(detail or "edit")
    return str(kind)


def marked(
    text: str | None, spans: Sequence[Sequence[int | str]] | None
) -> tuple[Piece, ...] | None:
    """``text`` cut along its diff spans; unmarked when there is no diff."""
    if text is None:
        return None
    if not spans:
        return (Piece(text, ""),)
    pieces: list[Piece] = []
    for span in spans:
        start, end = int(span[0]), int(span[1])
        mark = _mark(span)
        if pieces and pieces[-1].mark == mark:
            pieces[-1] = Piece(pieces[-1].text + text[start:end], mark)
        else:
            pieces.append(Piece(text[start:end], mark))
    return tuple(pieces)


def _side(diff: DiffData | None, side: str) -> list[list[Any]] | None:
    return None if diff is None else diff["suspect" if side == "suspect" else "mother"]


def passage_rows(p: PassageData) -> list[Row]:
    """The rows of one passage: its segment pairs when it has several, else itself."""
    if p["segments"]:
        return [
            Row(
                label=f"{p['n']}.{i}",
                suspect_range=f"[{s['suspect_start']}–{s['suspect_end']})",
                mother_range=f"[{s['mother_start']}–{s['mother_end']})",
                initials_similarity=s["initials_similarity"],
                char_similarity=s["char_similarity"],
                suspect=marked(s["suspect_text"], _side(s["diff"], "suspect")),
                mother=marked(s["mother_text"], _side(s["diff"], "mother")),
            )
            for i, s in enumerate(p["segments"], 1)
        ]
    return [
        Row(
            label=str(p["n"]),
            suspect_range=f"[{p['suspect_start']}–{p['suspect_end']})",
            mother_range=f"[{p['mother_start']}–{p['mother_end']})",
            initials_similarity=p["initials_similarity"],
            char_similarity=p["char_similarity"],
            suspect=marked(p["suspect_text"], _side(p["diff"], "suspect")),
            mother=marked(p["mother_text"], _side(p["diff"], "mother")),
        )
    ]


#: Passages shown open under their regions up to this many (or as many as the regions).
PASSAGES_SHOWN_OPEN = 10


def passages_open(passages: int, regions: int) -> bool:
    """Whether the passage table is shown open beside the regions, the same rule for the
    web evidence view and the HTML report: open when a person can read it at a glance
    (at most ten passages, or no more passages than regions), folded otherwise."""
    return passages <= max(regions, PASSAGES_SHOWN_OPEN)


def fmt_similarity(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def differing(p: PassageData) -> int:
    """Characters of the suspect side that are not the same as in the mother."""
    if p["diff"] is None:
        return 0
    counts = p["diff"]["counts"]
    return counts["substituted"] + counts["inserted"]


def number_ranges(numbers: Sequence[int]) -> str:
    """``[1, 2, 3, 5, 7, 8]`` → ``1–3, 5, 7–8``."""
    out: list[tuple[int, int]] = []
    for n in sorted(numbers):
        if out and out[-1][1] == n - 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in out)


def region_pieces(r: RegionData) -> tuple[Piece, ...] | None:
    """The region's suspect text cut at its excluded spans (marked ``excluded``)."""
    text = r["suspect_text"]
    if text is None:
        return None
    base, pos = r["suspect_start"], 0
    pieces: list[Piece] = []
    for x in sorted(r["excluded"], key=lambda x: x["suspect_start"]):
        a = max(pos, x["suspect_start"] - base)
        b = min(len(text), x["suspect_end"] - base)
        if b <= a:
            continue
        if a > pos:
            pieces.append(Piece(text[pos:a], ""))
        pieces.append(Piece(text[a:b], EXCLUDED[0]))
        pos = b
    if pos < len(text):
        pieces.append(Piece(text[pos:], ""))
    return tuple(pieces)


def region_note(r: RegionData) -> str:
    """What a region's row says of it (bilingual): similarity on initials, copied
    characters, excluded spans, the passages inside it."""
    parts = [
        f"相似度（首字母）similarity (initials) {r['similarity']:.2f}",
        f"区域 {r['region_characters']} 字（不含排除部分）characters in the region, less excluded",
    ]
    if r["excluded"]:
        parts.append(f"排除插入文字 {len(r['excluded'])} 处 excluded inserted spans")
    if r["passages"]:
        parts.append(f"段落 passages {number_ranges(r['passages'])}")
    return "\n".join(parts)


def region_rows(regions: Sequence[RegionData]) -> list[Row]:
    """One row per region: its texts side by side, the excluded spans marked."""
    return [
        Row(
            label=f"R{r['n']}",
            suspect_range=f"[{r['suspect_start']}–{r['suspect_end']})",
            mother_range=f"[{r['mother_start']}–{r['mother_end']})",
            initials_similarity=r["similarity"],
            char_similarity=None,
            suspect=region_pieces(r),
            mother=None if r["mother_text"] is None else (Piece(r["mother_text"], ""),),
            note=region_note(r),
        )
        for r in regions
    ]
