"""The watch list's first crawl and its schedule, for `yinji watch add` and the web.

A URL put on the watch list is crawled once at once (so the person adding it sees what
it holds today) and then every day at ``YINJI_RECRAWL_AT`` (``YINJI_TIMEZONE``) by the
beat's ``recrawl_watchlist`` run. ``crawl_now`` does what the daily task does for one
item, in this process:

- ``url``: the page is crawled, captured and checked (``Library.check_url``);
- ``site``: its start page, then up to ``site_limit`` same-host links on it;
- ``book``: ``tracker.cases.books.monitor_book`` (index, chapters, next pages), filing
  the book's case.

``next_daily_run`` says when the schedule runs next.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tracker.common.records import JSONObject

from .model import CaseError

if TYPE_CHECKING:
    from tracker.crawler.crawler import Crawler
    from tracker.library import Library
    from tracker.store import Store

    from .service import CaseService

WATCH_KINDS = ("url", "site", "book")


@dataclass
class WatchRun:
    """What one crawl of a watch-list item found."""

    url: str
    kind: str
    pages: int = 0
    suspects: list[str] = field(default_factory=list)
    matches: int = 0
    case_id: str | None = None
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> JSONObject:
        return {
            "url": self.url,
            "kind": self.kind,
            "pages": self.pages,
            "suspects": self.suspects,
            "matches": self.matches,
            "case_id": self.case_id,
            "errors": self.errors,
        }


def next_daily_run(at: tuple[int, int], tz: str = "UTC", now: datetime | None = None) -> datetime:
    """The next time of the day ``at`` (hour, minute) in time zone ``tz``, in UTC."""
    try:
        zone = ZoneInfo(tz or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        raise CaseError(f"YINJI_TIMEZONE: unknown time zone {tz!r}") from None
    local = (now or datetime.now(UTC)).astimezone(zone)
    run = local.replace(hour=at[0], minute=at[1], second=0, microsecond=0)
    if run <= local:
        run = (run + timedelta(days=1)).replace(hour=at[0], minute=at[1])
    return run.astimezone(UTC)


def mark_crawled(store: Store, url: str, when: datetime | None = None) -> bool:
    """Record that the watch-list item ``url`` was crawled at ``when`` (default now),
    if it is on the list: what the watch page shows as "last crawled". Called by
    whatever crawled it (``yinji watch add``, the first crawl of an item added in the
    web app, the daily run's tasks). False when ``url`` is not on the list."""
    for item in store.list_watch(active_only=False):
        if item.url == url:
            item.last_crawled_at = when or datetime.now(UTC)
            store.put_watch(item)
            return True
    return False


def check_kind(kind: object) -> str:
    if kind not in WATCH_KINDS:
        raise CaseError(f"watch kind must be one of {', '.join(WATCH_KINDS)}, got {kind!r}")
    return str(kind)


def crawl_now(
    url: str,
    kind: str,
    *,
    library: Library,
    crawler: Crawler,
    svc: CaseService | None = None,
    site_limit: int = 20,
    max_pages: int | None = None,
) -> WatchRun:
    """Crawl and check one watch-list item now (see the module docstring). A page that
    cannot be fetched is an error of the run, not an exception."""
    from tracker.crawler import CrawlError
    from tracker.crawler.links import same_site_links

    from .books import DEFAULT_MAX_PAGES, BookError, monitor_book

    kind = check_kind(kind)
    run = WatchRun(url, kind)
    if kind == "book":
        try:
            report = monitor_book(
                url,
                crawler=crawler,
                library=library,
                svc=svc,
                max_pages=max_pages or DEFAULT_MAX_PAGES,
            )
        except BookError as exc:
            run.errors.append(str(exc))
            return run
        run.pages = report.pages_fetched
        run.suspects = report.suspect_ids
        run.matches = sum(len(c.matches) for c in report.chapters)
        run.case_id = report.case.id if report.case else None
        run.errors = [f"{c.url}: {c.error}" for c in report.chapters if c.error]
        return run
    todo = [url]
    while todo:
        page_url = todo.pop(0)
        try:
            page = crawler.crawl_page(page_url)
            result = library.check_page(page, save=True)
        except (CrawlError, ValueError) as exc:
            run.errors.append(f"{page_url}: {exc}")
            continue
        run.pages += 1
        run.suspects.append(result.suspect.id)
        run.matches += len(result.matches)
        if kind == "site" and page_url == url:  # one level, as the daily crawl_site
            links = same_site_links(page.html, page.final_url or url, site_limit)
            todo += [link.url for link in links]
    return run
