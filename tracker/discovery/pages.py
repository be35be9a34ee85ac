"""A chapter a pirate site spreads over pages (``2.html``, then ``2_2.html`` ... each
linked from the one before by "下一页"), read as one chapter: the crawl stage of a
discovery run (a registered JieQi-style site, or any page it checks) follows a page's
"下一页" link when it leads to the next page of the same chapter, checks the pages'
text as one suspect with a capture per page (``Library.check_crawled``, the suspect's
``metadata.pages`` naming them in order), so that a confirmed match files each page
into the book's case (``tracker.cases.service.CaseService.file_match``), as the Legado
stage does (``tracker.discovery.legado.stage``).

The next page of a chapter: a "下一页" link (``tracker.cases.books.NEXT_PAGE_RE``) on the
same site whose URL is the page's own with the page number one higher: ``2.html`` →
``2_2.html`` (or ``2-2.html``) → ``2_3.html``; ``c.php?id=2`` → ``c.php?id=2&page=2``.
A "下一页" link to another chapter (``3.html``) is not a page of this one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit

if TYPE_CHECKING:
    from tracker.crawler import Page
    from tracker.crawler.crawler import ReadPage
    from tracker.discovery.runview import RunView
    from tracker.store import Suspect

__all__ = [
    "MAX_CHAPTER_PAGES",
    "chapter_suspect",
    "fetch_later_page",
    "is_next_page",
    "next_page_of",
    "read_chapter_pages",
]

#: How a page's body is read (``tracker.crawler.Crawler.crawl_page``'s ``reader``).
Reader = Callable[[bytes, str | None, str, str], "ReadPage"]

MAX_CHAPTER_PAGES = 10  # pages of one chapter read at most
_PAGE_IN_PATH = re.compile(r"^(?P<stem>.*?)(?:[_-](?P<n>\d{1,2}))?(?P<ext>\.[A-Za-z0-9]{1,6})?$")
_PAGE_PARAMS = ("page", "p", "pn", "pageno")


def _page_key(url: str) -> tuple[str, int] | None:
    """(the chapter the URL is a page of, the page's number), or None."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    query = parse_qsl(parts.query, keep_blank_values=True)
    number = 1
    kept = []
    for name, value in query:
        if name.lower() in _PAGE_PARAMS and value.isdigit():
            number = int(value)
        else:
            kept.append((name, value))
    path = parts.path
    if number == 1:
        found = _PAGE_IN_PATH.match(path.rsplit("/", 1)[-1])
        if found is not None and found.group("n"):
            head = path[: len(path) - len(found.group())]
            path = head + found.group("stem") + (found.group("ext") or "")
            number = int(found.group("n"))
    chapter = f"{parts.scheme}://{parts.netloc.lower()}{path}?{urlencode(sorted(kept))}"
    return chapter, number


def is_next_page(page_url: str, link_url: str) -> bool:
    """Whether ``link_url`` is the page after ``page_url`` of one chapter."""
    here, there = _page_key(page_url), _page_key(link_url)
    if here is None or there is None:
        return False
    return here[0] == there[0] and there[1] == here[1] + 1


def next_page_of(page: Page) -> str | None:
    """The URL of the next page of ``page``'s chapter ("下一页" to the same chapter's
    next page number), or None."""
    from tracker.cases.books import NEXT_PAGE_RE
    from tracker.crawler.links import page_links

    url = page.final_url
    links = page.links if page.links is not None else page_links(page.html, url)
    for link in links:
        if NEXT_PAGE_RE.match(link.text) and is_next_page(url, link.url):
            return link.url
    return None


def read_chapter_pages(
    first: Page, fetch: Callable[[str], Page | None], limit: int = MAX_CHAPTER_PAGES
) -> list[Page]:
    """``first`` and the chapter's next pages, in order, fetched by ``fetch`` (None: not
    fetched, e.g. the page budget is spent or the page failed; the chapter ends there),
    at most ``limit`` pages. A page without text, or with the text of a page already
    read (a thread whose "下一页" never ends), ends the chapter and is left out."""
    pages = [first]
    seen = {first.final_url}
    texts = {first.text.strip()}
    while len(pages) < limit:
        url = next_page_of(pages[-1])
        if url is None or url in seen:
            break
        page = fetch(url)
        if page is None or page.final_url in seen:
            break
        text = page.text.strip()
        if not text or text in texts:  # an endless "下一页" showing the same page again
            break
        seen.update((url, page.final_url))
        texts.add(text)
        pages.append(page)
    return pages


def chapter_suspect(pages: list[Page]) -> Suspect:
    """The suspect of a chapter read over ``pages``: the first page's (its URL and id),
    with the pages' texts in order and ``metadata.pages`` naming every page."""
    suspect = pages[0].to_suspect()
    if len(pages) > 1:
        suspect.text = "\n".join(p.text for p in pages)
        suspect.metadata["pages"] = [p.final_url for p in pages]
    return suspect


def fetch_later_page(run: RunView, source: str, url: str, reader: Reader) -> Page | None:
    """A later page of a chapter (``tracker.discovery.pages``), fetched from ``run``'s
    budget and recorded as seen (never queued, nor checked, on its own); None when not
    fetched (the budget is spent, or the page failed: said in the run's report)."""
    from tracker.crawler import CrawlError

    if not run.budget.take():
        return None
    try:
        page = run.crawler.crawl_page(url, screenshot=False, reader=reader)
    except Exception as exc:  # the chapter ends at the page before; the run goes on
        if isinstance(exc, CrawlError) and exc.status is None:
            run.budget.give_back()
        run.report.fail(source, str(exc) if isinstance(exc, CrawlError) else repr(exc))
        return None
    run.report.fetched += 1
    run.report.source(source).fetched += 1
    for seen in (url, page.final_url):
        run.frontier.mark_seen(seen)
    return page
