"""Main-text extraction from decoded HTML: trafilatura first, then plain lxml text, then
tags stripped by regex. ``extract`` never raises on bad markup.

trafilatura and lxml are imported inside the functions that need them, so importing this
module stays cheap.
"""

from __future__ import annotations

import html as html_lib
import logging
import re
from typing import Any

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


def _parse_html(markup: str) -> Any:
    from lxml import etree
    from lxml import html as lxml_html

    # lxml refuses str input that carries an encoding declaration, and control
    # characters are not allowed in its trees.
    cleaned = _CONTROL_RE.sub("", _XML_DECL_STR_RE.sub("", markup, count=1))
    if not cleaned.strip():
        return None
    try:
        return lxml_html.document_fromstring(cleaned)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return None


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


def extract(html: str, url: str) -> tuple[str, str]:
    """Main content of a page: ``(title, main_text)``. Never raises on bad markup."""
    if not html or not html.strip():
        return "", ""
    title = text = ""
    try:
        import trafilatura

        doc = trafilatura.bare_extraction(
            html,
            url=url or None,
            favor_recall=True,
            include_comments=False,
            with_metadata=True,
        )
    except Exception as exc:  # a third-party parser on hostile markup: never fatal
        log.debug("trafilatura failed on %s: %s", url, exc)
        doc = None
    if doc is not None:
        if isinstance(doc, dict):
            title, text = doc.get("title") or "", doc.get("text") or ""
        else:
            title, text = getattr(doc, "title", "") or "", getattr(doc, "text", "") or ""
    title = " ".join(title.split())
    text = text.strip()
    if title and text:
        return title, text
    try:
        root = _parse_html(html)
    except Exception as exc:
        log.debug("lxml failed on %s: %s", url, exc)
        root = None
    if not title:
        title = _html_title(html, root)
    if not text:
        try:
            text = _fallback_text(html, root)
        except Exception as exc:
            log.debug("fallback extraction failed on %s: %s", url, exc)
            text = normalise_text(html_lib.unescape(_TAG_RE.sub("\n", html)))
    return title, text
