"""What the book readers (``tracker.books.parse``, ``tracker.books.epub``) share of a
book file's container: an HTML/XHTML page's text and ``<meta>`` tags, and an archive
(DOCX, EPUB) refused before it is read when it would expand past the limits."""

from __future__ import annotations

import io
import re
import zipfile

from tracker.books.types import BookFileError
from tracker.plumbing.config import ReadLimits

_META = re.compile(r"<meta\b[^>]*>", re.I)
_ATTR = re.compile(r"""(name|property|content)\s*=\s*["']([^"']*)["']""", re.I)


def html_meta(markup: str) -> dict[str, str]:
    """``<meta name=… content=…>`` pairs of a page (names lower-cased)."""
    out: dict[str, str] = {}
    for tag in _META.findall(markup[:50_000]):
        attrs = {k.lower(): v for k, v in _ATTR.findall(tag)}
        key = (attrs.get("name") or attrs.get("property") or "").lower()
        if key and "content" in attrs and key not in out:
            out[key] = attrs["content"].strip()
    return out


#: Elements that end a line: the crawler's block elements (``td`` too), and the
#: header and footer the crawler drops as boilerplate but a book keeps.
_BLOCKS = ("header", "footer")


def html_text(markup: str) -> tuple[str, str]:
    """(``<title>``, visible text with block elements as lines) of an HTML/XHTML page,
    headings kept (a main-text extractor would drop them). lxml; a page nested deeper
    than libxml2 builds is read by the crawler's streaming parser instead."""
    from tracker.crawler.extraction import (
        _BLOCK_TAGS,
        _DROP_ALWAYS,
        _html_title,
        _parse_html,
        _stream_extract,
        normalise_text,
    )

    root, too_deep = _parse_html(markup)
    if root is None or too_deep:
        return _stream_extract(markup)
    title = _html_title(markup, root)
    for element in list(root.iter(*_DROP_ALWAYS)):
        if element.getparent() is not None:
            element.drop_tree()
    for element in root.iter(*_BLOCK_TAGS, *_BLOCKS):
        element.tail = "\n" + (element.tail or "")
    return title, normalise_text(root.text_content())


def check_archive(name: str, data: bytes, limits: ReadLimits | None = None) -> None:
    """Refuse an archive (DOCX, EPUB) whose members would expand past the budget of
    every other archive before a library reads it whole: more than ``max_zip_bytes`` in
    all, a member over ``max_document_bytes``, or one compressed like a zip bomb."""
    from tracker.documents.readers import _bomb_like

    limits = limits or ReadLimits.from_env()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise BookFileError(f"{name}: not a valid zip/EPUB/DOCX file ({exc})") from None
    declared = sum(i.file_size for i in infos)
    if declared > limits.max_zip_bytes:
        raise BookFileError(
            f"{name}: expands to {declared} bytes, over the {limits.max_zip_bytes} allowed "
            "(YINJI_MAX_ZIP_MB; a zip bomb?): refused"
        )
    for info in infos:
        if info.file_size > limits.max_document_bytes or _bomb_like(info, limits):
            raise BookFileError(
                f"{name}!{info.filename}: too large or compressed like a zip bomb: refused"
            )
