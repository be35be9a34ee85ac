"""The text of a file's bytes (``decode_text``: a BOM, else strict UTF-8, else GB18030
or Big5, whichever reads more like Chinese, or UTF-16 without a BOM) and text made safe
to store (``clean_text``); ``InputError`` names the input that cannot be read.
``tracker.documents.readers`` reads files with them."""

from __future__ import annotations

import re

from tracker.text.textform import reading_order


class InputError(ValueError):
    """Bad input that names what was wrong."""


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """Replace lone surrogates (which no UTF-8 store can hold, and which JSON such as
    "\\ud800" can carry) by U+FFFD, one code point for one; then a line holding bidi
    overrides (U+202E ...) is put in display order (``tracker.text.textform.reading_order``):
    the text is stored, matched and shown as a reader sees it."""
    if not _may_be_unclean(text):
        return text
    return reading_order(_SURROGATE.sub("\ufffd", text))


_BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def _may_be_unclean(text: str) -> bool:
    """Whether ``text`` holds what ``clean_text`` changes, a lone surrogate or an
    explicit bidi control, found by C loops: UTF-16 refuses lone surrogates, and each
    bidi control is looked for in turn (a clean text, the usual case, is scanned in a
    third less time than by a regex of both)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-16-le")
    except UnicodeEncodeError:
        return True
    return any(ch in text for ch in _BIDI)


def decode_text(data: bytes, name: str = "<input>") -> str:
    """Decode a text file: BOM, else UTF-8, else GB18030, else Big5 (all strict)."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    if b"\x00" in data:
        # UTF-16 without a BOM (Windows tools write it): ASCII in it is half NULs.
        utf16 = utf16_without_bom(data, min_score=0.95)
        if utf16 is not None:
            return utf16
        raise InputError(f"{name}: binary file (contains NUL bytes), not text")
    # A file cut out of a longer UTF-8 text may start inside a character.
    head = 0
    while head < 3 and head < len(data) and 0x80 <= data[head] <= 0xBF:
        head += 1
    if head:
        try:
            return data[head:].decode("utf-8")
        except UnicodeDecodeError:
            pass
    decoded: list[str] = []
    for encoding in ("utf-8", "gb18030", "big5"):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as exc:
            # A file cut in the middle of its last character is still that encoding.
            if exc.reason != "unexpected end of data" or exc.start < len(data) - 3:
                continue
            text = data[: exc.start].decode(encoding)
        if encoding == "utf-8":
            return text  # strict UTF-8 of non-ASCII bytes is never an accident
        decoded.append(text)
    # Chinese in UTF-16 without a BOM has no NUL byte; GB18030 then reads its bytes as
    # ASCII punctuation and stray Han characters. Taken only when it reads as Chinese
    # clearly better than every other reading.
    utf16 = utf16_without_bom(data, min_score=0.97)
    if utf16 is not None and _han_share(utf16) > max((_han_share(t) for t in decoded), default=0):
        return utf16
    if not decoded:
        raise InputError(f"{name}: not valid UTF-8, GB18030 or Big5 text")
    # GB18030 accepts almost any byte string, Big5 bytes included: keep the reading
    # that looks most like Chinese text.
    if len(decoded) == 1:
        return decoded[0]  # nothing to choose between (Big5 refused the bytes)
    return max(decoded, key=_plausibility)


def utf16_without_bom(data: bytes, *, min_score: float) -> str | None:
    """``data`` read as UTF-16 (little or big endian) when one reading decodes strictly,
    has no control characters but line breaks and tabs, and is at least ``min_score``
    plausible Chinese or ASCII text; else None."""
    if len(data) < 2 or len(data) % 2:
        return None
    best: tuple[float, str] | None = None
    for codec in ("utf-16-le", "utf-16-be"):
        try:
            text = data.decode(codec)
        except UnicodeDecodeError:
            continue
        if any(ch < " " and ch not in "\n\r\t" for ch in text):
            continue
        score = _plausibility(text)
        if score >= min_score and (best is None or score > best[0]):
            best = (score, text)
    return best[1] if best else None


#: Characters that are not common in Chinese text (Han, ASCII, CJK punctuation, fullwidth
#: forms, line breaks and tabs): ``_plausibility`` counts them in C, not per character
#: in Python (a 5 M-character book read as GB18030 and Big5 took seconds).
_UNCOMMON = re.compile("[^\u4e00-\u9fff -~\n\r\t\u3000-\u303f\uff00-\uffef]")
_NOT_HAN = re.compile("[^\u4e00-\u9fff]")
_BLANK = re.compile(r"\s")


def _han_share(text: str) -> float:
    """Share of the non-blank characters that are Han (CJK unified ideographs)."""
    blank = _BLANK.subn("", text)[1]
    chars = len(text) - blank
    if not chars:
        return 0.0
    # Non-Han characters that are not blank (every blank character is not Han).
    not_han = _NOT_HAN.subn("", text)[1] - blank
    return (chars - not_han) / chars


def _plausibility(text: str) -> float:
    """Share of characters that are common in Chinese text (Han, ASCII, CJK punctuation)."""
    if not text:
        return 0.0
    return (len(text) - _UNCOMMON.subn("", text)[1]) / len(text)
