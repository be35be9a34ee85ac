"""Chapter order: the number in a chapter's title or link text (第N章, 第N回, 第N节,
Chapter N, "12. ..."), in Chinese or Arabic numerals (full-width too), with page order
as the tie-breaker. A pirate index that lists its "最新章节" first (3, 1, 2) is read
1, 2, 3; a title without a number keeps its place after the numbered ones.

Hand-written rather than a dependency: Chinese numerals below 万万 are a dozen lines
(``cn2an`` would bring PyYAML and a second package for this one conversion).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

T = TypeVar("T")

_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6}
_DIGITS |= {"七": 7, "八": 8, "九": 9, "壹": 1, "贰": 2, "叁": 3, "肆": 4, "伍": 5}
_DIGITS |= {"陆": 6, "柒": 7, "捌": 8, "玖": 9}
_UNITS = {"十": 10, "拾": 10, "百": 100, "佰": 100, "千": 1000, "仟": 1000}
_NUMERAL = "0-9０-９零〇一二三四五六七八九十百千万两壹贰叁肆伍陆柒捌玖拾佰仟"
_PATTERNS = (
    re.compile(rf"第\s*([{_NUMERAL}]+)\s*[章节節回卷集篇话話]"),
    re.compile(r"chapter\s*([0-9０-９]+)", re.I),
    re.compile(r"^\s*([0-9０-９]+)\s*[.、:：\s]"),
)


def chinese_number(text: str) -> int | None:
    """``十二`` → 12, ``一百零五`` → 105, ``一二三`` → 123, ``１２`` → 12; None when
    ``text`` is not a numeral."""
    text = text.strip().translate(str.maketrans("０１２３４５６７８９", "0123456789"))
    if not text:
        return None
    if text.isdigit():
        return int(text)
    if all(ch in _DIGITS for ch in text):  # digit by digit: 一二三 = 123
        return int("".join(str(_DIGITS[ch]) for ch in text))
    total, section, digit = 0, 0, None
    for ch in text:
        if ch in _DIGITS:
            digit = _DIGITS[ch]
        elif ch in _UNITS:
            section += (1 if digit is None else digit) * _UNITS[ch]
            digit = None
        elif ch == "万":
            total += (section + (digit or 0)) * 10_000
            section, digit = 0, None
        else:
            return None
    return total + section + (digit or 0)


def chapter_number(text: str) -> int | None:
    """The chapter number a title or link text states, or None."""
    for pattern in _PATTERNS:
        found = pattern.search(text or "")
        if found:
            number = chinese_number(found.group(1))
            if number is not None:
                return number
    return None


def in_chapter_order(items: Sequence[T], text: Callable[[T], str | Iterable[str]]) -> list[T]:
    """``items`` sorted by the chapter number of ``text(item)`` (the first of several
    texts that states one); page order breaks ties, unnumbered items go last."""

    def key(pair: tuple[int, T]) -> tuple[int, int, int]:
        index, item = pair
        texts = text(item)
        for t in [texts] if isinstance(texts, str) else texts:
            number = chapter_number(t)
            if number is not None:
                return (0, number, index)
        return (1, 0, index)

    return [item for _, item in sorted(enumerate(items), key=key)]
