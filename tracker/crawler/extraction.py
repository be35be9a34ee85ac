"""Main-text extraction from decoded HTML: trafilatura first, then plain lxml text, then
tags stripped by regex. ``extract`` never raises on bad markup.

Pages that browsers show are read whatever their shape:

- **Any nesting depth.** libxml2 (under lxml and trafilatura) stops building the tree
  at 256 levels (2,048 with ``huge_tree``) and silently drops what lies deeper, where a
  browser flattens it and shows it. A page that trips the limit (lxml's error log says
  "Excessive depth") is read by a streaming pass of the standard library's
  ``html.parser`` instead: no tree, so no depth limit; scripts, styles and the head
  skipped, block elements as lines.
- **Display order.** The markup's text is put in display order before parsing
  (``tracker.text.textform.reading_order``; ``<bdo dir="rtl">`` and ``&#x202E;`` count as
  U+202E): a passage stored reversed and shown with an override reads as shown
  (trafilatura and lxml drop the invisible overrides, so it cannot wait).

trafilatura and lxml are imported inside the functions that need them, so importing this
module stays cheap.
"""

from __future__ import annotations

import contextlib
import html as html_lib
import logging
import re
from html.parser import HTMLParser
from typing import Any

from tracker.text.textform import reading_order

log = logging.getLogger(__name__)

_XML_DECL_STR_RE = re.compile(r"^\s*<\?xml[^>]*\?>", re.I)
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_TITLE_RE = re.compile(r"<title[^>]*>(.*?)</title", re.I | re.S)
_TAG_RE = re.compile(r"<[^>]*>")
_BLOCK_TAGS = tuple(
    [
        "p",
        "div",
        "br",
        "li",
        "tr",
        "td",
        "dd",
        "dt",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "blockquote",
        "pre",
    ]
)
_DROP_ALWAYS = ("script", "style", "noscript", "template", "svg", "iframe", "head")
_DROP_BOILERPLATE = ("nav", "footer", "header", "aside", "form")


def normalise_text(text: str) -> str:
    """Whitespace runs inside a line become one space; blank lines are dropped."""
    lines = (" ".join(line.split()) for line in text.replace("\r", "\n").split("\n"))
    return "\n".join(line for line in lines if line)


