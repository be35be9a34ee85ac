"""Chapter headings in a whole book's text, and the split into chapters.

The rules (docs/BOOKS.md, "Chapter detection"):

- A heading is a line (after optional leading blanks and a prefix such as ``正文``,
  ``《书名》``, ``《》目录``, ``VIP章节``) that starts with ``第N`` + one of
  章回囘节節卷集话話篇幕部, N in Chinese numerals (小写 or 大写, traditional, 〇/○,
  廿/卅) or Arabic digits (full-width, leading zeros), optionally followed by a
  separator and a title of at most 60 characters holding no 。 or ；. A title glued to
  the number (``第一回甄士隐梦幻识通灵``) is taken, unless it starts like a sentence
  (``第三回时…``, ``第四回中…``, ``第三回合…``).
- ``序章 楔子 引子 序言 序 前言 自序 尾声 番外 后记 终章 大结局 跋`` alone on a line (or
  followed by a separator and a short title) are headings too.
- A heading word inside a sentence is not a heading: only line starts count, except in
  text scraped without line breaks (most of the text in lines of over 5,000 characters,
  such as the Gutenberg traditional editions): there a ``第N回/章`` is a heading when it
  follows a chapter-end formula (``且听下回分解``, ``且看下文分解``) or the text start, or
  carries the next number in sequence, and does not start a sentence. Its title ends at a
  comma couplet (``：A，B``), at an opening formula (``话说``, ``却说``, ``诗曰`` …), or
  else after the couplet length most common in the book.
- ``卷/部/集/篇`` headings are volumes when the book also has chapter headings
  (章/回/节/话/幕): the chapters after one carry it as ``volume``. Alone they are the
  chapters.
- Text before the first heading is front matter: returned apart, never a chapter
  (a book's own preface has a heading, 序/前言, and is then a chapter).
- A table of contents (a run of headings without bodies that reappear later) and a
  heading repeated right after itself (a scraped page's title shown twice) make no
  empty chapter; other headings without text are skipped with a warning.
- Site banner, advert and navigation lines (``更新时间…本章字数``, ``请购买正版``,
  ``回目录``, URLs …, lines of at most 100 characters) are removed from chapter text.
- Out-of-order, repeated or skipped numbers, mixed numeral styles and very short
  chapters are kept in file order, with a warning.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from tracker.books.types import ParsedChapter
from tracker.text.numerals import DIGITS, FULL_WIDTH, NUMERAL_CHARS, chinese_number

_CHAPTER_KINDS = "章回囘节節话話幕"
_VOLUME_KINDS = "卷部集篇"
_KIND_NORMAL = str.maketrans("囘節話", "回节话")
_SPECIALS = (
    "序章|序幕|序言|序|楔子|引子|引言|前言|自序|尾声|尾聲|番外篇?|后记|後記|终章|終章|"
    "大结局|大結局|跋"
)
_BLANK = " \t\u3000\ufeff\xa0"
_PREFIX = (
    r"(?:(?:正文卷|正文|VIP章节|VIP卷|章节目录|章節目錄|目录|目錄|《[^》\n]{0,40}》)"
    rf"[{_BLANK}:：]*)"
)
_LINE_HEADING = re.compile(
    rf"^[{_BLANK}]*(?:{_PREFIX})*[【\[〔（(]?"
    rf"(?:(?P<head>第[{_BLANK}]?(?P<num>[{NUMERAL_CHARS}]{{1,12}})[{_BLANK}]?(?P<kind>[{_CHAPTER_KINDS}{_VOLUME_KINDS}]))"
    rf"|(?P<juan>卷(?:之)?(?P<jnum>[{NUMERAL_CHARS}]{{1,8}}))"
    rf"|(?P<special>{_SPECIALS}))"
    r"(?P<rest>[^\n]*)$",
    re.M,
)
_INLINE_HEADING = re.compile(
    rf"第[{_BLANK}]?(?P<num>[{NUMERAL_CHARS}]{{1,8}})[{_BLANK}]?(?P<kind>[章回囘节節])"
)
# Lines that may hold a heading (a literal line break first: the scan runs at C speed).
_LINE_START = re.compile(
    rf"\n[{_BLANK}]*(?:[【\[〔（(第卷序楔引前自尾番后後终終大跋《]|正文|VIP|章节|章節|目录|目錄)"
)
_NON_BLANK = re.compile(r"[^\s]")
_SEPARATORS = _BLANK + ":：、.．·-—_】]〕）)"
_SENTENCE_END = re.compile("[。．；;]")
# A number followed by one of these starts a sentence ("第三回时", "第四回中既将…",
# "第三回合", "第二部分"), not a title.
_SENTENCE_START = frozenset(
    "时時的了里裡也后後前之以和与與是就都已还還又才便再到来來合分团團队隊长長门門"
)
_CLOSING = "】]〕）)"
_SENTENCE_STOP = frozenset("。！？!?」』”")
_TITLE_RUN = re.compile(r"[：:\s]?[\u4e00-\u9fff]{10}")
_MAX_TITLE = 60
# The end of a chapter in classical novels, right before the next heading.
_CHAPTER_END = re.compile(r"(?:分解|下回|下文|下回分解|再看下回)[。．.！!」”\"]*[\s]*$")
# Openings of a chapter's first sentence: where an inline heading's title ends.
_OPENER_RE = re.compile(
    "此开卷|此開卷|古人云|话说|話說|却说|卻說|却說|且说|且說|诗曰|詩曰|诗云|詩云|词曰|詞曰|"
    "再说|再說|单说|單說|话表|話表|却表|卻表|且表|话分|話分|书接|書接|上回|列位|看官|原来|"
    "原來|此回|那日|这日|這日|却道|卻道|话言|話言|且道|诗道|詩道"
)
_RUN_ON_LINE = 5000
_MAX_INLINE_TITLE = 24  # a couplet of two 12-character halves
# Advert, banner and navigation lines of pirate sites (lines of at most 100 characters
# holding one of these are removed from chapter text).
_JUNK_MARKERS = (
    "更新时间 更新時間 本章字数 本章字數 作品仅供 作品僅供 请在下载 請在下載 购买正版 購買正版 "
    "支持正版 正版图书 小时内删除 不得用作商业 本站地址 本站网址 本站域名 本站长期 本站所有 "
    "本站提供 本站收集 本站推荐 本书来自 本書來自 章节内容开始 手机阅读 手機閱讀 txt下载 TXT下载 "
    "免费下载 下载地址 全文阅读 加入书签 点此下载 点击下载 一秒记住 一秒記住 最快更新 无弹窗 "
    "無彈窗 笔趣阁 筆趣閣 www. WWW. http:// https:// .com .net .org .cn 首页| 首頁|"
)


def _trie_pattern(words: list[str]) -> str:
    """One regex for many literal words, factored by their first characters: each
    position of a text costs one branch, not one per word (a plain alternation of 50
    words starting with common characters such as 一 下 本 runs at 20 M chars/s)."""
    groups: dict[str, list[str]] = {}
    ends = False
    for word in words:
        if word:
            groups.setdefault(word[0], []).append(word[1:])
        else:
            ends = True
    branches = [
        re.escape(first) + (_trie_pattern(rest) if rest != [""] else "")
        for first, rest in sorted(groups.items())
    ]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 and not ends else "(?:" + "|".join(branches) + ")"
    return body + "?" if ends else body


_JUNK_WORDS = re.compile(_trie_pattern(sorted(set(_JUNK_MARKERS.split()))))
# Navigation and rule lines, alone on their line.
_JUNK_LINE = re.compile(
    r"[ \t\u3000]*(?:(?:上一页|下一页|上一章|下一章|前一页|后一页|後一頁|回目录|回目錄|返回目录|"
    r"返回书页|回首页|回首頁|目录|目錄)|[-=*_~·.—]{5,})[ \t\u3000]*"
)
_MAX_JUNK_LINE = 100
_SHORT_CHAPTER = 20  # characters of body text below which a chapter is reported


@dataclass(frozen=True)
class Heading:
    """A heading found in a text: ``text[start:end]`` is the heading, the body follows."""

    start: int
    end: int
    title: str  # as in the book, blanks collapsed
    kind: str  # 章 回 节 话 幕 卷 部 集 篇 (normalised), or "" for 序章, 楔子 …
    number: int | None
    arabic: bool = False  # the number was written in Arabic digits

    @property
    def key(self) -> tuple[str, int | None, str]:
        return (self.kind, self.number, "" if self.number is not None else self.title)


def _clean_title(text: str) -> str:
    return re.sub(r"[ \t\xa0\ufeff]+", " ", text).strip(_BLANK)


def _title_rest(rest: str) -> tuple[bool, str] | None:
    """(had a separator, title) of what follows a heading's number; None when it reads
    as a sentence rather than a heading's title."""
    stripped = rest.rstrip(_BLANK)
    if len(stripped) > _MAX_TITLE or _SENTENCE_END.search(stripped):
        return None
    if stripped[:1] in ("，", ","):
        return None  # "第一章，我们讲过……": a sentence
    body = stripped.lstrip(_SEPARATORS)
    separated = len(body) < len(stripped)
    if body and not separated and body[0] in _SENTENCE_START:
        return None
    return separated, body


