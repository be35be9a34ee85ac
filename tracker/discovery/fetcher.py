"""The fetcher of a discovery crawl: the run's page budget, how a page is read (to be
checked, or only followed), and what a fetch gave.

- ``PageBudget``: the run's page budget, a counter in this process or one shared by the
  run's crawl processes; a URL the guard refused costs nothing (``refused``).
- ``read_to_check`` / ``read_links``: pure functions of a body (they run in the reader
  process), with the links of a page bounded (``MAX_LINKS``) and a page of more than
  ``LINK_FARM`` links read as a list of links.
- ``Fetched``: a frontier item with its page or its error.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tracker.discovery.frontier import FrontierItem

if TYPE_CHECKING:
    from tracker.crawler.crawler import ReadPage

__all__ = [
    "LINK_FARM",
    "MAX_LINKS",
    "Fetched",
    "PageBudget",
    "read_links",
    "read_to_check",
    "refused",
]


class SharedCounter(Protocol):
    """A ``multiprocessing.Value`` of an integer: its lock and its value."""

    value: int

    def get_lock(self) -> AbstractContextManager[object]: ...


class PageBudget:
    """The run's page budget: a counter in this process, or one shared by the run's
    crawl processes (``multiprocessing.Value``), taken one page at a time."""

    def __init__(self, total: int, shared: SharedCounter | None = None) -> None:
        self.total, self.shared, self._taken = total, shared, 0

    def take(self) -> bool:
        if self.shared is None:
            if self._taken >= self.total:
                return False
            self._taken += 1
            return True
        with self.shared.get_lock():
            if self.shared.value >= self.total:
                return False
            self.shared.value += 1
            return True

    def give_back(self) -> None:
        if self.shared is None:
            self._taken -= 1
        else:
            with self.shared.get_lock():
                self.shared.value -= 1


MAX_LINKS = 2000  # links of a page discovery reads (a page's first ones)
LINK_FARM = 5000  # anchors above which a page is a list of links: no main text extracted


def read_links(body: bytes, content_type: str | None, mime: str, url: str) -> ReadPage:
    """A page discovery follows but does not check (a site search, a chapter list):
    decoded and its first ``MAX_LINKS`` links parsed, its main text not extracted
    (trafilatura is most of what reading a page costs)."""
    from tracker.crawler.crawler import ReadPage
    from tracker.crawler.decoding import decode_html
    from tracker.crawler.links import page_links

    html, encoding = decode_html(body, content_type)
    links = [] if mime == "text/plain" else page_links(html, url, limit=MAX_LINKS)
    return ReadPage(html, encoding, "", "", links)


def read_to_check(body: bytes, content_type: str | None, mime: str, url: str) -> ReadPage:
    """A page discovery checks: decoded, its main text extracted and its first
    ``MAX_LINKS`` links parsed, as ``tracker.crawler.crawler.read_page``; a page of more
    than ``LINK_FARM`` links is a list of links, read as ``read_links`` (no text to
    copy; extracting one of 100,000 links took the extractor 47 s). Pure: it runs in
    the reader process."""
    from tracker.crawler.crawler import ReadPage
    from tracker.crawler.decoding import decode_html
    from tracker.crawler.extraction import extract, normalise_text
    from tracker.crawler.links import page_links

    html, encoding = decode_html(body, content_type)
    if mime == "text/plain":
        return ReadPage(html, encoding, "", normalise_text(html), [])
    if html.count("<a ") + html.count("<A ") > LINK_FARM:
        return ReadPage(html, encoding, "", "", page_links(html, url, limit=MAX_LINKS))
    title, main = extract(html, url)
    return ReadPage(html, encoding, title, main, page_links(html, url, limit=MAX_LINKS))


@dataclass
class Fetched:
    item: FrontierItem
    page: Any = None
    error: Exception | None = None


def refused(exc: BaseException) -> bool:
    """A URL the SSRF guard or robots.txt refused, or whose host does not resolve: the
    request never reached a server, so it costs no page of the budget."""
    from tracker.crawler import Blocked, InvalidURL, RobotsDisallowed, Unreachable

    if isinstance(exc, Blocked | InvalidURL | RobotsDisallowed):
        return True
    return isinstance(exc, Unreachable) and "resolve" in str(exc)
