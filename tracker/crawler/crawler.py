"""``Crawler``: fetch a suspect page safely, decode it, extract its main text.

It puts the pieces of the package together: the SSRF guard (``guard``), the HTTP
fetcher (``fetch``), robots.txt (``robots``), per-host pacing (``ratelimit``), charset
decoding (``decoding``) and main-text extraction (``extraction``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from tracker.crawler.config import CrawlerConfig
from tracker.crawler.decoding import decode_html
from tracker.crawler.extraction import extract, normalise_text
from tracker.crawler.fetch import Fetcher, Request, mime_of
from tracker.crawler.guard import prepare
from tracker.crawler.links import Link, page_links
from tracker.crawler.ratelimit import Deadline, HostRateLimiter
from tracker.crawler.results import FetchResult, Page
from tracker.crawler.robots import RobotsCache
from tracker.crawler.screenshot import Screenshotter, find_browser, unavailable
from tracker.plumbing.config import SettingError


@dataclass(frozen=True)
class ReadPage:
    """A body decoded (``html``, ``encoding``) and its main text extracted."""

    html: str
    encoding: str
    title: str
    text: str
    links: list[Link] | None = None  # its links (``links.page_links``) when asked for


def read_page(
    body: bytes, content_type: str | None, mime: str, final_url: str, links: bool = False
) -> ReadPage:
    """Decode ``body`` (its ``Content-Type`` header) and extract its title and main text
    (and, with ``links``, its links). A pure function of its arguments: it may run in
    another process."""
    text, encoding = decode_html(body, content_type)
    if mime == "text/plain":
        # Pirated novels are often served as .txt: there is no markup to extract from.
        return ReadPage(text, encoding, "", normalise_text(text), [] if links else None)
    title, main = extract(text, final_url)
    found = page_links(text, final_url) if links else None
    return ReadPage(text, encoding, title, main, found)


class Crawler:
    """Fetches pages under ``CrawlerConfig``. Thread-safe: share one per process."""

    def __init__(self, config: CrawlerConfig | None = None) -> None:
        self.config = config or CrawlerConfig()
        self._limiter = HostRateLimiter(self.config.min_interval)
        self._fetcher = Fetcher(self.config, self._limiter)
        self._robots = RobotsCache(self.config, self._fetcher, self._limiter)
        self._screenshots = Screenshotter(self.config)
        if self.config.screenshots == "on":
            why = unavailable(self.config)
            if why is None and find_browser(self.config) is None:
                why = "no Chromium found (set YINJI_CHROMIUM)"
            if why is not None:
                raise SettingError(
                    f"YINJI_SCREENSHOTS=on but {why.removeprefix('no screenshot: ')}"
                )

    # -- lifecycle --
    def close(self) -> None:
        self._fetcher.close()

    def __enter__(self) -> Crawler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public API --
    def fetch(self, url: str, *, request: Request | None = None) -> FetchResult:
        """GET ``url`` (following redirects) and return the content-decoded body;
        ``request`` sends another method, a body or headers instead (a POST search).

        Raises a ``CrawlError`` subclass; nothing else escapes for network problems.
        """
        started = time.monotonic()
        deadline = Deadline(self.config.total_timeout)
        target, response, redirects = self._fetcher.fetch(
            url,
            deadline,
            robots=self._robots.check if self.config.respect_robots else None,
            text_only=True,
            max_bytes=self.config.max_bytes,
            truncate=False,
            request=request,
        )
        return FetchResult(
            url=url,
            final_url=target.url,
            status=response.status,
            headers=response.headers,
            body=response.body,
            content_type=mime_of(response.headers.get("content-type")),
            redirects=[hop.url for hop in redirects],
            fetched_at=response.received_at or datetime.now(UTC),
            elapsed=time.monotonic() - started,
            hops=redirects,
            header_pairs=response.header_pairs,
            resolved_ip=response.peer_ip,
            peer_cert=response.peer_cert,
            request_headers=response.request_headers,
        )

    def crawl_page(
        self,
        url: str,
        *,
        screenshot: bool | None = None,
        reader: Callable[[bytes, str | None, str, str], ReadPage] | None = None,
        request: Request | None = None,
    ) -> Page:
        """Fetch, decode and extract: the ready-to-store suspect page, with what its
        capture needs (``Page.to_capture``). A full-page screenshot is taken when the
        config's ``screenshots`` allows it (``screenshot=False`` skips it for this page;
        ``True`` takes one even when the mode is ``off``). ``reader`` decodes and
        extracts instead of ``read_page`` (the same function run elsewhere, such as in
        another process: discovery's crawl)."""
        result = self.fetch(url, request=request)
        read = (reader or read_page)(
            result.body, result.headers.get("content-type"), result.content_type, result.final_url
        )
        text, encoding, title, main = read.html, read.encoding, read.title, read.text
        links = read.links
        page = Page(
            url=url,
            final_url=result.final_url,
            status=result.status,
            headers=result.headers,
            encoding=encoding,
            raw=result.body,
            html=text,
            title=title,
            text=main,
            fetched_at=result.fetched_at,
            redirects=list(result.hops),
            header_pairs=result.header_pairs,
            resolved_ip=result.resolved_ip,
            peer_cert=result.peer_cert,
            request_headers=result.request_headers,
            links=links,
        )
        self._screenshot(page, screenshot)
        return page

    def _screenshot(self, page: Page, wanted: bool | None) -> None:
        if wanted is False:
            page.screenshot_none_reason = "no screenshot: not asked for this page"
            return
        shooter = self._screenshots
        if wanted and self.config.screenshots == "off":
            shooter = Screenshotter(replace(self.config, screenshots="auto"))
        shot = shooter.take(page)
        page.screenshot, page.screenshot_none_reason = shot.png, shot.reason
        if shot.png is None and shot.reason is None:
            page.screenshot_none_reason = "no screenshot: the browser returned no image"

    def check_url(self, url: str) -> str:
        """The URL rule and the SSRF guard without fetching; return the normalised URL.

        DNS is the only traffic. Raises ``InvalidURL`` (``tracker.common.rules.check_url``
        refused it, or a bad host name), ``Blocked`` (a non-public address), or
        ``Unreachable``/``Timeout`` when the name does not resolve. The web app and
        the job API check only the URL's shape (``tracker.common.rules.check_url``); this full
        guard runs when a worker fetches, and again on every redirect hop.
        """
        return prepare(url, self.config, Deadline(self.config.total_timeout)).url