# A heading and its chapter's first paragraph on one line, two blanks between them:
# "第一章 开端　　他走进了房间，……".
_GLUED_BODY = re.compile(
    r"[ \t\u3000:：、.．·\-—_]*([^\s。；;，,！？!?]{0,30}?)[ \t\u3000]{2,}(?=\S)"
)


def _glued_heading(text: str, m: re.Match[str]) -> Heading | None:
    """A ``第N章`` heading whose line goes on with the chapter's text, or None."""
    if not m.group("head"):
        return None
    g = _GLUED_BODY.match(m.group("rest"))
    if g is None or (g.group(1) and g.group(1)[0] in _SENTENCE_START):
        return None
    number = chinese_number(m.group("num"))
    if number is None:
        return None
    rest = m.start("rest")
    title = _clean_title(text[m.start("head") : rest + g.end(1)])
    kind = m.group("kind").translate(_KIND_NORMAL)
    arabic = m.group("num").translate(FULL_WIDTH).isdigit()
    return Heading(m.start(), rest + g.end(), title, kind, number, arabic)


def _line_headings(text: str) -> list[Heading]:
    found: list[Heading] = []
    for candidate in _LINE_START.finditer(f"\n{text}"):
        m = _LINE_HEADING.match(text, candidate.start())
        if m is None:
            continue
        parsed = _title_rest(m.group("rest"))
        if parsed is None:
            glued = _glued_heading(text, m)
            if glued is not None:
                found.append(glued)
            continue
        separated, _ = parsed
        start = (
            m.start("head")
            if m.group("head")
            else m.start("juan")
            if m.group("juan")
            else m.start("special")
        )
        # The heading as in the book: from 第 (or the special word) to the line end.
        bracket = text[start - 1] if start and text[start - 1] in "【[〔（(" else ""
        title = _clean_title(bracket + text[start : m.end()])
        if m.group("special"):
            word = m.group("special")
            rest = m.group("rest").strip(_BLANK)
            if (
                rest
                and not separated
                and not (word.startswith("番外") and rest[0] in NUMERAL_CHARS)
            ):
                continue  # "序幕拉开了", "前言不搭后语"
            if len(title) > 30:
                continue
            found.append(Heading(m.start(), m.end(), title, "", None))
            continue
        if m.group("juan"):
            number = chinese_number(m.group("jnum"))
            if number is None or (parsed[1] and not separated):
                continue
            found.append(Heading(m.start(), m.end(), title, "卷", number))
            continue
        number = chinese_number(m.group("num"))
        if number is None:
            continue
        kind = m.group("kind").translate(_KIND_NORMAL)
        arabic = m.group("num").translate(FULL_WIDTH).isdigit()
        found.append(Heading(m.start(), m.end(), title, kind, number, arabic))
    return found


