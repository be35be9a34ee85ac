"""The link policy of a discovery crawl, as data: which links of a fetched page are
followed, and how soon (a lower priority is fetched first).

- a site search's results that name the book (``search_result``, the first
  ``search_results`` of them); a search that went straight to a book is its index;
- a book index's chapters and its next page (``index``);
- a page that matched (or a near-duplicate of one): its "目录" link (``matched_index``),
  its chapter links and next page (``matched_chapter``), and the other pages of its site
  (``matched_site``, the first ``matched_site_links``, explored as if found by a search);
- a page that did not match, up to ``max_depth`` links from its seed: its chapter links
  (``unmatched_chapter`` + depth), then any link (``unmatched_other`` + depth, the first
  ``unmatched_links``), except from a seed that is a book index (``index_chapters``
  chapter links or more).

``LinkPolicy.follow`` names the links to a callback ``add(url, priority, kind="page",
depth=None, chapter=False)``; the run queues them (``DiscoveryRun._follow``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracker.crawler import Page
    from tracker.discovery.frontier import FrontierItem

__all__ = ["LinkPolicy"]

Add = Callable[..., None]


@dataclass(frozen=True)
class LinkPolicy:
    search_result: float = 1.5
    search_results: int = 5
    index: float = 2.0
    matched_index: float = 2.0
    matched_chapter: float = 3.0
    matched_site: float = 10.0
    matched_site_links: int = 200
    unmatched_chapter: float = 20.0
    unmatched_other: float = 40.0
    unmatched_links: int = 100
    index_chapters: int = 10
    max_depth: int = 2

    def follow(
        self, item: FrontierItem, page: Page, matched: bool, search_hint: str, add: Add
    ) -> bool:
        """Name the links of ``item``'s page worth following to ``add`` (see the module
        docstring). False when the page was a site search showing neither results nor
        a book (the run says why); ``item.kind`` becomes "index" when a search went
        straight to the book."""
        from tracker.cases.books import CHAPTER_RE, NEXT_PAGE_RE, chapter_links
        from tracker.crawler.links import page_links, same_site
        from tracker.discovery.sites import result_links

        html, base = page.html, page.final_url
        if item.kind == "search":
            books = result_links(html, base, search_hint)
            if books:
                for url in books[: self.search_results]:
                    add(url, self.search_result, "index")
                return True
            if len(chapter_links(html, base)) < 2:
                return False
            item.kind = "index"  # a search that went straight to the book
        found = page.links if page.links is not None else page_links(html, base)
        links = [(link.url, link.text) for link in found]
        nexts = [u for u, text in links if NEXT_PAGE_RE.match(text) and same_site(u, base)]
        if item.kind == "index":
            for url in chapter_links(html, base):
                add(url, self.index, chapter=True)
            for url in nexts[:1]:  # a chapter list over several pages
                add(url, self.index, "index")
            return True
        chapterish = [u for u, text in links if CHAPTER_RE.search(text) or "下一章" in text]
        if matched:
            for u, text in links:
                if "目录" in text or "目錄" in text:
                    add(u, self.matched_index, "index")
            for u in chapterish:
                add(u, self.matched_chapter, chapter=True)
            for u in nexts[:1]:  # the copy goes on on the next page
                add(u, self.matched_chapter)
            # A site that copied one work has often copied more: its other pages are
            # explored as if found by a search (two links deep, behind the chapters).
            for u, _ in links[: self.matched_site_links]:
                if same_site(u, base):
                    add(u, self.matched_site, depth=0)
            return True
        if item.depth >= self.max_depth:
            return True
        for u in chapterish:
            add(u, self.unmatched_chapter + item.depth, chapter=True)
        if item.depth == 0 and len(chapterish) >= self.index_chapters:
            return True  # a book index found by a search
        for u, _ in links[: self.unmatched_links]:
            add(u, self.unmatched_other + item.depth)
        return True
