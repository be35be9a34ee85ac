"""Crawl tasks (queue ``crawl``): one page, one watched site, one watched pirate book,
the daily watch-list run."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from celery import Task, shared_task

from tracker.common.records import JSONObject, JSONValue
from tracker.common.rules import url_problem
from tracker.crawler import CrawlError
from tracker.crawler.links import same_site_links
from tracker.plumbing.config import env_int
from tracker.services.lookups import find_suspect
from tracker.services.watch_list import WatchList
from tracker.store import utcnow
from workers.app import WATCH_TASKS, worker_settings
from workers.tasks._base import TASK_OPTIONS, Progress, fanout, once, rt
from workers.tasks.cases import alert_new_matches_since

if TYPE_CHECKING:
    from tracker.crawler.results import Page
    from tracker.services.results import CheckResult

log = logging.getLogger(__name__)


def check_item(res: CheckResult) -> JSONObject:
    """One checked suspect as JSON: ``CheckResult.to_json()`` plus its title and URL."""
    return {**res.to_json(), "title": res.suspect.title, "url": res.suspect.url}


def run_key(task: Task) -> str | None:
    """The key of this task run for ``EvidenceLog.append(once=...)``: a redelivered
    message (same task id) that runs its work again records nothing twice. None when
    the task is called directly (no delivery to repeat)."""
    task_id = task.request.id
    if task.request.called_directly or not task_id:
        return None
    return f"task:{task_id}"


def crawl_outcome(url: str, **fields: JSONValue) -> JSONObject:
    base: dict[str, Any] = {
        "url": url,
        "final_url": None,
        "suspect_id": None,
        "title": "",
        "skipped": None,
        "error": None,
        "status": None,
        "matches": None,
    }
    base.update(fields)
    return base


def crawl_and_check(
    task: Task, url: str, suspect_id: str | None, check: bool
) -> tuple[JSONObject, Page | None]:
    """Fetch ``url``, store it as a suspect and check it; ``(result, page or None)``.

    Transient crawl errors propagate (the task is retried); permanent ones (404,
    robots.txt, the SSRF guard, not a text page) are the result: trying again would
    fetch the same refusal.
    """
    runtime = rt(task)
    problem = url_problem(url)
    if problem:
        return crawl_outcome(url, error=problem), None
    try:
        page = runtime.crawler.crawl_page(url)
    except CrawlError as exc:
        if exc.transient:
            if exc.retry_after:
                # The server said when to come back: wait that long, not the backoff.
                raise task.retry(exc=exc, countdown=min(exc.retry_after, 3600)) from exc
            raise
        return crawl_outcome(url, error=str(exc), status=exc.status), None
    if not page.text.strip():
        return crawl_outcome(
            url, final_url=page.final_url, error="no text found on the page", status=page.status
        ), page
    library = runtime.library
    suspect = page.to_suspect(suspect_id)
    # A re-crawl (or a redelivery) of a page known: refresh it.
    known = find_suspect(library, suspect.id) is not None
    with runtime.dedup_lock:
        if not known and runtime.near_duplicates.is_near_duplicate(suspect.url, page.html):
            # The same page of the same site under another URL: checking it again would
            # only file the same matches under a second suspect.
            return crawl_outcome(
                url,
                final_url=suspect.url,
                skipped="near-duplicate",
                status=page.status,
                title=suspect.title,
            ), page
    # Stored with its capture (and the check naming it) in the evidence log, by the
    # same Library calls as `yinji check URL`. Not keyed by the task run: a delivery
    # that runs again fetches again, and a second fetch is a second true capture.
    if check:
        started = utcnow()
        matches = check_item(library.check_page(page, suspect_id=suspect.id))["matches"]
        alert_new_matches_since(task, started, [suspect.id])
    else:
        library.store_page(page, suspect_id=suspect.id)
        matches = None
    with runtime.dedup_lock:
        runtime.near_duplicates.check_and_add(suspect.url, page.html)  # remembered once
    return crawl_outcome(
        url,
        final_url=suspect.url,
        suspect_id=suspect.id,
        title=suspect.title,
        status=page.status,
        matches=matches,
    ), page


@shared_task(name="yinji.crawl.crawl_url", **TASK_OPTIONS)
def crawl_url(
    self: Task, url: str, suspect_id: str | None = None, check: bool = True
) -> JSONObject:
    """Crawl one page, store it as a suspect (id: sha1 of its final URL unless given)
    and check it. Near duplicates of pages already crawled on the same site are
    skipped. Result: ``{url, final_url, suspect_id, title, skipped, error, status,
    matches}``."""
    return once(self, lambda: _crawl_url(self, url, suspect_id, check))


def _crawl_url(task: Task, url: str, suspect_id: str | None, check: bool) -> dict[str, Any]:
    progress = Progress(task, total=1)
    progress.start()
    result, page = crawl_and_check(task, url, suspect_id, check)
    if page is not None:
        watched(task, url)
    return result


def watched(task: Task, url: str) -> None:
    """A watch-list item was crawled: its "last crawled" time (``mark_crawled``; a URL
    not on the list is left alone)."""
    WatchList.of(rt(task).library).mark_crawled(url)


@shared_task(name="yinji.crawl.crawl_site", **TASK_OPTIONS)
def crawl_site(self: Task, url: str, limit: int | None = None, check: bool = True) -> JSONObject:
    """A watched site: crawl its start page, then the same-site links found on it
    (``tracker.crawler.links``; at most ``limit``, default ``YINJI_SITE_CRAWL_LIMIT``)
    as ``crawl_url`` children. One
    level deep on purpose: a bounded, predictable daily load per site."""
    return once(self, lambda: _crawl_site(self, url, limit, check))


def _crawl_site(task: Task, url: str, limit: int | None, check: bool) -> dict[str, Any]:
    limit = worker_settings(task.app).site_crawl_limit if limit is None else max(0, limit)
    Progress(task, total=limit + 1).start()
    start, page = crawl_and_check(task, url, None, check)
    if page is not None:
        watched(task, url)
    links = (
        [link.url for link in same_site_links(page.html, page.final_url, limit)]
        if page is not None
        else []
    )
    children = fanout(
        task, [("yinji.crawl.crawl_url", [link], {"check": check}, link) for link in links]
    )
    return {"fanout": children, "results": [start], "total": len(children) + 1}


def book_max_pages() -> int:
    """``YINJI_BOOK_MAX_PAGES``: pages fetched per watched book and run (index,
    chapters and their next pages), default ``tracker.cases.books.DEFAULT_MAX_PAGES``."""
    from tracker.cases.books import DEFAULT_MAX_PAGES

    return env_int("YINJI_BOOK_MAX_PAGES", DEFAULT_MAX_PAGES, minimum=1)


@shared_task(name="yinji.crawl.crawl_book", **TASK_OPTIONS)
def crawl_book(self: Task, url: str, max_pages: int | None = None) -> JSONObject:
    """A watched pirate book: ``tracker.cases.books.monitor_book`` follows the index's
    chapter list and the chapters' next pages (same host, robots.txt and rate limits,
    at most ``max_pages`` fetches, default ``YINJI_BOOK_MAX_PAGES``), checks every
    chapter (stored as suspects) and files one case for the book on its domain.
    Result: the book report (``BookReport.to_dict()``) with ``alerted`` (the new matches
    the ``match.new`` alert was sent for), or ``{"url", "error"}`` when the book cannot
    be read (index unreachable, no chapter list)."""
    return once(self, lambda: _crawl_book(self, url, max_pages))


def _crawl_book(task: Task, url: str, max_pages: int | None) -> dict[str, Any]:
    from tracker.cases.books import BookError, monitor_book

    runtime = rt(task)
    Progress(task, total=1).start()
    started = utcnow()
    try:
        report = monitor_book(
            url,
            crawler=runtime.crawler,
            library=runtime.library,
            svc=runtime.cases,
            max_pages=max_pages or book_max_pages(),
        )
    except BookError as exc:
        return {"url": url, "error": str(exc), "total": 1}
    alerted = alert_new_matches_since(task, started, report.suspect_ids)
    watched(task, url)
    return {**report.to_dict(), "alerted": alerted, "total": 1}


@shared_task(name="yinji.crawl.recrawl_watchlist", **TASK_OPTIONS)
def recrawl_watchlist(self: Task) -> JSONObject:
    """Daily: every active watch-list item again (``url``: ``crawl_url``; ``site``:
    ``crawl_site``; ``book``: ``crawl_book``), fanned out so that all workers share the
    load."""
    return once(self, lambda: _recrawl(self))


def _recrawl(task: Task) -> dict[str, Any]:
    watch = WatchList.of(rt(task).library)
    items = watch.active()
    progress = Progress(task, total=len(items))
    progress.start()
    children = fanout(
        task,
        [
            (WATCH_TASKS.get(item.kind, WATCH_TASKS["url"]), [item.url], {}, item.url)
            for item in items
        ],
    )
    watch.mark_sent(items, utcnow())  # when the crawl was sent; its outcome is in the job
    log.info("recrawl: %d watch-list items sent", len(children))
    return {"fanout": children, "total": len(children)}
