"""What discovery searches a site for: a book (issue #36), never an id or a chapter.

A library's works are chapters of books (``docs/BOOKS.md``): each chapter's metadata has
``book_id``, ``book_title`` and ``author``; a legacy library has ``work``/``book`` (ids)
and ``work_title``/``book_title`` (titles) instead. A site is searched once per book, for
its title (and its author where a site's search takes one), found in this order:

1. ``book_title`` (or the legacy ``work_title``) of the chapter's metadata, or a legacy
   ``book``/``collection`` that holds a name rather than an id (``红楼梦``, not ``shuihu``);
2. the ``《书名》`` that opens the work's title (``《三国演义》宴桃园豪杰三结义`` → ``三国演义``);
3. the work's title itself, or its first word when what follows is a chapter heading
   (``红楼梦 第四回 …`` → ``红楼梦``), unless the title is only a chapter heading
   (``第一回 …``): such a work has no book to search for.

Ids (``book_id``, ``work``, ``book``) only group chapters into one book; they are never
searched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from tracker.common.records import ChapterRef, Mother

__all__ = ["BookTarget", "book_of", "book_targets"]

_ID = re.compile(r"^[A-Za-z0-9_.:/-]+$")  # an id (``shuihu``, ``b-12``), never searched
_BRACKETED = re.compile(r"^\s*[《〈<]([^》〉>]{1,60})[》〉>]")
_CHAPTER_HEAD = re.compile(
    r"^(第[零〇一二三四五六七八九十百千万两0-9０-９]+[章回节卷集部篇]|chapter\s*\d+|卷[一二三四五六七八九十]+)",
    re.I,
)


@dataclass
class BookTarget:
    """One book to look for: the title searched, its author, the chapters (work ids)."""

    key: str  # book_id (or a legacy work/book key, or the title): groups chapters
    title: str
    author: str = ""
    work_ids: list[str] = field(default_factory=list)


def _title_of(mother_title: str) -> str:
    title = mother_title.strip()
    m = _BRACKETED.match(title)
    if m:
        return m.group(1).strip()
    if not title or _CHAPTER_HEAD.match(title):
        return ""
    words = title.split()
    if len(words) > 1 and _CHAPTER_HEAD.match(words[1]):
        return words[0]
    return title


def book_of(mother: Mother) -> BookTarget | None:
    """The book ``mother`` is a chapter of (see the module docstring); None when there
    is no title to search for. The book is read by the one reader of a work's book
    (``tracker.common.records.ChapterRef``); what is searched is its title unless that title
    is only an id."""
    ref = ChapterRef.of(mother, from_title=True)
    title = ""
    if ref is not None and not (ref.book_title == ref.book_id and _ID.match(ref.book_title)):
        title = ref.book_title.strip().strip("《》")
    meta = mother.metadata or {}
    collection = str(meta.get("collection") or "").strip()
    if not title and collection and not _ID.match(collection):
        title = collection  # a legacy collection's name (鲁迅's 三闲集): the book's title
    if not title:
        title = _title_of(mother.title or "")
    if not title:
        return None
    key = _key_of(mother)
    return BookTarget(
        key=key or f"title:{title}",
        title=title,
        author=ref.author if ref is not None else "",
        work_ids=[mother.id],
    )


def _key_of(mother: Mother) -> str:
    """What groups chapters into one book: the reader's book id, else a legacy
    collection."""
    ref = ChapterRef.of(mother)
    if ref is not None:
        return ref.book_id
    return str((mother.metadata or {}).get("collection") or "").strip()


def book_targets(mothers: Iterable[Mother]) -> list[BookTarget]:
    """The distinct books of ``mothers`` (by ``BookTarget.key``), first seen first. A
    chapter with a book key but no title of its own joins the book of that key."""
    out: dict[str, BookTarget] = {}
    untitled: list[Mother] = []
    for mother in mothers:
        book = book_of(mother)
        if book is None:
            untitled.append(mother)
            continue
        have = out.get(book.key)
        if have is None:
            out[book.key] = book
        else:
            have.work_ids.append(mother.id)
            have.author = have.author or book.author
    for mother in untitled:
        key = _key_of(mother)
        if key in out:
            out[key].work_ids.append(mother.id)
    return list(out.values())
