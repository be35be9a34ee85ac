"""Decoding HTML bytes to text, Chinese-aware: the one decoder for pages and HTML files.

``decode_html(body, content_type_header=None) -> (text, codec)`` reads GBK, GB18030 and
Big5 pages right even when they declare nothing or the wrong charset, and never raises.
The crawler uses it for fetched pages; the document readers for .html files.

Only the standard library at import (charset_normalizer is imported on first use), so
importing this module stays cheap.
"""

from __future__ import annotations

import codecs
import logging
import re
from collections.abc import Sequence
from typing import NamedTuple

log = logging.getLogger(__name__)

# The most frequent simplified characters plus the traditional forms of those that
# differ: correct GB or Big5 decodings are dense in them, mis-decodings are not.
_COMMON_SIMPLIFIED = (
    "的一是不了在人有我他这个们中来上大为和国地到以说时要就出会可也你对生能而子那得于着"
    "下自之年过发后作里用道行所然家种事成方多经么去法学如都同现当没动面起看定天分还进好"
    "小部其些主样理心她本前开但因只从想实日军者意无力它与长把机十民第公此已工使情明性知"
    "全三又关点正业外将两高间由问很最重并物手应战向头文体政美相见被利什二等产或新己制身"
    "果加西斯月话合回特代内信表化老给世位次度门任常先海通教儿原东声提立及比员解水名真论"
    "处走义各入几口认条平系气题活尔更别打女变四神总何电数安少报才结反受目太量再感建务做"
    "接必场件计管期市直德资命山金指克许统区保至队形社便空决治展马科司五基眼书非则听白却"
    "界达光放强即像难且权思王象完设式色路记南品住告类求据程北边死张该交"
)
_COMMON_TRADITIONAL = (
    "這個們來為爲國說時會對於過發後裏裡種經麼學現當沒動還進樣開從實軍無與長機關點業將兩"
    "間問並應戰頭體見產話內給門兒東聲員論處義幾認條氣題爾別變總電數報結務場計資許統區隊"
    "決馬書則聽卻達強難權設記類據邊張該著"
)
_COMMON_CJK = frozenset(_COMMON_SIMPLIFIED + _COMMON_TRADITIONAL)

CJK_RATIO_THRESHOLD = 0.2  # correct Chinese decodes score ~0.4-0.6, wrong ones < 0.1
_GB_CODECS = ("gb18030", "gbk")  # gb18030 is the superset; gbk only adds the 0x80 euro sign
_BIG5_CODECS = ("big5hkscs", "cp950")
_WESTERN_CODECS = ("cp1252", "iso8859-1")
_MULTIBYTE_NAMES = frozenset(
    [
        "utf-8",
        "gb18030",
        "gbk",
        "gb2312",
        "big5",
        "big5hkscs",
        "cp950",
        "shift_jis",
        "cp932",
        "euc_jp",
        "euc_kr",
        "cp949",
        "johab",
        "iso2022_jp",
        "iso2022_kr",
        "hz",
    ]
)
# CJK first; cp1252 so that a genuinely Western page is not forced into a CJK codec.
_DETECT_CANDIDATES = [
    "gb18030",
    "big5",
    "cp950",
    "shift_jis",
    "euc_jp",
    "euc_kr",
    "utf_8",
    "cp1252",
]
_EXTRA_LABELS = {  # web labels Python does not know
    "x-gbk": "gbk",
    "x-big5": "big5",
    "x-x-big5": "big5",
    "big-5": "big5",
    "cn-big5": "big5",
    "x-euc-cn": "gb2312",
    "x-sjis": "shift_jis",
    "windows-936": "gbk",
    "unicode-1-1-utf-8": "utf-8",
    "utf8mb4": "utf-8",
}
_HEADER_CHARSET_RE = re.compile(r"""charset\s*=\s*["']?\s*([^"'\s;,]+)""", re.I)
_META_CHARSET_RE = re.compile(rb"""<meta\b[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_XML_DECL_RE = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9_.:-]+)["']""", re.I)
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def cjk_ratio(text: str, sample: int = 20_000) -> float:
    """Share of the non-ASCII, non-punctuation characters that are common Chinese ones."""
    considered = hits = 0
    for ch in text:
        code = ord(ch)
        if (
            code < 0x80
            or 0x2000 <= code <= 0x206F  # general punctuation
            or 0x3000 <= code <= 0x303F  # CJK punctuation
            or 0xFF00 <= code <= 0xFFEF  # full-width forms
        ):
            continue
        considered += 1
        if ch in _COMMON_CJK:
            hits += 1
        if considered >= sample:
            break
    return hits / considered if considered else 0.0