def _inline_title_length(after: str, usual: int | None) -> int:
    """How many characters of ``after`` (what follows 第N回 in run-on text) are the
    heading's title."""
    lead = len(after) - len(after.lstrip(_BLANK + ":：、."))
    rest = after[lead:]
    comma = re.match(r"[^，,。！？；：:「『“\"\s]{2,14}[，,]", rest)
    if comma:  # "宴桃園豪傑三結義，斬黃巾英雄首立功": a couplet around the comma
        half = comma.end() - 1
        return lead + min(len(rest), 2 * half + 1)
    window = rest[:40]
    for m in _OPENER_RE.finditer(window, 0, _MAX_INLINE_TITLE + 2):
        if m.start() >= 4:
            return lead + m.start()
    punct = re.search(r"[，,。！？；：:「『“\"]", window)
    limit = punct.start() if punct else len(window)
    length = usual or 14
    if length > limit:
        length = max(2, limit - 2 if limit > 6 else limit)
    return lead + length


def _inline_headings(text: str, start: int, end: int, previous: int) -> list[Heading]:
    """Headings inside one run-on stretch ``text[start:end]`` (no line breaks)."""
    picked: list[tuple[re.Match[str], int]] = []
    expected_kind: str | None = None
    for m in _INLINE_HEADING.finditer(text, start, end):
        number = chinese_number(m.group("num"))
        if number is None:
            continue
        kind = m.group("kind").translate(_KIND_NORMAL)
        if expected_kind and kind != expected_kind:
            continue
        nxt_number = str(previous + 1)
        if (
            number != previous + 1
            and all(ch in DIGITS for ch in m.group("num"))
            and "0" in nxt_number
            and nxt_number.replace("0", "") == str(number)
        ):
            number = previous + 1  # a scrape that lost the 〇 (第一回 after 第九十九回)
        nxt = text[m.end() : m.end() + 1]
        if nxt and nxt in _SENTENCE_START:
            continue
        before = text[max(start, m.start() - 12) : m.start()]
        strong = m.start() == start or bool(_CHAPTER_END.search(before))
        # A jump forward right after a sentence, a title run following (chapters
        # missing from the scrape): "…表白一番。第十二回名士大宴鶯脰腹…".
        jump = (
            number > previous
            and before[-1:] in _SENTENCE_STOP
            and _TITLE_RUN.match(text, m.end(), min(end, m.end() + 12)) is not None
        )
        if not strong and not jump and number != previous + 1:
            continue
        picked.append((m, number))
        previous = number
        expected_kind = kind
    # Titles: the couplet length most books keep, learnt from the unambiguous ones.
    lengths: Counter[int] = Counter()
    for m, _ in picked:
        after = text[m.end() : min(end, m.end() + 40)]
        window = after.lstrip(_BLANK + ":：、.")
        if re.match(r"[^，,。！？；：:「『“\"\s]{2,14}[，,]", window):
            continue
        for o in _OPENER_RE.finditer(window, 0, _MAX_INLINE_TITLE + 2):
            if o.start() >= 4:
                lengths[o.start()] += 1
                break
    usual = lengths.most_common(1)[0][0] if lengths else None
    found: list[Heading] = []
    for i, (m, number) in enumerate(picked):
        limit = picked[i + 1][0].start() if i + 1 < len(picked) else end
        after = text[m.end() : min(limit, m.end() + 60)]
        length = _inline_title_length(after, usual)
        title = _clean_title(text[m.start() : m.end() + length])
        kind = m.group("kind").translate(_KIND_NORMAL)
        arabic = m.group("num").translate(FULL_WIDTH).isdigit()
        found.append(Heading(m.start(), m.end() + length, title, kind, number, arabic))
    return found


