"""Text for terminals: widths by display columns, so Chinese lines up.

A CJK character takes two columns of a terminal (Unicode East Asian Width W or F),
combining marks none; ``len`` counts both as one, which misaligns every table that
mixes Chinese titles with Latin ids.
"""

from __future__ import annotations

import unicodedata

ELLIPSIS = "…"


def char_width(ch: str) -> int:
    """Columns one character takes on a terminal."""
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Columns ``text`` takes on a terminal."""
    return sum(char_width(ch) for ch in text)


def fit(text: str, width: int, *, align: str = "left") -> str:
    """``text`` in exactly ``width`` columns: cut with "…" when longer (never half a
    wide character), padded with spaces when shorter."""
    text = " ".join(text.split())  # a title's newlines and tabs would break the row
    if display_width(text) > width:
        out, used = [], 0
        for ch in text:
            w = char_width(ch)
            if used + w > width - 1:
                break
            out.append(ch)
            used += w
        text = "".join(out) + ELLIPSIS
    pad = " " * (width - display_width(text))
    return pad + text if align == "right" else text + pad