def _strict(body: bytes, codec: str) -> str | None:
    try:
        return body.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


def _codec_for_label(label: str) -> str | None:
    """Canonical codec for a declared label: GB family -> gb18030, Big5 -> big5hkscs,
    Latin-1/ASCII -> cp1252 (as browsers do), UTF-16/32 without BOM -> utf-8."""
    label = label.strip().strip("\"'").lower()
    label = _EXTRA_LABELS.get(label, label)
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    if name in ("gb2312", "gbk", "gb18030"):
        return "gb18030"
    if name in ("big5", "big5hkscs", "cp950"):
        return "big5hkscs"
    if name in ("ascii", "iso8859-1", "latin-1", "cp1252"):
        return "cp1252"
    if name.startswith(("utf-16", "utf-32")):
        # A page readable far enough to find an ASCII label is not UTF-16 (HTML spec).
        return "utf-8"
    return name


Decoded = tuple[str, str]  # (text, Python codec name)


class _Reading(NamedTuple):
    """A strict decoding and its common-character ratio."""

    text: str
    codec: str
    ratio: float

    @property
    def decoded(self) -> Decoded:
        return self.text, self.codec

    @property
    def clearly_chinese(self) -> bool:
        return self.ratio >= CJK_RATIO_THRESHOLD


def decode_html(body: bytes, content_type_header: str | None = None) -> Decoded:
    """Decode a page to text; returns ``(text, codec_name)``. Never raises.

    ``content_type_header`` is the HTTP ``Content-Type`` value if there was one. The
    steps, in order (each named below):

    1. ``_decode_bom``: a byte-order mark decides.
    2. ``_decode_declared``: declared charsets (HTTP header, then XML declaration and
       <meta>), each accepted only if it strict-decodes and is plausible.
    3. UTF-8, strictly.
    4. ``_detect``: GB18030 or Big5 by common-character ratio (``_best_chinese``), an
       almost-clean reading, charset_normalizer biased to CJK candidates, and last the
       least damaged reading.
    """
    if not body:
        return "", "utf-8"
    with_bom = _decode_bom(body)
    if with_bom is not None:
        return with_bom
    utf8 = _strict(body, "utf-8")
    declared = _decode_declared(body, content_type_header, utf8)
    if declared is not None:
        return declared
    if utf8 is not None:
        return utf8, "utf-8"
    return _detect(body)


# --- step 1: byte-order mark ------------------------------------------------------------
def _decode_bom(body: bytes) -> Decoded | None:
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(codec, errors="replace"), codec
    return None


# --- step 2: declared labels --------------------------------------------------------------
def _declared_labels(body: bytes, content_type_header: str | None) -> list[str]:
    """The charset labels a page declares, in the order they are trusted."""
    labels: list[str] = []
    if content_type_header:
        header = _HEADER_CHARSET_RE.search(content_type_header)
        if header:
            labels.append(header.group(1))
    head = body[:16384]  # pirate pages often bury <meta> after long scripts
    xml = _XML_DECL_RE.match(head)
    if xml:
        labels.append(xml.group(1).decode("ascii"))
    labels.extend(m.group(1).decode("ascii") for m in _META_CHARSET_RE.finditer(head))
    return labels


def _decode_declared(
    body: bytes, content_type_header: str | None, utf8: str | None
) -> Decoded | None:
    """The first declared label that is accepted (``utf8``: the strict UTF-8 reading)."""
    for label in _declared_labels(body, content_type_header):
        codec = _codec_for_label(label)
        if codec is None:
            continue
        decoded = _decode_as_declared(body, codec, utf8)
        if decoded is not None:
            return decoded
    return None


def _decode_as_declared(body: bytes, codec: str, utf8: str | None) -> Decoded | None:
    """``body`` read as the declared ``codec``, or None when the label is not believed."""
    if codec == "utf-8":
        return None if utf8 is None else (utf8, "utf-8")
    if utf8 is not None and not utf8.isascii():
        # Legacy-encoded Chinese is practically never valid UTF-8 by accident.
        return None
    if codec == "cp1252" or codec not in _MULTIBYTE_NAMES:
        return _decode_single_byte_label(body, codec)
    if codec in ("gb18030", "big5hkscs"):
        return _decode_chinese_label(body, codec)
    text = _strict(body, codec)
    return None if text is None else (text, codec)


