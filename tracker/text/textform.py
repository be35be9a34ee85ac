"""A text as a reader sees it: bidi overrides resolved to display order, and what counts
as an empty text.

**Display order.** A pirate page can store a copied passage reversed and show it the
right way round with U+202E RIGHT-TO-LEFT OVERRIDE (or ``<bdo dir="rtl">``, which the
HTML extraction turns into the same control): a browser shows the original, a reader
of the stored characters sees it backwards. ``reading_order`` gives the characters in
the order they are displayed, by the Unicode Bidirectional Algorithm (UAX #9) of
``python-bidi`` (a binding of the Rust ``unicode-bidi`` crate, maintained; about 9 M
characters/s on override-dense text, ``bench/bench_textform.py``), line by line, and
then drops the bidi controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C):
kept, they would turn the text around again wherever it is shown. Only lines holding
an explicit embedding, override or isolate are touched (text without them is returned
as it is, so no offset of ordinary text moves); a right-to-left script without
controls (Arabic, Hebrew) is left in logical order, which is how it is stored and
searched.

**Empty.** ``is_blank`` is true when a text has no visible character: only white
space, control, format (zero-width, bidi, BOM, soft hyphen) and separator characters,
and the invisible fillers. A file of zero-width spaces is refused as empty like a file
of spaces.

A leaf module: the standard library, and ``python-bidi`` imported when a text needs it.
"""

from __future__ import annotations

import re
import unicodedata

# Explicit embeddings, overrides, isolates (they change display order) and the marks.
_EXPLICIT = re.compile("[\u202a-\u202e\u2066-\u2069]")
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_INVISIBLE_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Cn", "Cs"})
_FILLERS = frozenset("\u034f\u115f\u1160\u3164\uffa0\u2800")
_VISIBLE_ASCII = re.compile(r"[!-~]")


def reading_order(text: str) -> str:
    """``text`` in display order (see the module): unchanged when it holds no explicit
    bidi control."""
    if not _EXPLICIT.search(text):
        return text
    from bidi import get_display

    lines = text.split("\n")
    out = []
    for line in lines:
        if _EXPLICIT.search(line):
            # base_dir "L": a Chinese page's paragraphs are left to right; only the
            # overridden runs turn round.
            line = BIDI_CONTROLS.sub("", get_display(line, base_dir="L"))
        out.append(line)
    return "\n".join(out)


def is_blank(text: str) -> bool:
    """True when ``text`` has no visible character (see the module)."""
    if _VISIBLE_ASCII.search(text):  # the usual case, at C speed
        return False
    for ch in text:
        if ch in _FILLERS:
            continue
        if unicodedata.category(ch) not in _INVISIBLE_CATEGORIES:
            return False
    return True
