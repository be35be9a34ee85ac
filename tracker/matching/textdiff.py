"""Character alignment of a suspect passage with the mother passage it copies.

The fingerprints match on pinyin initials, so a homophone copy (同音替换), a copy in
traditional characters or a lightly edited copy can score 1.00 there. Evidence must
show what really differs: ``char_diff`` aligns the two texts character by character
and returns, for each side, spans of kinds

- ``same``: the character is in both, in this place;
- ``substituted``: it replaces other characters of the other side; ``detail`` says
  ``homophone`` (same pinyin, tones ignored), ``variant`` (the same character in
  simplified and traditional form) or ``edit`` (anything else);
- ``inserted``: only in the suspect; ``deleted``: only in the mother.

and ``ratio``, the character similarity ``2 * same / (len(suspect) + len(mother))``
(difflib's ratio: 1.0 for identical texts, 0.0 for nothing in common).

The alignment is ``difflib.SequenceMatcher`` on characters. Its "popular element"
heuristic (autojunk) is off for passages up to ``EXACT_LIMIT`` characters a side, so
their alignment is exact in difflib's sense; longer ones turn it on, which keeps a
20,000-character passage well under a second instead of minutes.

The reports (``tracker.reports``) and the web view use this one function.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from tracker.common.records import JSONObject

SpanKind = Literal["same", "substituted", "inserted", "deleted"]
KINDS: tuple[SpanKind, ...] = ("same", "substituted", "inserted", "deleted")
DETAILS = ("homophone", "variant", "edit")
EXACT_LIMIT = 3000

# Bilingual legend of the kinds and details, for reports and the web view.
LEGEND: dict[str, str] = {
    "same": "相同 / same",
    "substituted": "替换 / substituted",
    "homophone": "同音字 / homophone",
    "variant": "繁简异体 / traditional or variant form",
    "edit": "改字 / other character",
    "inserted": "仅疑似页面有 / only in the suspect",
    "deleted": "仅原作有 / only in the original",
}


@dataclass(frozen=True)
class Span:
    """Characters ``start:end`` of one side (end exclusive) and how they compare."""

    start: int
    end: int
    kind: SpanKind
    detail: str = ""  # substituted spans: homophone / variant / edit

    def to_json(self) -> list[int | str]:
        return [self.start, self.end, self.kind, self.detail]


@dataclass(frozen=True)
class CharDiff:
    """The character alignment of a suspect text with a mother text."""

    suspect: tuple[Span, ...]
    mother: tuple[Span, ...]
    same: int  # characters aligned as equal (counted once)
    ratio: float  # 2 * same / (len(suspect) + len(mother)); 1.0 for two empty texts

    def counts(self) -> dict[str, int]:
        """Characters per kind and detail: same, substituted (and homophone, variant,
        edit among them, suspect side), inserted, deleted."""
        out = dict.fromkeys((*KINDS, *DETAILS), 0)
        for span in self.suspect:
            if span.kind != "deleted":
                out[span.kind] += span.end - span.start
            if span.detail:
                out[span.detail] += span.end - span.start
        out["deleted"] = sum(s.end - s.start for s in self.mother if s.kind == "deleted")
        return out

    def to_json(self) -> JSONObject:
        return {
            "ratio": round(self.ratio, 4),
            "same": self.same,
            "suspect": [s.to_json() for s in self.suspect],
            "mother": [s.to_json() for s in self.mother],
        }


def pieces(text: str, spans: tuple[Span, ...] | list[Span]) -> Iterator[tuple[str, Span]]:
    """``text`` cut along ``spans`` (those of the same side): (substring, span) pairs."""
    for span in spans:
        yield text[span.start : span.end], span


@cache
def _opencc() -> Any:
    try:
        import opencc  # opencc-python-reimplemented: optional
    except ImportError:
        return None
    return opencc.OpenCC("t2s")


def _same_character(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` are the same character in simplified / traditional form."""
    converter = _opencc()
    if converter is None:
        return False
    return bool(converter.convert(a) == converter.convert(b))


@cache
def _readings(ch: str) -> frozenset[str]:
    from pypinyin import Style, pinyin

    found = pinyin(ch, style=Style.NORMAL, heteronym=True, errors="ignore")
    return frozenset(r for group in found for r in group)


def _classify(a: str, b: str) -> str:
    if _same_character(a, b):
        return "variant"
    ra, rb = _readings(a), _readings(b)
    if ra and rb and ra & rb:
        return "homophone"
    return "edit"


def _substituted(
    s_text: str, s_lo: int, s_hi: int, m_text: str, m_lo: int, m_hi: int
) -> tuple[list[Span], list[Span]]:
    """Spans of a replaced stretch: character by character when both sides have the
    same length (a homophone or a variant is one character for one), else one edit."""
    if s_hi - s_lo != m_hi - m_lo:
        return [Span(s_lo, s_hi, "substituted", "edit")], [Span(m_lo, m_hi, "substituted", "edit")]
    s_spans: list[Span] = []
    m_spans: list[Span] = []
    for k in range(s_hi - s_lo):
        detail = _classify(s_text[s_lo + k], m_text[m_lo + k])
        if s_spans and s_spans[-1].detail == detail and s_spans[-1].end == s_lo + k:
            s_spans[-1] = Span(s_spans[-1].start, s_lo + k + 1, "substituted", detail)
            m_spans[-1] = Span(m_spans[-1].start, m_lo + k + 1, "substituted", detail)
        else:
            s_spans.append(Span(s_lo + k, s_lo + k + 1, "substituted", detail))
            m_spans.append(Span(m_lo + k, m_lo + k + 1, "substituted", detail))
    return s_spans, m_spans


def char_diff(suspect: str, mother: str) -> CharDiff:
    """Align ``suspect`` with ``mother`` character by character (see the module doc)."""
    autojunk = max(len(suspect), len(mother)) > EXACT_LIMIT
    matcher = difflib.SequenceMatcher(None, suspect, mother, autojunk=autojunk)
    s_spans: list[Span] = []
    m_spans: list[Span] = []
    same = 0
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            s_spans.append(Span(i1, i2, "same"))
            m_spans.append(Span(j1, j2, "same"))
            same += i2 - i1
        elif op == "delete":  # difflib: a[i1:i2] is not in b -> only in the suspect
            s_spans.append(Span(i1, i2, "inserted"))
        elif op == "insert":  # b[j1:j2] is not in a -> only in the mother
            m_spans.append(Span(j1, j2, "deleted"))
        else:
            s_part, m_part = _substituted(suspect, i1, i2, mother, j1, j2)
            s_spans += s_part
            m_spans += m_part
    total = len(suspect) + len(mother)
    ratio = 2.0 * same / total if total else 1.0
    return CharDiff(tuple(s_spans), tuple(m_spans), same, ratio)


def char_similarity(suspect: str, mother: str) -> float:
    """The character similarity of two texts (``char_diff(...).ratio``)."""
    return char_diff(suspect, mother).ratio
