"""The one id rule: what a work's or a suspect's id may be, for every surface.

The ``.jsonl`` readers, folder ingest (ids from file names), the web paste forms, the
REST API and the job items all call ``check_id``, so an id one of them accepts is
accepted by every other, spelled the same.

- **Type**: a string or a whole number (JSON ids may be numbers: ``7`` is the id
  ``"7"``). Objects, lists, booleans and null are refused, never stored as a repr.
- **Normalisation**: surrounding white space stripped (``" col "`` is ``"col"``), then
  Unicode NFC (a decomposed "é" and a CJK compatibility ideograph are the characters
  they look like). Two ids that normalise to one are one id: the second in a batch is
  refused as a duplicate naming both spellings (``DuplicateIds``), never dropped.
- **Length**: 1 to ``MAX_ID_LENGTH`` (256) characters after normalisation. Ids appear
  in URL paths, percent-encoded: 256 keep every id reachable from the web and the API.
- **Characters refused** (they make one id look like another, or break a line):
  control characters (Unicode Cc: newlines, tabs, NUL), format characters (Cf: the
  bidi overrides and isolates U+202A-U+202E, U+2066-U+2069, the marks U+200E/U+200F,
  zero-width U+200B-U+200D, U+2060, the BOM U+FEFF, the soft hyphen), line and
  paragraph separators (Zl, Zp), lone surrogates (Cs: a file name that is not UTF-8),
  unassigned code points (Cn), and the invisible fillers U+034F, U+115F, U+1160,
  U+3164, U+FFA0. Spaces inside an id (U+0020, U+3000) are kept.

A leaf module: the standard library only.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

MAX_ID_LENGTH = 256
_REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "an invisible format character (bidi or zero-width)",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
    "Cs": "an undecodable byte (not UTF-8)",
    "Cn": "an unassigned code point",
}
_FILLERS = frozenset("\u034f\u115f\u1160\u3164\uffa0")


def _prefix(where: str, message: str) -> str:
    return f"{where}: {message}" if where else message


def shown(value: str, limit: int = 60) -> str:
    """``value`` safe to print in a message: invisible and undecodable characters as
    escapes (``'a\\u202eb'``, ``'bad\\udcff'``), cut to ``limit`` characters."""
    return repr(value[:limit]) + ("…" if len(value) > limit else "")


def refused_character(text: str) -> tuple[int, str] | None:
    """(position, reason) of the first character an id may not hold, or None."""
    for i, ch in enumerate(text):
        category = unicodedata.category(ch)
        if category in _REFUSED_CATEGORIES:
            return i, _REFUSED_CATEGORIES[category]
        if ch in _FILLERS:
            return i, "an invisible filler character"
    return None


def normalize_id(value: str | int) -> str:
    """The id's one spelling: ``str``, stripped, NFC (not checked: see ``check_id``)."""
    return unicodedata.normalize("NFC", str(value).strip())


def check_id(value: object, where: str = "", what: str = "id") -> str:
    """``value`` as an id (see the module's rule), normalised; ``ValueError`` naming
    ``where`` and the reason otherwise."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        kind = "null" if value is None else type(value).__name__
        raise ValueError(_prefix(where, f"'{what}' must be a string or a number, got {kind}"))
    try:
        text = normalize_id(value)
    except ValueError:  # an integer of more digits than Python prints
        raise ValueError(_prefix(where, f"'{what}' is a number too long to be an id")) from None
    if not text:
        raise ValueError(_prefix(where, f"'{what}' must not be blank"))
    if len(text) > MAX_ID_LENGTH:
        raise ValueError(
            _prefix(where, f"'{what}' longer than {MAX_ID_LENGTH} characters ({len(text)})")
        )
    bad = refused_character(text)
    if bad is not None:
        i, reason = bad
        code = f"U+{ord(text[i]):04X}"
        # "control characters" is kept in the wording: scripts and tests grep for it.
        kind = "control characters" if reason == "a control character" else reason
        raise ValueError(
            _prefix(where, f"'{what}' {shown(text)} holds {kind} ({code} at {i}): refused")
        )
    return text


def id_problem(value: object) -> str | None:
    """Why ``value`` is not an id, or None."""
    try:
        check_id(value)
    except ValueError as exc:
        return str(exc)
    return None


@dataclass
class DuplicateIds:
    """Ids seen in one batch, to refuse a second item with an id already given.

    ``seen(doc_id, where, raw)`` is None the first time and the refusal message after,
    naming both items and both spellings: ``duplicate id '7' in this batch: given as
    "7" at documents[1] and as 7 at documents[0] (ids are compared stripped and NFC):
    skipped``.
    """

    first: dict[str, tuple[str, object]] = field(default_factory=dict)

    def seen(self, doc_id: str, where: str, raw: object = None) -> str | None:
        raw = doc_id if raw is None else raw
        if doc_id not in self.first:
            self.first[doc_id] = (where, raw)
            return None
        first_where, first_raw = self.first[doc_id]
        if _spelled(first_raw) == _spelled(raw):
            return f"duplicate id {shown(doc_id)} in this batch (first at {first_where}): skipped"
        return (
            f"duplicate id {shown(doc_id)} in this batch: given as {_spelled(raw)} at {where} "
            f"and as {_spelled(first_raw)} at {first_where} (ids are compared stripped and "
            "NFC): skipped"
        )


def _spelled(raw: object) -> str:
    if isinstance(raw, str):
        return '"' + repr(raw)[1:-1] + '"'
    return repr(raw)
