"""Numbers as Chinese books write them: ``chinese_number`` (小写 and 大写 numerals,
traditional forms, 〇/○, 廿/卅/卌, 万, and Arabic digits, full-width too) and
``chapter_number`` (the number a chapter's title or link text states). Used by the
chapter reader (``tracker.books.headings``), a work's book and chapter
(``tracker.common.records.ChapterRef``) and the order of a case's pages."""

from __future__ import annotations

import re

DIGITS = {"零": 0, "〇": 0, "○": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4}
DIGITS |= {"五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "壹": 1, "贰": 2, "貳": 2, "叁": 3}
DIGITS |= {"叄": 3, "參": 3, "肆": 4, "伍": 5, "陆": 6, "陸": 6, "柒": 7, "捌": 8, "玖": 9}
_UNITS = {"十": 10, "拾": 10, "百": 100, "佰": 100, "千": 1000, "仟": 1000}
_TENS = {"廿": 20, "卅": 30, "卌": 40}
_MYRIAD = {"万": 10_000, "萬": 10_000}
NUMERAL_CHARS = "0-9０-９" + "".join([*DIGITS, *_UNITS, *_TENS, *_MYRIAD])
FULL_WIDTH = str.maketrans("０１２３４５６７８９", "0123456789")


def chinese_number(text: str) -> int | None:
    """``十二`` → 12, ``一百零五`` → 105, ``一二三`` / ``一一九`` → 123 / 119, ``廿三`` → 23,
    ``１２`` / ``012`` → 12, ``壹佰`` → 100; None when ``text`` is not a numeral."""
    text = text.strip().translate(FULL_WIDTH)
    if not text:
        return None
    if text.isascii() and text.isdigit():
        return int(text)
    if all(ch in DIGITS for ch in text):  # digit by digit: 一二三 = 123
        return int("".join(str(DIGITS[ch]) for ch in text))
    total, section, digit = 0, 0, None
    for ch in text:
        if ch in DIGITS:
            digit = DIGITS[ch]
        elif ch in _UNITS:
            section += (1 if digit is None else digit) * _UNITS[ch]
            digit = None
        elif ch in _TENS:
            section += _TENS[ch]
            digit = None
        elif ch in _MYRIAD:
            total += (section + (digit or 0)) * _MYRIAD[ch]
            section, digit = 0, None
        else:
            return None
    return total + section + (digit or 0)


#: A chapter number in a title or link text: 第N章/节/回/卷/集/篇/话, Chapter N, "12. …".
_NUMBER_PATTERNS = (
    re.compile(rf"第\s*([{NUMERAL_CHARS}]+)\s*[章节節回卷集篇话話]"),
    re.compile(r"chapter\s*([0-9０-９]+)", re.I),
    re.compile(r"^\s*([0-9０-９]+)\s*[.、:：\s]"),
)


def chapter_number(text: str) -> int | None:
    """The chapter number a title or link text states (Chinese or Arabic numerals,
    full-width too), or None."""
    for pattern in _NUMBER_PATTERNS:
        found = pattern.search(text or "")
        if found:
            number = chinese_number(found.group(1))
            if number is not None:
                return number
    return None