def _parse_html(markup: str) -> tuple[Any, bool]:
    """(lxml root or None, whether the page is nested deeper than libxml2 builds)."""
    from lxml import etree
    from lxml import html as lxml_html

    # lxml refuses str input that carries an encoding declaration, and control
    # characters are not allowed in its trees.
    cleaned = _CONTROL_RE.sub("", _XML_DECL_STR_RE.sub("", markup, count=1))
    if not cleaned.strip():
        return None, False
    parser = lxml_html.HTMLParser()
    try:
        root = lxml_html.document_fromstring(cleaned, parser=parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        root = None
    too_deep = any("Excessive depth" in e.message for e in parser.error_log)
    return root, too_deep


class _TextStream(HTMLParser):
    """Visible text of a page in one streaming pass (no tree: no depth limit)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self.skip: list[str] = []  # open elements whose content is not shown
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":
            self.skip.clear()  # an unclosed <head>: the body is shown all the same
        elif tag == "title":
            self.in_title = True
        elif tag in _DROP_ALWAYS:
            self.skip.append(tag)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        elif self.skip and tag == self.skip[-1]:
            self.skip.pop()
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        elif not self.skip:
            self.parts.append(data)


def _stream_extract(markup: str) -> tuple[str, str]:
    stream = _TextStream()
    stream.feed(markup)
    stream.close()
    return " ".join("".join(stream.title).split()), normalise_text("".join(stream.parts))


_BDO_RTL_RE = re.compile(r"(<bdo\b[^>]*\bdir\s*=\s*[\"']?rtl\b[^>]*>)", re.I)
_BDO_END_RE = re.compile(r"(</bdo\s*>)", re.I)


# U+202A-U+202E and U+2066-U+2069 written as character references (&#x202E; &#8238;).
_BIDI_REF_RE = re.compile(r"&#(?:[xX]0*(202[a-eA-E]|206[6-9])|0*(823[4-8]|829[4-7]));")
_EXPLICIT_RE = re.compile("[\u202a-\u202e\u2066-\u2069]")
_OPENERS = frozenset("\u202a\u202b\u202d\u202e")
_ISOLATES = frozenset("\u2066\u2067\u2068")
_SEGMENT_RE = re.compile(r"(<[^>]*>)")
_TAG_NAME_RE = re.compile(r"</?\s*([A-Za-z][A-Za-z0-9]*)")
_INLINE_TAGS = frozenset(
    [
        "a",
        "abbr",
        "b",
        "bdi",
        "bdo",
        "big",
        "cite",
        "code",
        "del",
        "dfn",
        "em",
        "font",
        "i",
        "ins",
        "kbd",
        "mark",
        "q",
        "s",
        "samp",
        "small",
        "span",
        "strong",
        "sub",
        "sup",
        "time",
        "u",
        "var",
    ]
)


def _bidi_ref(match: re.Match[str]) -> str:
    return chr(int(match.group(1), 16)) if match.group(1) else chr(int(match.group(2)))


def _display_order_markup(markup: str) -> str:
    """The page's text put in display order before any parser sees it: the extractors
    drop invisible characters, and with them what turned a reversed passage round.
    ``<bdo dir="rtl">`` becomes U+202E ... U+202C; each text between block tags is put
    in display order (``reading_order``), the overrides still open from the text before
    carried into it; inline tags (``<span>``, ``<b>``...) inside an open override are
    dropped, so a passage cut into one element per character still reads whole."""
    if "<bdo" in markup.lower():
        markup = _BDO_END_RE.sub("\u202c\\1", _BDO_RTL_RE.sub("\\1\u202e", markup))
    if "&#" in markup:
        markup = _BIDI_REF_RE.sub(_bidi_ref, markup)
    if not _EXPLICIT_RE.search(markup):
        return markup
    out: list[str] = []
    open_controls: list[str] = []  # explicit controls open at the end of ``buffer``
    buffer: list[str] = []  # the text of one run, inline tags inside an override dropped
    started: list[str] = []  # the controls open when the run began

    def flush() -> None:
        text = "".join(started) + "".join(buffer)
        out.append(reading_order(text) if _EXPLICIT_RE.search(text) else "".join(buffer))
        buffer.clear()
        started[:] = open_controls

    for piece in _SEGMENT_RE.split(markup):
        if not piece:
            continue
        if piece.startswith("<"):
            name = _TAG_NAME_RE.match(piece)
            if open_controls and name and name.group(1).lower() in _INLINE_TAGS:
                continue  # <span>字</span> per character must not cut the run
            flush()
            out.append(piece)
            continue
        buffer.append(piece)
        for ch in _EXPLICIT_RE.findall(piece):
            if ch in _OPENERS or ch in _ISOLATES:
                open_controls.append(ch)
            elif open_controls:  # PDF (U+202C) or PDI (U+2069) closes the last one
                open_controls.pop()
    flush()
    return "".join(out)


def _html_title(markup: str, root: Any = None) -> str:
    if root is not None:
        try:
            found = root.findtext(".//title")
        except Exception:
            found = None
        if found and found.strip():
            return " ".join(found.split())
    match = _TITLE_RE.search(markup)
    if match:
        return " ".join(html_lib.unescape(_TAG_RE.sub("", match.group(1))).split())
    return ""


def _fallback_text(markup: str, root: Any) -> str:
    """Plain lxml text: block elements become lines; boilerplate dropped if that leaves
    anything (recall matters more than precision here)."""
    if root is None:
        return normalise_text(html_lib.unescape(_TAG_RE.sub("\n", markup)))
    for element in list(root.iter(*_DROP_ALWAYS)):
        if element.getparent() is not None:
            element.drop_tree()
    for element in root.iter(*_BLOCK_TAGS):
        element.tail = "\n" + (element.tail or "")
    full = normalise_text(root.text_content())
    for element in list(root.iter(*_DROP_BOILERPLATE)):
        if element.getparent() is not None:
            element.drop_tree()
    trimmed = normalise_text(root.text_content())
    if trimmed or full:
        return trimmed or full
    # lxml gave nothing (too deep a tree, everything swallowed by an unclosed <title>):
    # stripping the tags still recovers the words.
    return normalise_text(html_lib.unescape(_TAG_RE.sub("\n", markup)))


def _trafilatura_title(tree: Any) -> str:
    """The title trafilatura's metadata pass gives (``<meta>`` tags, then JSON-LD, then
    the page's ``<h1>``/``<title>``), without the rest of that pass."""
    try:
        from trafilatura.metadata import examine_meta, extract_meta_json, extract_title

        meta = examine_meta(tree)
        with contextlib.suppress(Exception):  # trafilatura guards this call the same way
            meta = extract_meta_json(tree, meta)
        return str(meta.title or extract_title(tree) or "")
    except Exception as exc:  # a third-party parser on hostile markup: never fatal
        log.debug("title extraction failed: %s", exc)
        return ""


def extract(html: str, url: str) -> tuple[str, str]:
    """Main content of a page: ``(title, main_text)``, in display order. Never raises on
    bad markup."""
    title, text = _extract(_display_order_markup(html) if html else html, url)
    return reading_order(title), reading_order(text)


def _extract(html: str, url: str) -> tuple[str, str]:
    if not html or not html.strip():
        return "", ""
    try:
        root, too_deep = _parse_html(html)
    except Exception as exc:
        log.debug("lxml failed on %s: %s", url, exc)
        root, too_deep = None, False
    if too_deep:  # libxml2 would drop what lies deeper: read it as a stream
        try:
            return _stream_extract(html)
        except Exception as exc:
            log.debug("streaming extraction failed on %s: %s", url, exc)
    title = text = ""
    try:
        import trafilatura

        tree = trafilatura.load_html(html)
        title = _trafilatura_title(tree) if tree is not None else ""
        # Without its metadata pass: the title is all we need of it, and the date
        # search of that pass (htmldate, dateparser's locale regexes) was two thirds of
        # the CPU a crawled page cost (profiled on bench/simweb).
        doc = trafilatura.bare_extraction(
            tree if tree is not None else html,
            url=url or None,
            favor_recall=True,
            include_comments=False,
            with_metadata=False,
        )
    except Exception as exc:  # a third-party parser on hostile markup: never fatal
        log.debug("trafilatura failed on %s: %s", url, exc)
        doc = None
    if doc is not None:
        text = (doc.get("text") if isinstance(doc, dict) else getattr(doc, "text", "")) or ""
    title = " ".join(title.split())
    text = text.strip()
    if title and text:
        return title, text
    if not title:
        title = _html_title(html, root)
    if not text:
        try:
            text = _fallback_text(html, root)
        except Exception as exc:
            log.debug("fallback extraction failed on %s: %s", url, exc)
            text = normalise_text(html_lib.unescape(_TAG_RE.sub("\n", html)))
    return title, text