def _run_on_spans(text: str) -> list[tuple[int, int]]:
    """The lines of over ``_RUN_ON_LINE`` characters, when they hold most of the text
    (a scrape that lost its line breaks); else none."""
    lengths = [len(line) for line in text.split("\n")]
    if sum(n for n in lengths if n > _RUN_ON_LINE) * 2 <= len(text):
        return []
    spans: list[tuple[int, int]] = []
    pos = 0
    for n in lengths:
        if n > _RUN_ON_LINE:
            spans.append((pos, pos + n))
        pos += n + 1
    return spans


def find_headings(text: str) -> list[Heading]:
    """Every chapter and volume heading of ``text``, in text order."""
    return _lost_zeros(_find_headings(text))


def _find_headings(text: str) -> list[Heading]:
    run_on = _run_on_spans(text)
    if not run_on:
        return _line_headings(text)
    headings: list[Heading] = []
    inside = 0
    line_found = _line_headings(text)
    previous = 0
    for a, b in run_on:
        headings.extend(h for h in line_found if inside <= h.start < a)
        for h in headings[::-1]:
            if h.number is not None and h.kind not in _VOLUME_KINDS:
                previous = h.number
                break
        inline = _inline_headings(text, a, b, previous)
        headings.extend(inline)
        if inline and inline[-1].number is not None:
            previous = inline[-1].number
        inside = b
    headings.extend(h for h in line_found if h.start >= inside)
    return headings


