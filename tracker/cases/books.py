"""Monitoring a whole pirate book: an index page with the chapter list, each chapter
perhaps split over "下一页" pages, all on one host.

``monitor_book(index_url, ...)``:

1. fetches the index through the ``Crawler`` (SSRF guard, robots.txt, per-host rate
   limit, GBK/GB18030/Big5 decoding: everything the crawler does for any page);
2. takes the chapter list: the index's links on the same site (host and port, either
   scheme: ``tracker.crawler.links``, the rule the site crawl uses too), in chapter
   order (第N章 in the link text, ``tracker.cases.chapters``; page order breaks ties),
   preferring those under the index's folder (not the site root),
   else those whose text reads like a chapter (第…章, Chapter 12); navigation links
   (首页, 目录, 下一页...) and other hosts' links (mirrors) are left out;
3. fetches each chapter and follows its "下一页" / "next page" links on the same site
   (never "下一章": that is the next chapter, fetched in its turn), with one budget of
   ``max_pages`` fetches for the whole book (index included);
4. checks each page of each chapter against the library on its own
   (``Library.check_crawled`` with that page's capture: every page is a suspect of its
   own URL, as ``yinji check URL`` would make it, with the page's own matches and
   figures; or ``check_text`` with ``save=False``), and
5. files the pages that copy the library through ``CaseService.file_pages``: one case
   per book of the library and site (host and port), titled after the book, whose
   URLs are the pages in chapter order, then page order (``2.html`` and ``2_2.html``
   are two URLs of chapter 2); the case of the book matched most keeps the run's
   metadata (every chapter with its pages and matches).

Running it again (the daily watch) updates the same case: new pages are added.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tracker.common.records import JSONObject
from tracker.common.rules import check_url, site_of
from tracker.common.timefmt import iso_utc
from tracker.crawler.links import page_links, same_site, same_site_links

from .chapters import in_chapter_order
from .grouping import book_of
from .model import Case, CaseError, CaseEvent, now
from .service import CaseService, PageCopy

if TYPE_CHECKING:
    from tracker.crawler.crawler import Crawler
    from tracker.library import Library

log = logging.getLogger(__name__)

WHO = "system:book"
DEFAULT_MAX_PAGES = 200
NEXT_PAGE_RE = re.compile(
    r"^\s*(下一页|下页|下一頁|下頁|next\s*page|next\s*›|next\s*»)\s*[>›»]*\s*$", re.I
)
NAV_RE = re.compile(
    r"^\s*(首页|首頁|目录|目錄|返回|上一页|上一頁|下一页|下一頁|上一章|下一章|书架|書架|排行|"
    r"加入书签|加入書籤|投票|推荐|登录|登錄|注册|註冊|home|index|prev|next|contents)",
    re.I,
)
CHAPTER_RE = re.compile(
    r"(第\s*[0-9０-９零〇一二三四五六七八九十百千万两]+\s*[章节節回卷集篇])|(chapter\s*\d+)|^\s*\d+\s*[.、:：]",
    re.I,
)


class BookError(CaseError):
    """The book cannot be monitored (index unreachable, no chapter list)."""


@dataclass
class PageResult:
    """One page of a chapter: its own suspect and matches."""

    n: int  # the page of the chapter, 1-based
    url: str
    title: str = ""
    sha256: str = ""
    chars: int = 0
    suspect_id: str = ""
    matches: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> JSONObject:
        return {
            "n": self.n,
            "url": self.url,
            "title": self.title,
            "sha256": self.sha256,
            "chars": self.chars,
            "suspect_id": self.suspect_id,
            "matches": self.matches,
        }


@dataclass
class ChapterResult:
    """A chapter of the pirate book: its pages; ``matches`` are every work any of its
    pages copies (each with its best page's figures), ``suspect_id`` its first page's."""

    n: int
    url: str
    title: str = ""
    pages: list[str] = field(default_factory=list)
    page_sha256: list[str] = field(default_factory=list)
    chars: int = 0
    matches: list[dict[str, Any]] = field(default_factory=list)
    suspect_id: str = ""
    error: str = ""
    page_results: list[PageResult] = field(default_factory=list)

    def to_dict(self) -> JSONObject:
        return {
            "n": self.n,
            "url": self.url,
            "title": self.title,
            "pages": self.pages,
            "page_sha256": self.page_sha256,
            "chars": self.chars,
            "matches": self.matches,
            "suspect_id": self.suspect_id,
            "error": self.error,
            "page_results": [p.to_dict() for p in self.page_results],
        }


@dataclass
class BookReport:
    index_url: str
    domain: str
    title: str
    chapters: list[ChapterResult]
    pages_fetched: int
    truncated: bool
    case: Case | None = None

    @property
    def matched(self) -> list[ChapterResult]:
        return [c for c in self.chapters if c.matches]

    @property
    def suspect_ids(self) -> list[str]:
        """Every page's suspect (a chapter over two pages: two)."""
        return [p.suspect_id for c in self.chapters for p in c.page_results if p.suspect_id]

    def to_dict(self) -> JSONObject:
        return {
            "index_url": self.index_url,
            "domain": self.domain,
            "title": self.title,
            "pages_fetched": self.pages_fetched,
            "truncated": self.truncated,
            "chapters": [c.to_dict() for c in self.chapters],
            "matched_chapters": len(self.matched),
            "case_id": self.case.id if self.case else None,
            "case_state": self.case.state if self.case else None,
        }


# --- links ----------------------------------------------------------------------------------
def chapter_links(html: str, index_url: str) -> list[str]:
    """The chapter list of an index page (see the module docstring); links off the
    index's site are never chapters (``tracker.crawler.links``)."""
    index_path = urlsplit(index_url).path or "/"
    folder = index_path if index_path.endswith("/") else index_path.rsplit("/", 1)[0] + "/"
    same = [link for link in same_site_links(html, index_url) if not NAV_RE.match(link.text)]
    under = [
        link
        for link in same
        if folder != "/"  # a book at the site's root: its folder says nothing
        and urlsplit(link.url).path.startswith(folder)
        and urlsplit(link.url).path != index_path
    ]
    named = [link for link in same if CHAPTER_RE.search(link.text)]
    chosen = under or named or same
    # Chapter order (第N章 in the link text), page order breaking ties: an index that
    # lists its newest chapter first still yields 1, 2, 3.
    return [link.url for link in in_chapter_order(chosen, lambda link: link.text)]


def next_page_link(html: str, page_url: str, skip: set[str]) -> str | None:
    """The "下一页" link of a chapter page on the same site, unless it leads to a URL
    in ``skip`` (pages seen, chapters of the list)."""
    for link in page_links(html, page_url):
        if NEXT_PAGE_RE.match(link.text) and same_site(link.url, page_url) and link.url not in skip:
            return link.url
    return None


# --- monitoring -------------------------------------------------------------------------------
def monitor_book(
    index_url: str,
    *,
    crawler: Crawler,
    library: Library,
    svc: CaseService | None = None,
    max_pages: int = DEFAULT_MAX_PAGES,
    save: bool = True,
    who: str = WHO,
) -> BookReport:
    """Crawl one book (index, chapters, next pages) within ``max_pages`` fetches, check
    every chapter, and file one case for the book when ``svc`` is given and chapters
    copy the library. Raises ``BookError`` when the index cannot be read."""
    from tracker.crawler import CrawlError

    try:
        index_url = check_url(index_url, "book URL")
    except ValueError as exc:
        raise BookError(str(exc)) from None
    if max_pages < 1:
        raise BookError(f"max_pages must be at least 1, got {max_pages}")
    try:
        index = crawler.crawl_page(index_url)
    except CrawlError as exc:
        raise BookError(f"cannot read the book's index: {exc}") from None
    fetched = 1
    base = index.final_url or index_url
    chapters_urls = chapter_links(index.html, base)
    if not chapters_urls:
        raise BookError(f"no chapter links on the same host found on {base}")
    chapter_set = set(chapters_urls)
    results: list[ChapterResult] = []
    truncated = False
    for n, url in enumerate(chapters_urls, 1):
        if fetched >= max_pages:
            truncated = True
            break
        chapter = ChapterResult(n, url)
        results.append(chapter)
        page_url: str | None = url
        seen: set[str] = set()
        while page_url is not None:
            if fetched >= max_pages:
                truncated = True
                break
            seen.add(page_url)
            try:
                page = crawler.crawl_page(page_url)
            except CrawlError as exc:
                fetched += 1 if exc.status is not None else 0
                chapter.error = str(exc)
                break
            fetched += 1
            final = page.final_url or page_url
            chapter.pages.append(final)
            chapter.page_sha256.append(hashlib.sha256(page.raw).hexdigest())
            chapter.title = chapter.title or page.title
            chapter.chars += len(page.text)
            result = PageResult(len(chapter.pages), final, page.title, chapter.page_sha256[-1])
            result.chars = len(page.text)
            chapter.page_results.append(result)
            if page.text.strip():
                _check_page(library, chapter, result, page, index_url, save)
            page_url = next_page_link(page.html, final, seen | chapter_set)
        chapter.matches = _chapter_matches(chapter.page_results)
        chapter.suspect_id = chapter.page_results[0].suspect_id if chapter.page_results else ""
    report = BookReport(
        index_url=index_url,
        domain=site_of(base),  # the site: host and port, as its case names it
        title=index.title,
        chapters=results,
        pages_fetched=fetched,
        truncated=truncated,
    )
    if svc is not None and report.matched:
        report.case = _file_case(svc, library, report, who)
    return report


def _check_page(
    library: Library,
    chapter: ChapterResult,
    result: PageResult,
    page: Any,
    index_url: str,
    save: bool,
) -> None:
    """Check one page of a chapter on its own: a suspect of its own URL (the id
    ``yinji check URL`` gives it), with the page's capture in the evidence log."""
    if save:
        suspect = page.to_suspect()
        suspect.source = "book"
        suspect.metadata.update(
            {"book_index": index_url, "chapter": chapter.n, "page": result.n, "pages": [result.url]}
        )
        matches = library.check_crawled(suspect, [page]).matches
        result.suspect_id = suspect.id
    else:
        matches = library.check_text(page.text).matches
    result.matches = [
        {
            "mother_id": m.mother_id,
            "title": m.mother_title,
            "score": round(float(m.score), 4),
            "coverage": round(float(m.coverage), 4),
        }
        for m in matches
    ]


def _chapter_matches(pages: list[PageResult]) -> list[dict[str, Any]]:
    """Every work the chapter's pages copy, each with the figures of its best page."""
    best: dict[str, dict[str, Any]] = {}
    for p in pages:
        for m in p.matches:
            if m["mother_id"] not in best or m["score"] > best[m["mother_id"]]["score"]:
                best[m["mother_id"]] = {**m, "page": p.n, "url": p.url}
    return sorted(best.values(), key=lambda m: -m["score"])


def _file_case(svc: CaseService, library: Library, report: BookReport, who: str) -> Case | None:
    """File every page that copies the library (``CaseService.file_pages``: one case
    per book and site, pages in chapter order) and record the run on the case that
    holds most of them."""
    pages = [
        PageCopy(
            url=p.url,
            suspect_id=p.suspect_id,
            mother_id=best["mother_id"],
            score=best["score"],
            coverage=best["coverage"],
            page=p.n,
            label=p.title or ch.title or f"#{ch.n}",
            mother_title=best["title"],
        )
        for ch in report.chapters
        for p in ch.page_results
        if p.matches and (best := max(p.matches, key=lambda m: m["score"]))
    ]
    # Pages of works in no book of the library stay together as the pirate book they
    # are (under the work they copy most), as book runs always filed them.
    loose = Counter(p.mother_id for p in pages if book_of(library.store, p.mother_id) is None)
    loose_key = loose.most_common(1)[0][0] if loose else None
    cases = svc.file_pages(pages, who=who, matches=library.store, kind="book", loose_key=loose_key)
    holding = {u.url: c.id for c in cases for u in c.urls}
    counts = Counter(holding[p.url] for p in pages if p.url in holding)
    if not counts:  # every page is held by an open case of another work
        return svc.case_holding(pages[0].url) if pages else None
    main = next(c for c in cases if c.id == counts.most_common(1)[0][0])
    elsewhere = {p.url: holding[p.url] for p in pages if holding.get(p.url, main.id) != main.id}
    unfiled = [p.url for p in pages if p.url not in holding]

    def change(c: Case) -> list[CaseEvent]:
        c.metadata["book"] = {
            "index_url": report.index_url,
            "title": report.title,
            "checked_at": iso_utc(now()),
            "pages_fetched": report.pages_fetched,
            "truncated": report.truncated,
            "chapters": [ch.to_dict() for ch in report.chapters],
        }
        data: JSONObject = {
            "index_url": report.index_url,
            "chapters": len(report.chapters),
            "matched": len(report.matched),
            "pages_matched": len(pages),
            "pages_fetched": report.pages_fetched,
            "truncated": report.truncated,
        }
        if elsewhere:
            data["in_other_cases"] = elsewhere
        if unfiled:
            data["held_by_other_cases"] = unfiled
        return [CaseEvent(c.id, "book", who, data=data)]

    return svc.update(main.id, change)
