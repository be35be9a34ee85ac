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
4. checks each assembled chapter against the library (``Library.check_crawled``: the
   chapter becomes a suspect with its matches, as any crawled page; or ``check_text``
   with ``save=False``), and
5. files one case for the book on that domain (kind ``book``), whose URLs are the
   chapters that copy the library and whose metadata lists every chapter with its
   matches. The work is the ``work`` (or ``book``) metadata the matched mothers share
   (a book ingested chapter by chapter), else the mother matched most often.

Running it again (the daily watch) updates the same case: new chapters are added.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tracker.crawler.links import page_links, same_site, same_site_links
from tracker.records import JSONObject, Suspect
from tracker.rules import check_url, domain_of
from tracker.timefmt import iso_utc

from .chapters import in_chapter_order
from .model import Case, CaseError, CaseEvent, CaseURL, now
from .service import CaseService

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
class ChapterResult:
    n: int
    url: str
    title: str = ""
    pages: list[str] = field(default_factory=list)
    page_sha256: list[str] = field(default_factory=list)
    chars: int = 0
    matches: list[dict[str, Any]] = field(default_factory=list)
    suspect_id: str = ""
    error: str = ""

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
def _work_key(library: Library, mother_ids: list[str]) -> tuple[str, str, dict[str, str]]:
    """(work key, work title, mother id → work key) for the matched mothers."""
    keys: dict[str, str] = {}
    titles: dict[str, str] = {}
    for mid in dict.fromkeys(mother_ids):
        try:
            mother = library.store.get_mother(mid)
        except KeyError:
            keys[mid], titles[mid] = mid, mid
            continue
        meta = mother.metadata or {}
        key = str(meta.get("work") or meta.get("book") or mid)
        keys[mid] = key
        titles[key] = str(
            meta.get("work_title")
            or meta.get("book_title")
            or (mother.title if key == mid else key)
        )
    counts = Counter(keys[m] for m in mother_ids)
    best = counts.most_common(1)[0][0]
    return best, titles.get(best, best), keys


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
        texts: list[str] = []
        first_raw = b""
        fetched_pages: list[Any] = []  # each kept as a capture of the chapter's evidence
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
            chapter.pages.append(page.final_url or page_url)
            chapter.page_sha256.append(hashlib.sha256(page.raw).hexdigest())
            if not chapter.title:
                chapter.title = page.title
                first_raw = page.raw
            texts.append(page.text)
            fetched_pages.append(page)
            page_url = next_page_link(page.html, page.final_url or page_url, seen | chapter_set)
        text = "\n".join(t for t in texts if t.strip())
        chapter.chars = len(text)
        if text.strip():
            _check_chapter(library, chapter, text, first_raw, index_url, save, fetched_pages)
    report = BookReport(
        index_url=index_url,
        domain=domain_of(base),
        title=index.title,
        chapters=results,
        pages_fetched=fetched,
        truncated=truncated,
    )
    if svc is not None and report.matched:
        report.case = _file_case(svc, library, report, who)
    return report


def _check_chapter(
    library: Library,
    chapter: ChapterResult,
    text: str,
    raw: bytes,
    index_url: str,
    save: bool,
    pages: list[Any],
) -> None:
    if save:
        suspect = Suspect(
            id=hashlib.sha1(chapter.url.encode(), usedforsecurity=False).hexdigest(),
            text=text,
            title=chapter.title,
            url=chapter.url,
            source="book",
            raw=raw or None,
            metadata={
                "book_index": index_url,
                "chapter": chapter.n,
                "pages": chapter.pages,
                "page_sha256": chapter.page_sha256,
            },
        )
        # Stored and checked with a capture per page in the evidence log.
        matches = library.check_crawled(suspect, pages).matches
        chapter.suspect_id = suspect.id
    else:
        matches = library.check_text(text).matches
    chapter.matches = [
        {
            "mother_id": m.mother_id,
            "title": m.mother_title,
            "score": round(float(m.score), 4),
            "coverage": round(float(m.coverage), 4),
        }
        for m in matches
    ]


def _existing_case(svc: CaseService, report: BookReport) -> Case | None:
    """The active case this book run files into when there is one: the case of the
    same index, else a case already holding one of its chapters (one URL, one case)."""
    active = svc.active_cases_on(report.domain)
    for c in active:
        if (c.metadata.get("book") or {}).get("index_url") == report.index_url:
            return c
    chapters = {ch.url for ch in report.matched}
    return next((c for c in active if any(u.url in chapters for u in c.urls)), None)


def _file_case(svc: CaseService, library: Library, report: BookReport, who: str) -> Case:
    matched = report.matched
    work, title, _keys = _work_key(library, [m["mother_id"] for c in matched for m in c.matches])
    case = _existing_case(svc, report) or svc.open_case(
        work=work, domain=report.domain, who=who, work_title=title, kind="book"
    )
    # A chapter another active case holds stays there (one URL, one open case).
    elsewhere = {
        ch.url: held.id
        for ch in matched
        if (held := svc.case_holding(ch.url, report.domain)) is not None and held.id != case.id
    }

    def change(c: Case) -> list[CaseEvent]:
        added = 0
        if not c.work_title and title:
            c.work_title = title
        for ch in matched:
            if ch.url in elsewhere:
                continue
            best = max(ch.matches, key=lambda m: m["score"])
            for m in ch.matches:
                if m["mother_id"] not in c.mother_ids:
                    c.mother_ids.append(m["mother_id"])
            existing = c.url(ch.url)
            if existing is None:
                c.urls.append(
                    CaseURL(
                        url=ch.url,
                        suspect_id=ch.suspect_id,
                        mother_id=best["mother_id"],
                        score=best["score"],
                        coverage=best["coverage"],
                        label=ch.title or f"#{ch.n}",
                    )
                )
                added += 1
        c.kind = "book"
        c.metadata["book"] = {
            "index_url": report.index_url,
            "title": report.title,
            "checked_at": iso_utc(now()),
            "pages_fetched": report.pages_fetched,
            "truncated": report.truncated,
            "chapters": [ch.to_dict() for ch in report.chapters],
        }
        data = {
            "index_url": report.index_url,
            "chapters": len(report.chapters),
            "matched": len(matched),
            "added": added,
            "pages_fetched": report.pages_fetched,
            "truncated": report.truncated,
        }
        if elsewhere:
            data["held_by_other_cases"] = elsewhere
        return [CaseEvent(c.id, "book", who, data=data)]

    return svc.update(case.id, change)
