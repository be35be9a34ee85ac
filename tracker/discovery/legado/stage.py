"""The Legado stage of a discovery run (``DiscoveryRun.legado``): the run's books on
each imported site (``walk.LegadoWalker``), one search per site and book a UTC day (kept
in Redis), every chapter checked with a capture per page, every count and failure in
the run's report."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from tracker.discovery.legado.walk import ChapterRead, LegadoWalker, WalkEvents, WalkLimits
from tracker.discovery.report import MAX_ERRORS, PageResult
from tracker.discovery.sites import SiteRegistry

if TYPE_CHECKING:
    from tracker.discovery.fetcher import PageBudget
    from tracker.discovery.runview import RunView

__all__ = ["ShareOfBudget", "check_chapter", "legado_stage"]

MIN_TEXT_CHARS = 50


class ShareOfBudget:
    """At most ``limit`` pages of ``budget`` (the run's), taken one at a time."""

    def __init__(self, budget: PageBudget, limit: int) -> None:
        self.budget, self.limit, self.taken = budget, limit, 0

    def take(self) -> bool:
        if self.taken >= self.limit or not self.budget.take():
            return False
        self.taken += 1
        return True

    def give_back(self) -> None:
        self.taken -= 1
        self.budget.give_back()


def legado_stage(run: RunView, hosts: Sequence[str] | None = None) -> None:
    """Each imported Legado site (of ``hosts`` when given) searched for each book of
    ``run`` and walked (``walk.LegadoWalker``), from the run's page budget; every chapter
    checked (``check_chapter``) and counted in the run's report."""
    if not run.options.legado or not run.options.sites:
        return
    wanted = set(hosts) if hosts is not None else None
    sites = [
        s
        for s in SiteRegistry(run.lib.store).list()
        if s.profile == "legado" and (wanted is None or s.host in wanted)
    ]
    if not sites or not run.books:
        return
    # Half the run's pages when the crawl stage has seeds of its own (search results,
    # site searches), all of them otherwise: imported sites never starve the crawl.
    share = run.options.max_pages
    if run.frontier.queued():
        share = max(1, run.options.max_pages // 2)
    budget = ShareOfBudget(run.budget, share)

    def fetched(source: str, url: str) -> None:
        run.report.fetched += 1
        run.report.source(source).fetched += 1

    def error(source: str, message: str) -> None:
        run.report.fail(source, message)

    def not_found(line: str) -> None:
        if len(run.report.not_found) < MAX_ERRORS:
            run.report.not_found.append(line)

    day = datetime.now(UTC).strftime("%Y%m%d")

    def fresh(host: str, book_key: str) -> bool:
        """Whether ``host`` was not yet searched for the book today (one a day)."""
        key = run.keys.key(f"legado:{day}:{host}")
        added = run.lib.redis.sadd(key, book_key)
        run.lib.redis.expire(key, 2 * 86400)
        if not added:
            run.searched_today += 1
        return bool(added)

    def refused(source: str, message: str) -> None:
        run.report.refused += 1
        run.report.fail(source, message)

    walker = LegadoWalker(
        run.lib,
        run.crawler,
        WalkEvents(
            budget.take,
            budget.give_back,
            fetched,
            error,
            not_found,
            lambda read: check_chapter(run, read),
            fresh,
            refused,
        ),
        WalkLimits(chapters=run.options.max_chapters, concurrency=run.options.concurrency),
    )
    walker.run(sites, run.books)


def check_chapter(run: RunView, read: ChapterRead) -> None:
    """Check one chapter a Legado site gave: its text, a capture per page (each page
    its own URL, ``Library.check_crawled``); counted in ``run``'s report."""
    stats = run.report.source(read.site)
    stats.found += 1
    first = read.pages[0]
    result = PageResult(read.url, read.site, final_url=first.final_url, kind="chapter")
    result.pages = [p.final_url for p in read.pages]
    if len(read.text) < MIN_TEXT_CHARS:
        result.skipped = f"{len(read.text)} characters of text: not checked"
        run.report.skipped += 1
        run.emit(result)
        return
    suspect = first.to_suspect()
    suspect.text = read.text
    suspect.metadata["pages"] = [p.final_url for p in read.pages]
    suspect.metadata["extractor"] = read.extractor
    try:
        checked = run.lib.check_crawled(suspect, read.pages, save=run.options.save)
    except Exception as exc:  # one chapter's failure is its own line
        run.report.fail(read.site, f"{read.url}: {type(exc).__name__}: {exc}")
        return
    result.checked = True
    result.suspect_id = checked.suspect.id
    result.matches = checked.matches_json()
    run.report.checked_page(result, first.final_url)
    run.emit(result)