def _lost_zeros(headings: list[Heading]) -> list[Heading]:
    """Numbers read again where a scrape lost the 〇 of a digit-by-digit numeral: after
    第九十九回, ``第一回`` is 100 and ``第一一回`` 101 when that is the next number."""
    out: list[Heading] = []
    previous: dict[str, int] = {}
    for h in headings:
        if h.number is not None and h.kind:
            expected = previous.get(h.kind, 0) + 1
            if (
                h.number < expected
                and "0" in str(expected)
                and str(expected).replace("0", "") == str(h.number)
                and _positional(h)
            ):
                h = Heading(h.start, h.end, h.title, h.kind, expected, h.arabic)
            previous[h.kind] = h.number  # type: ignore[assignment]
        out.append(h)
    return out


def _positional(h: Heading) -> bool:
    m = re.match(rf"[【\[〔（(]?第[{_BLANK}]?([{NUMERAL_CHARS}]+)", h.title)
    return bool(m) and all(ch in DIGITS for ch in m.group(1))  # type: ignore[union-attr]


def strip_junk(text: str) -> str:
    """``text`` without site banner, advert and navigation lines: a line of at most
    ``_MAX_JUNK_LINE`` characters holding a junk word, or a navigation or rule line
    alone. Only short lines are searched (a book's paragraphs are mostly longer: the
    search then costs a few lines, not the whole text)."""
    lines = text.split("\n")
    keep = [
        line
        for line in lines
        if len(line) > _MAX_JUNK_LINE
        or not (_JUNK_WORDS.search(line) or _JUNK_LINE.fullmatch(line))
    ]
    return text if len(keep) == len(lines) else "\n".join(keep)


# Chapter-end marks of web serials, removed where they stand (not their line).
_END_MARK = re.compile(r"[（(](?:本章完|未完待续|未完待續|待续|待續)[）)]")


def _body(text: str) -> str:
    body = strip_junk(_END_MARK.sub("", text) if "（" in text or "(" in text else text)
    # Blank lines at the ends go; the first line's indentation stays.
    first = _NON_BLANK.search(body)
    if first is None:
        return ""
    return body[body.rfind("\n", 0, first.start()) + 1 :].rstrip()


def _visible(text: str) -> int:
    """Characters that are not blanks (the usual blanks counted in C: fast on a book)."""
    return len(text) - sum(text.count(ch) for ch in " \n\t\r\u3000\xa0")


def _label(h: Heading) -> str:
    """The numbered part of a heading ("第十二回"), or the whole heading."""
    m = re.match(r"[【\[〔（(]?第.{1,14}?[章回囘节節话話幕卷部集篇]", h.title)
    return m.group() if m and h.number is not None else h.title


def _describe(numbers: list[str], what: str) -> str:
    shown = ", ".join(numbers[:5])
    more = f" and {len(numbers) - 5} more" if len(numbers) > 5 else ""
    return f"{what} at {shown}{more} (kept the file's order)"


def _sections_inside_chapters(headings: list[Heading]) -> list[Heading]:
    """``第N节`` headings under ``第N章``/``第N回`` headings (a textbook's or a novel's
    sections, numbered again in each chapter) stay in their chapter's text."""
    kinds = {h.kind for h in headings}
    if "节" not in kinds or not kinds & {"章", "回"}:
        return headings
    first_section = next(i for i, h in enumerate(headings) if h.kind == "节")
    if not any(h.kind in ("章", "回") for h in headings[:first_section]):
        return headings
    return [h for h in headings if h.kind != "节"]


