"""What the HTML and PDF reports draw for each passage: the rows to show (the aligned
segment pairs when the aligner gave them, else the whole passage), each side cut into
pieces marked same / substituted (homophone, variant, edit) / inserted / deleted by the
character diff (``tracker.textdiff``), and the legend of those marks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracker.reports.data import DiffData, PassageData
from tracker.textdiff import LEGEND

# The marks, in legend order: css class / name -> bilingual label.
MARKS: tuple[tuple[str, str], ...] = (
    ("homophone", LEGEND["homophone"]),
    ("variant", LEGEND["variant"]),
    ("edit", LEGEND["edit"]),
    ("inserted", LEGEND["inserted"]),
    ("deleted", LEGEND["deleted"]),
)


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


def fmt_similarity(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def differing(p: PassageData) -> int:
    """Characters of the suspect side that are not the same as in the mother."""
    if p["diff"] is None:
        return 0
    counts = p["diff"]["counts"]
    return counts["substituted"] + counts["inserted"]
