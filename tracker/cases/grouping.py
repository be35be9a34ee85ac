"""What a case groups: a book (or a single work) copied on one site.

- ``book_of(store, mother_id)``: the book a mother (a work of the library) is a
  chapter of: ``tracker.common.records.ChapterRef.from_metadata``, the one reader of a work's
  book; a library not yet migrated to books (``tracker.books.model.MIGRATED_META``
  unset) still has its ``《书名》章节名`` titles read as book and chapter, as the
  migration will record them.
- a case's site is ``tracker.common.rules.site_of`` (host, and port when not the scheme's
  default); ``host_of(site)`` its host.
- ``page_in_url(url)``: the page number a pirate site's URL states for a chapter's
  later page (``2_2.html`` → 2, ``?page=3`` → 3); used to order pages whose number was
  not recorded, never stated in a notice.
- ``url_order(u)``: the order of a case's URLs: chapter, then page, then when added.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from tracker.books.model import MIGRATED_META
from tracker.common.records import ChapterRef, Mother, NotFound

from .chapters import chapter_number

if TYPE_CHECKING:
    from tracker.store import Store

    from .model import CaseURL

_PAGE_SUFFIX = re.compile(r"[_-](\d{1,3})(?:\.[a-z0-9]{1,6})?/?$", re.I)
_PAGE_PARAMS = ("page", "p", "pn", "pageno")


def book_ref(store: Store, mother: Mother) -> ChapterRef | None:
    """The book ``mother`` of ``store`` is a chapter of (see the module docstring)."""
    ref = ChapterRef.of(mother)
    if ref is not None:
        return ref
    titled = ChapterRef.of(mother, from_title=True)
    if titled is None or store.get_meta(MIGRATED_META) is not None:
        return None
    return titled


def book_of(store: Store | None, mother_id: str) -> ChapterRef | None:
    """The book of the mother ``mother_id`` in ``store`` (None: not in a book, or no
    such mother)."""
    if store is None or not mother_id:
        return None
    try:
        mother = store.get_mother(mother_id)
    except (NotFound, KeyError):
        return None
    return book_ref(store, mother)


def host_of(site: str) -> str:
    """The host of a site key (``127.0.0.1:8001`` → ``127.0.0.1``)."""
    site = (site or "").strip().lower()
    if site.startswith("["):
        return site[1:].split("]", 1)[0]
    head, sep, tail = site.rpartition(":")
    return head if sep and tail.isdigit() and ":" not in head else site


def page_in_url(url: str) -> int | None:
    """The page number the URL states for a later page of a chapter, or None."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    query = parse_qs(parts.query)
    for name in _PAGE_PARAMS:
        values = query.get(name)
        if values and values[0].isdigit():
            return int(values[0])
    found = _PAGE_SUFFIX.search(parts.path)
    return int(found.group(1)) if found else None


def url_order(u: CaseURL) -> tuple[int, int, int]:
    """Chapter (its index, else the number its label states; unknown last), then the
    page (recorded, else the one its URL states, else 1); Python's stable sort keeps
    the order added within."""
    chapter = u.chapter_index
    if chapter is None:
        chapter = chapter_number(u.chapter) or chapter_number(u.label)
    page = u.page or page_in_url(u.url) or 1
    return (0 if chapter is not None else 1, chapter or 0, page)