def _decode_single_byte_label(body: bytes, codec: str) -> Decoded | None:
    # Latin-1 decodes anything: reject the label if the bytes are clearly Chinese.
    chinese = _best_chinese(body)
    if chinese is not None and chinese.clearly_chinese:
        return None
    return _decode_family(body, _WESTERN_CODECS if codec == "cp1252" else (codec,))


def _decode_chinese_label(body: bytes, codec: str) -> Decoded | None:
    """A GB or Big5 label; the other family wins when only its reading is Chinese."""
    own, other = (_GB_CODECS, _BIG5_CODECS) if codec == "gb18030" else (_BIG5_CODECS, _GB_CODECS)
    decoded = _decode_family(body, own)
    if decoded is None:
        return None
    ratio = cjk_ratio(decoded[0])
    if ratio < CJK_RATIO_THRESHOLD:
        # GB and Big5 bytes decode as each other; a template copied across sites
        # often keeps the wrong label. Trust the text over the label.
        sibling = _decode_family(body, other)
        if sibling is not None:
            sibling_ratio = cjk_ratio(sibling[0])
            if sibling_ratio >= CJK_RATIO_THRESHOLD and sibling_ratio > ratio:
                return sibling
    return decoded


# --- strict decoding per family and best-Chinese scoring ----------------------------------
def _decode_family(body: bytes, codecs_: Sequence[str]) -> Decoded | None:
    """The first codec of a family that decodes ``body`` strictly."""
    for codec in codecs_:
        text = _strict(body, codec)
        if text is not None:
            return text, codec
    return None


def _best_chinese(body: bytes) -> _Reading | None:
    """The better of the GB and Big5 strict decodings, by common-character ratio
    (GB wins ties: most pirate sites are mainland ones)."""
    best: _Reading | None = None
    for family in (_GB_CODECS, _BIG5_CODECS):
        decoded = _decode_family(body, family)
        if decoded is None:
            continue
        ratio = cjk_ratio(decoded[0])
        if best is None or ratio > best.ratio:
            best = _Reading(decoded[0], decoded[1], ratio)
    return best


# --- step 4: detection and fallback ---------------------------------------------------------
def _detect(body: bytes) -> Decoded:
    """No believable declaration and not UTF-8: find the charset from the bytes."""
    chinese = _best_chinese(body)
    if chinese is not None and chinese.clearly_chinese:
        return chinese.decoded
    almost = _almost_clean(body)
    if almost is not None:
        return almost
    guessed = _guess_charset(body, chinese)
    if guessed is not None:
        return guessed
    if chinese is not None:
        return chinese.decoded
    return _least_damaged(body)


def _almost_clean(body: bytes) -> Decoded | None:
    # Almost clean: a stray byte or a cut multibyte character must not send a UTF-8 or
    # GBK page to statistical guessing (which may then pick a wrong family).
    for codec in ("utf-8", "gb18030", "big5hkscs"):
        lenient = body.decode(codec, errors="replace")
        if lenient.count("\ufffd") > max(2, len(lenient) // 500):
            continue
        if codec == "utf-8" or cjk_ratio(lenient) >= CJK_RATIO_THRESHOLD:
            return lenient, codec
    return None


def _guess_charset(body: bytes, chinese: _Reading | None) -> Decoded | None:
    """charset_normalizer's guess among CJK codecs and windows-1252; a GB/Big5 guess
    uses our own Chinese reading. None when it has no guess (or fails)."""
    guess = None
    try:
        from charset_normalizer import from_bytes

        guess = from_bytes(body, cp_isolation=_DETECT_CANDIDATES).best()
    except Exception as exc:  # detection is best effort; never fail the crawl on it
        log.debug("charset_normalizer failed: %s", exc)
    if guess is None:
        return None
    codec = _codec_for_label(guess.encoding) or guess.encoding
    if codec in ("gb18030", "big5hkscs") and chinese is not None:
        return chinese.decoded
    text = _strict(body, codec)
    if text is None:
        text = body.decode(codec, errors="replace")
    return text, codec


def _least_damaged(body: bytes) -> Decoded:
    # Nothing decodes cleanly: keep the reading with the fewest replacement characters.
    candidates = [(body.decode(c, errors="replace"), c) for c in ("utf-8", "gb18030", "big5hkscs")]
    return min(candidates, key=lambda tc: (tc[0].count("\ufffd"), -cjk_ratio(tc[0])))