def split_chapters(text: str) -> tuple[str, list[ParsedChapter], list[str]]:
    """(front matter, chapters, warnings) of a whole book's text; see the module's rules.
    A text without any heading is one chapter titled "" and a warning."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    headings = _sections_inside_chapters(find_headings(text))
    warnings: list[str] = []
    if not headings:
        body = _body(text)
        warnings.append("no chapter headings found: the book is one chapter")
        return "", ([ParsedChapter(1, "", body)] if body else []), warnings
    chapter_level = any(h.kind and h.kind in "章回节话幕" for h in headings)
    bodies = [
        _body(text[h.end : headings[i + 1].start if i + 1 < len(headings) else len(text)])
        for i, h in enumerate(headings)
    ]
    front = text[: headings[0].start]
    # A table of contents: the first heading comes again later and the headings up to
    # there have (almost) no text.
    first = headings[0].key
    again = next((j for j in range(1, len(headings)) if headings[j].key == first), None)
    if again is not None and again >= 2:
        empty = sum(1 for b in bodies[:again] if _visible(b) < 40)
        if empty >= 0.8 * again:
            front = text[: headings[again].start]
            warnings.append(f"table of contents of {again} headings before the text: not chapters")
            headings, bodies = headings[again:], bodies[again:]
    volume = ""
    chapters: list[ParsedChapter] = []
    kept: list[Heading] = []
    skipped: list[str] = []
    short: list[str] = []
    for i, (h, body) in enumerate(zip(headings, bodies, strict=True)):
        if chapter_level and h.kind in _VOLUME_KINDS:
            volume = h.title
            kept.append(h)
            if _visible(body) < _SHORT_CHAPTER:
                continue  # a volume heading and perhaps a short line: the chapters follow
        elif not body:
            nxt = headings[i + 1] if i + 1 < len(headings) else None
            if nxt is None or nxt.key != h.key:
                skipped.append(h.title)
            continue  # else the same heading right after (a scraped page's title twice)
        else:
            kept.append(h)
        if _visible(body) < _SHORT_CHAPTER:
            short.append(f"{h.title} ({_visible(body)} characters)")
        chapters.append(ParsedChapter(len(chapters) + 1, h.title, body, volume))
    if skipped:
        warnings.append(_describe(skipped, "headings without text skipped"))
    if short:
        warnings.append(
            _describe(short, "very short chapters").replace(" (kept the file's order)", " (kept)")
        )
    warnings.extend(_order_warnings(kept, chapter_level))
    return front, chapters, warnings


def _order_warnings(headings: list[Heading], chapter_level: bool) -> list[str]:
    warnings: list[str] = []
    out_of_order: list[str] = []
    repeated: list[str] = []
    gaps: list[str] = []
    previous: Heading | None = None
    seen: set[tuple[str, str, int]] = set()
    volume = ""
    styles: set[bool] = set()
    for h in headings:
        if h.number is None:
            continue
        if chapter_level and h.kind in _VOLUME_KINDS:
            volume = h.title
            previous = None
            continue
        styles.add(h.arabic)
        if (volume, h.kind, h.number) in seen:
            repeated.append(_label(h))
        elif previous is not None and previous.kind == h.kind:
            if h.number < previous.number:  # type: ignore[operator]
                out_of_order.append(_label(h))
            elif h.number > previous.number + 1:  # type: ignore[operator]
                gaps.append(f"{_label(previous)} → {_label(h)}")
        seen.add((volume, h.kind, h.number))
        previous = h
    if out_of_order:
        warnings.append(_describe(out_of_order, "headings out of order"))
    if repeated:
        warnings.append(_describe(repeated, "headings repeated"))
    if gaps:
        warnings.append(
            _describe(gaps, "chapter numbers skip").replace(" (kept the file's order)", "")
        )
    if len(styles) > 1:
        warnings.append("headings mix Arabic and Chinese numerals (read both)")
    return warnings
