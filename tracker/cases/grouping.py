"""What a case groups: a book (or a single work) copied on one site.

- ``book_ref(mother)``: the book a mother (a work of the library) is a chapter of, read
  from its metadata as the books contract of issue 36 writes it (``book_id``,
  ``book_title``, ``author``, ``chapter``, ``chapter_index``, ``volume``), falling back
  to the fields of libraries stored before books (``work``/``work_title``,
  ``book``/``book_title``): ``{"work": "shuihu", "work_title": "水浒传"}`` is the book
  ``shuihu`` titled 水浒传. Without either, a title in the usual ``《书名》章节名`` form
  (``《雾城旧梦》第一章 雾起``, the form the contract gives chapter mothers) names the
  book 雾城旧梦 and the chapter 第一章 雾起. Anything else is not in a book (None).
- ``site_of(url)``: the site a case is on, host and port: ``example.com`` for the
  scheme's default port, ``127.0.0.1:8001`` otherwise (two servers on one host are two
  sites, two platforms to notice).
- ``page_in_url(url)``: the page number a pirate site's URL states for a chapter's
  later page (``2_2.html`` → 2, ``?page=3`` → 3); used to order pages whose number was
  not recorded, never stated in a notice.
- ``url_order(u)``: the order of a case's URLs: chapter, then page, then when added.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from tracker.records import Mother, NotFound

from .chapters import chapter_number

if TYPE_CHECKING:
    from tracker.store import Store

    from .model import CaseURL

_DEFAULT_PORTS = {"http": 80, "https": 443}
_PAGE_SUFFIX = re.compile(r"[_-](\d{1,3})(?:\.[a-z0-9]{1,6})?/?$", re.I)
_PAGE_PARAMS = ("page", "p", "pn", "pageno")
_TITLED = re.compile(r"^\s*《([^《》]+)》\s*(\S.*)$", re.S)


@dataclass(frozen=True)
class BookRef:
    """The book a mother belongs to and its place in it."""

    book_id: str
    title: str
    author: str = ""
    chapter: str = ""  # the heading as in the book ("" when the book has none)
    chapter_index: int | None = None  # 1-based position in the book, when known
    volume: str = ""

    def zh_chapter(self) -> str:
        """``《西游记》第四十一回 心猿遭火败 木母被魔擒`` (the book alone without a heading)."""
        return f"《{self.title}》{self.chapter}"

    def en_chapter(self) -> str:
        """``"西游记", chapter 41 (第四十一回 心猿遭火败 木母被魔擒)``: the position is the
        chapter's place in the book, the heading is the book's own."""
        out = f'"{self.title}"'
        if self.chapter_index is not None:
            out += f", chapter {self.chapter_index}"
            if self.chapter:
                out += f" ({self.chapter})"
        elif self.chapter:
            out += f", {self.chapter}"
        return out


def _text(value: object) -> str:
    return str(value).strip() if isinstance(value, str | int) and str(value).strip() else ""


def _strip_book(title: str, book: str) -> str:
    """A chapter mother's title without the book's name before it
    (``《水浒传》第五回 …`` and ``水浒传 第五回 …`` → ``第五回 …``)."""
    text = (title or "").strip()
    for prefix in (f"《{book}》", book):
        if book and text.startswith(prefix) and len(text) > len(prefix):
            return text[len(prefix) :].lstrip(" 　·:：-—").strip()
    return text


def book_ref(mother: Mother) -> BookRef | None:
    """The book ``mother`` is a chapter of (see the module docstring), or None."""
    meta = mother.metadata or {}
    book_id = _text(meta.get("book_id"))
    title = _text(meta.get("book_title"))
    if not book_id:  # a library stored before books: work / book metadata
        book_id = _text(meta.get("work")) or _text(meta.get("book"))
        title = title or _text(meta.get("work_title"))
        if not title and not _text(meta.get("work")):
            title = _text(meta.get("book"))  # {"book": "红楼梦"}: the name is the title
        book_id = book_id or title  # {"work_title": "雾城旧梦"} alone: the title is the key
    if not book_id:
        found = _TITLED.match(mother.title or "")
        if found is None:
            return None
        book_id = title = found.group(1).strip()
        meta = {**meta, "chapter": found.group(2).strip()}
    title = title or book_id
    raw_chapter = meta.get("chapter")
    chapter = raw_chapter.strip() if isinstance(raw_chapter, str) else ""
    if not chapter and "chapter" not in meta:
        chapter = _strip_book(mother.title, title)
        if chapter in (title, f"《{title}》"):
            chapter = ""
    index = meta.get("chapter_index")
    if isinstance(raw_chapter, int) and not isinstance(raw_chapter, bool) and index is None:
        index = raw_chapter
    if not (isinstance(index, int) and not isinstance(index, bool) and index > 0):
        index = chapter_number(chapter) if chapter else None
    return BookRef(
        book_id=book_id,
        title=title,
        author=_text(meta.get("author")),
        chapter=chapter,
        chapter_index=index,
        volume=_text(meta.get("volume")),
    )


def book_of(store: Store | None, mother_id: str) -> BookRef | None:
    """The book of the mother ``mother_id`` in ``store`` (None: not in a book, or no
    such mother)."""
    if store is None or not mother_id:
        return None
    try:
        mother = store.get_mother(mother_id)
    except (NotFound, KeyError):
        return None
    return book_ref(mother)


def site_of(url: str) -> str:
    """``host`` or ``host:port`` (a port other than the scheme's default); "" for a
    URL without a host."""
    try:
        parts = urlsplit((url or "").strip())
        host = (parts.hostname or "").strip(".").lower()
        port = parts.port
    except ValueError:
        return ""
    if not host:
        return ""
    if ":" in host:  # an IPv6 literal keeps its brackets beside a port
        host = f"[{host}]"
    if port is None or _DEFAULT_PORTS.get(parts.scheme.lower()) == port:
        return host
    return f"{host}:{port}"


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
