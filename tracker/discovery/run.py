"""A discovery run, as named stages:

1. ``plan``: the works to look for (``--work`` ids, else every work, newest first up to
   ``max_works``) and their queries (``queries.work_queries``, the library's statistics);
2. ``search``: each query to each configured provider (``providers.Searcher``: cache,
   daily quota, 429 backoff) within the per-work budget (``max_queries`` queries per
   work per provider per UTC day, default 10); every result URL is a seed;
3. ``sites``: each registered site searched for each book (``books.book_targets``:
   the book's title, never an id or a chapter's title), at most ``max_site_searches``
   books a site; a search that finds no book is said so (``RunReport.not_found``);
4. ``legado``: each imported Legado site searched for each book and walked, contents
   and chapters read with the source's rules (``legado.stage``);
5. ``crawl``: the frontier (``frontier.Frontier``, in Redis) handed out under per-host
   politeness; pages fetched by ``concurrency`` threads through the crawler (SSRF guard
   on every URL, robots.txt, size and redirect limits), decoded and extracted in a
   reader process (``read_processes``), recorded in the frontier the moment they
   arrive (a crawl killed before the check checks them on restart instead of fetching
   them again), then, one at a time, checked by ``Library.check_page`` exactly like
   ``yinji check URL`` (suspect, matches, capture and check in the evidence log). A
   page whose SimHash is within 3 bits of a page already checked is not checked again:
   its capture is recorded against that page's suspect (``Library.record_captures``)
   and the run counts it as a duplicate. Links are followed by the run's
   ``policy.LinkPolicy`` (data: what to follow and how soon); a page that gave nothing
   new does not lead on to the next page of its own URL pattern (calendars, endless
   paging);
6. ``finish``: the ``RunReport`` (``report``: per source found, fetched, checked,
   matched; failures by kind; why a run that fetched nothing did nothing) is kept in
   the store (``RunHistory``).

The parts, one job each: the frontier (``frontier``, the scheduler shared through
Redis), the fetcher (``fetcher``: the page budget, how a page is read), the other
processes (``processes``), the link policy (``policy``), near-duplicates (``near``), the
stats collector (``report``). Every failure is one line naming the provider, site or
URL (``RunReport.fail``); the run goes on.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tracker.common.timefmt import iso_utc
from tracker.discovery.books import BookTarget, book_targets
from tracker.discovery.fetcher import (
    LINK_FARM,
    MAX_LINKS,
    Fetched,
    PageBudget,
    read_links,
    read_to_check,
    refused,
)
from tracker.discovery.frontier import Frontier, FrontierItem, Link
from tracker.discovery.keys import DiscoveryKeys
from tracker.discovery.near import NearDuplicates
from tracker.discovery.options import RunOptions
from tracker.discovery.policy import LinkPolicy
from tracker.discovery.processes import CrawlProcesses
from tracker.discovery.providers import Searcher, SearchProvider, providers_from_env
from tracker.discovery.queries import LibraryStats, Query, work_queries
from tracker.discovery.report import (
    MAX_ERRORS,
    PageResult,
    RunHistory,
    RunReport,
    SourceStats,
    idle_reason,
    merge_reports,
    new_run_id,
)
from tracker.discovery.sites import (
    Site,
    SiteProfile,
    SiteRegistry,
    load_profiles,
    profile_matches,
    search_url,
)
from tracker.discovery.urls import pattern_of

if TYPE_CHECKING:
    from tracker.crawler import Crawler, Page
    from tracker.library import Library

__all__ = [
    "LINK_FARM",
    "MAX_LINKS",
    "DiscoveryRun",
    "NearDuplicates",
    "PageResult",
    "RunHistory",
    "RunOptions",
    "RunReport",
    "SourceStats",
    "merge_reports",
    "new_run_id",
    "read_links",
    "read_to_check",
]

MIN_TEXT_CHARS = 50


class DiscoveryRun:
    """One run (see the module docstring). ``library`` is a ``tracker.library.Library``;
    only its public methods are used."""

    def __init__(
        self,
        library: Library,
        options: RunOptions | None = None,
        *,
        providers: Sequence[SearchProvider] | None = None,
        crawler: Crawler | None = None,
        keys: DiscoveryKeys | None = None,
        on_page: Callable[[PageResult], None] | None = None,
        searcher: Searcher | None = None,
        run_id: str | None = None,
        crawler_factory: Callable[[], Crawler] | None = None,
        on_note: Callable[[str], None] | None = None,
    ) -> None:
        """``crawler_factory`` (a picklable callable) makes the crawler of each other
        crawl process (``RunOptions.crawl_processes``); without it they build one from
        the library's settings, as ``crawler`` defaults to."""
        self.lib = library
        self.options = options or RunOptions()
        self.keys = keys or DiscoveryKeys(library.settings.redis_prefix)
        self.providers = list(providers_from_env() if providers is None else providers)
        self.searcher = searcher or Searcher(self.providers, library.redis, self.keys)
        from tracker.discovery.urls import TrapDetector

        self.frontier = Frontier(
            library.redis,
            self.keys,
            interval=self.options.interval,
            traps=TrapDetector(enabled=self.options.trap_rules),
        )
        self.near = NearDuplicates(library.redis, self.keys)
        self.policy = LinkPolicy(max_depth=self.options.max_depth)
        self._crawler = crawler
        self._crawler_factory = crawler_factory
        self.budget: PageBudget = PageBudget(self.options.max_pages)
        self.processes = CrawlProcesses(self, _crawl_part)  # readers, other crawl processes
        self.on_page = on_page
        self.on_note = on_note  # told what the run waits on, as it happens
        self._waiting_noted = False
        now = datetime.now(UTC)
        self.report = RunReport(
            id=run_id or new_run_id(),
            started_at=iso_utc(now),
            options=asdict(self.options),
        )
        self.queries: list[Query] = []
        self.titles: dict[str, str] = {}
        self.books: list[BookTarget] = []  # what a site is searched for
        self.profiles: dict[str, SiteProfile] = {}
        # Why a run may do nothing (``idle_reason``): seeds already fetched by earlier
        # runs (by kind), queries over today's budget, Legado searches made today.
        self.skipped_seeds: dict[str, int] = {}
        self._saved_at = time.monotonic()
        self.over_budget = 0
        self.searched_today = 0

    # -- helpers --
    @property
    def crawler(self) -> Crawler:
        if self._crawler is None:
            from tracker.crawler import Crawler, CrawlerConfig

            self._crawler = Crawler(
                CrawlerConfig.from_settings(
                    self.lib.settings, min_interval=self.options.interval, screenshots="off"
                )
            )
        return self._crawler

    @property
    def crawler_factory(self) -> Callable[[], Crawler] | None:
        return self._crawler_factory

    @property
    def crawler_elsewhere(self) -> bool:
        """Whether another crawl process can make this run's crawler: by the factory,
        or from the settings when none was given (or made) here."""
        return self._crawler is None or self._crawler_factory is not None

    def _seed(self, item: FrontierItem) -> None:
        item.run = self.report.id
        if self.frontier.add(item):
            self.report.source(item.source).found += 1
        else:
            self.skipped_seeds[item.kind] = self.skipped_seeds.get(item.kind, 0) + 1

    # -- stages --
    def plan(self) -> list[Query]:
        store = self.lib.store
        if self.options.works:
            mothers = []
            for work_id in self.options.works:
                try:
                    mothers.append(store.get_mother(work_id))
                except Exception:
                    self.report.fail("", f"work {work_id!r}: not in the library")
        else:
            listed = store.list_mothers(limit=self.options.max_works, with_text=False)
            mothers = [store.get_mother(m.id) for m in listed]
        self.report.works = len(mothers)
        stats = LibraryStats.from_library(self.lib)
        self.books = book_targets(mothers)
        self.report.books = len(self.books)
        titled: set[str] = set()
        first_of = {b.work_ids[0]: b for b in self.books}
        for m in mothers:
            self.titles[m.id] = m.title
            # The book's title (and author) once per book, never a chapter's title.
            book = first_of.get(m.id)
            title = book.title if book is not None and book.key not in titled else ""
            if book is not None:
                titled.add(book.key)
            self.queries += work_queries(
                m.id,
                title,
                m.text,
                stats,
                limit=self.options.max_queries,
                author=book.author if book is not None else "",
            )
        return self.queries

    def search(self) -> None:
        if not self.options.search:
            return
        day = datetime.now(UTC).strftime("%Y%m%d")
        for provider in self.searcher.providers:
            # The queries within each work's budget for this provider today.
            chosen: list[Query] = []
            used: dict[str, int] = {}
            for q in self.queries:
                if q.work_id not in used:
                    key = self.keys.key(f"budget:{provider.name}:{day}:{q.work_id}")
                    used[q.work_id] = int(self.lib.redis.get(key) or 0)
                if used[q.work_id] < self.options.max_queries:
                    used[q.work_id] += 1
                    chosen.append(q)
                else:
                    self.over_budget += 1
            failures = 0
            width = max(1, self.options.search_concurrency)
            with ThreadPoolExecutor(max_workers=width) as pool:
                for start in range(0, len(chosen), 4 * width):
                    batch = chosen[start : start + 4 * width]
                    outcomes = list(
                        pool.map(lambda q, p=provider: self.searcher.search(p, q.text), batch)
                    )
                    ok = False
                    for q, outcome in zip(batch, outcomes, strict=True):
                        ok |= self._take(provider.name, q, outcome, day)
                        failures += bool(outcome.error)
                    if failures >= 3 and not ok:
                        self.report.error(
                            f"{provider.name}: {failures} failures, not asked again this run"
                        )
                        break

    def _take(self, name: str, q: Query, outcome: Any, day: str) -> bool:
        """Count one answer against the budget and seed its results; False on an error."""
        from tracker.discovery.urls import normalize_url

        self.report.queries += 1
        if outcome.cached:
            self.report.cached += 1
        else:
            budget_key = self.keys.key(f"budget:{name}:{day}:{q.work_id}")
            self.lib.redis.incr(budget_key)
            self.lib.redis.expire(budget_key, 2 * 86400)
        if outcome.error:
            self.report.fail(name, f"{outcome.error.removeprefix(name + ': ')} (query {q.text})")
            return False
        for hit in outcome.hits:
            try:
                normalize_url(hit.url)
            except ValueError:
                self.report.fail(name, f"result is not an http(s) URL: {hit.url!r}")
                continue
            self._seed(FrontierItem(url=hit.url, source=name, priority=0, works=[q.work_id]))
        return True

    def sites(self) -> None:
        if not self.options.sites:
            return
        problems: list[str] = []
        folder = self.lib.settings.data_dir / "discovery" / "profiles"
        self.profiles = load_profiles(folder, problems)
        for problem in problems:
            self.report.fail("profiles", problem)
        for site in SiteRegistry(self.lib.store).list():
            if site.profile == "legado":
                continue  # searched by the Legado stage (``legado.walk``)
            for book in self.books[: self.options.max_site_searches]:
                self._seed(
                    FrontierItem(
                        url=search_url(site, book.title),
                        source=site.name,
                        priority=1,
                        kind="search",
                        works=book.work_ids[:20],
                        hint=book.title,
                    )
                )

    def plan_books(self) -> list[BookTarget]:
        """Only the books of the run's works (a Legado chunk on a worker needs no queries)."""
        store = self.lib.store
        if self.options.works:
            mothers = []
            for work_id in self.options.works:
                with contextlib.suppress(Exception):
                    mothers.append(store.get_mother(work_id))
        else:
            mothers = store.list_mothers(limit=self.options.max_works, with_text=False)
        self.books = book_targets(mothers)
        return self.books

    def legado_hosts(self) -> list[str]:
        """The imported Legado sites this run walks (enabled, with a search to run)."""
        if not self.options.legado or not self.options.sites:
            return []
        return [
            s.host
            for s in SiteRegistry(self.lib.store).list()
            if s.profile == "legado"
            and not s.disabled
            and not any("search needs" in r for r in s.reasons)
        ]

    def legado(self, hosts: Sequence[str] | None = None) -> None:
        """Each imported Legado site (of ``hosts`` when given) searched for each book and
        walked, from the run's page budget (``legado.stage``)."""
        from tracker.discovery.legado.stage import legado_stage

        legado_stage(self, hosts)

    def crawl(self) -> None:
        self.processes.start_helpers()
        self.processes.start_readers()
        try:
            self._crawl()
        finally:
            self.processes.stop_readers()
            if self.processes.helpers:
                self.processes.stop_helpers()

    def _crawl(self) -> None:
        self.frontier.requeue_due()
        opts = self.options
        inflight: dict[Future[Fetched], FrontierItem] = {}
        # With other crawl processes, wait a while for links from their pages still out.
        patience = max(opts.wait_for_others, 10.0 if self.processes.helpers else 0.0)
        idle_until = time.monotonic() + patience
        budget = self.budget
        with ThreadPoolExecutor(max_workers=max(1, opts.concurrency)) as pool:
            while True:
                wait_for = 0.05
                spent = False  # the run's page budget is taken
                while len(inflight) < opts.concurrency:
                    if not budget.take():
                        spent = True
                        break
                    claim = self.frontier.claim()
                    if claim.item is not None and claim.stored:  # its worker died: check it
                        self._process(self._restore(claim.item, claim.stored))
                        continue
                    if claim.item is None:
                        budget.give_back()
                        wait_for = claim.wait
                        if claim.empty and not inflight:
                            if claim.leased == 0 or time.monotonic() > idle_until:
                                self._note_leases(claim.leased, patience)
                                return
                            wait_for = 0.2
                        elif claim.leased and not inflight and claim.wait > 2.0:
                            self._note_wait(claim.leased, claim.wait)
                        break
                    idle_until = time.monotonic() + patience
                    inflight[pool.submit(self._fetch, claim.item)] = claim.item
                self.processes.drain()
                if not inflight:
                    if spent:
                        return
                    time.sleep(min(max(wait_for, 0.01), 1.0))
                    continue
                # Back when a fetch ends or, sooner, when a host's interval has passed.
                done, _ = wait(
                    list(inflight),
                    timeout=min(max(wait_for, 0.005), 1.0),
                    return_when=FIRST_COMPLETED,
                )
                for fut in done:
                    inflight.pop(fut)
                    self._process(fut.result())

    def _note_wait(self, leased: int, wait: float) -> None:
        """Say, once, that the crawl waits on URLs another process holds: a run started
        again after a kill waits for its dead predecessor's leases to run out."""
        if self._waiting_noted:
            return
        self._waiting_noted = True
        note = (
            f"waiting up to {wait:.0f} s for {leased} URLs leased by another crawl process "
            "(or by one that was killed: when its leases run out, this run fetches them)"
        )
        self.report.notes.append(note)
        if self.on_note is not None:
            self.on_note(note)

    def _note_leases(self, leased: int, waited: float) -> None:
        """Say why a crawl ends with URLs still out: leased by another crawl process or
        worker, or by one that was killed (its lease runs out, then a run takes them)."""
        if leased:
            self.report.leased = leased
            self.report.notes.append(
                f"{leased} URLs are leased by another crawl process or worker (or one that "
                f"was killed: their leases run out, then a later run fetches them); "
                f"waited {waited:g} s for them"
            )

    def _fetch(self, item: FrontierItem) -> Fetched:
        """Fetch ``item`` (a pool thread) and record the page in the frontier the moment
        its body arrived, before the check: a crawl killed now checks it on restart
        instead of fetching it again (``Frontier.fetched``)."""
        try:
            # A page to check is read in full (the reader process); a site search or a
            # chapter list is only followed: decoded and its links parsed, no extraction.
            reader = self.processes.read if item.kind == "page" else read_links
            page = self.crawler.crawl_page(item.url, screenshot=False, reader=reader)
            fetched = Fetched(item, page=page)
        except Exception as exc:  # every failure is this page's error; the run goes on
            fetched = Fetched(item, error=exc)
        try:
            self.frontier.fetched(item, fetched.page.to_record() if fetched.page else None)
        except Exception as exc:  # Redis unreachable: ``done`` frees the host later
            fetched.page, fetched.error = None, exc
        return fetched

    def _restore(self, item: FrontierItem, record: str) -> Fetched:
        """A stored page of a worker that died (``Claim.stored``)."""
        from tracker.crawler import Page

        try:
            return Fetched(item, page=Page.from_record(record))
        except Exception as exc:  # a record that cannot be read: this page's error
            return Fetched(item, error=ValueError(f"stored page unreadable: {exc}"))

    def _process(self, fetched: Fetched) -> None:
        from tracker.crawler import CrawlError

        item, stats = fetched.item, self.report.source(fetched.item.source)
        if fetched.error is not None:
            exc = fetched.error
            if refused(exc):  # the guard said no, or no such host: no page was spent
                self.budget.give_back()
                self.report.refused += 1
                self.report.fail(item.source, str(exc))
                self.frontier.done(item, failed=True)
                self.emit(PageResult(item.url, item.source, kind=item.kind, error=str(exc)))
                return
            if isinstance(exc, CrawlError) and exc.transient and item.attempts < 1:
                item.attempts += 1
                self.frontier.retry(item)
                self.budget.give_back()  # fetched again later: one page of the budget
                return
            self.report.fetched += 1
            stats.fetched += 1
            message = str(exc) if isinstance(exc, CrawlError) else f"{item.url}: {exc!r}"
            self.report.fail(item.source, message)
            self.frontier.done(item, failed=True)
            self.emit(PageResult(item.url, item.source, kind=item.kind, error=message))
            return
        page = fetched.page
        self.report.fetched += 1
        stats.fetched += 1
        result = PageResult(item.url, item.source, final_url=page.final_url, kind=item.kind)
        if page.final_url != item.url:
            self.frontier.mark_seen(page.final_url)  # a redirect's target: not fetched again
        try:
            pages = [page]
            if item.kind == "page" and len(page.text) >= MIN_TEXT_CHARS:
                pages = self._check(item, page, result)
            elif item.kind == "page":  # a list of links, an empty page: nothing to copy
                result.skipped = (
                    f"{len(page.text)} characters of main text, fewer than {MIN_TEXT_CHARS}: "
                    "not checked"
                )
                self.report.skipped += 1
            for each in pages:  # a chapter's last page links on to the next chapter
                self._follow(item, each, result)
        except Exception as exc:  # a page that breaks a step is its own error
            result.error = f"{item.url}: {type(exc).__name__}: {exc}"
            self.report.fail(item.source, result.error)
        self.frontier.done(item)
        self.emit(result)

    def emit(self, result: PageResult) -> None:
        if self.on_page is not None:
            self.on_page(result)
        self._checkpoint()

    def _checkpoint(self, every: float = 2.0) -> None:
        """Keep the report so far in the store every ``every`` seconds, so the 发现 page
        and ``/api/v1/discover/runs/ID`` show a run's counts while it runs."""
        now = time.monotonic()
        if not self.options.save or now - self._saved_at < every:
            return
        self._saved_at = now
        with contextlib.suppress(Exception):  # a count read mid-update: the next one
            RunHistory(self.lib.store).save(self.report, prune=False)

    def _check(self, item: FrontierItem, page: Page, result: PageResult) -> list[Page]:
        """Check ``item``'s page, with the next pages of its chapter (``pages``: one
        suspect, a capture per page); the pages read."""
        from tracker.discovery.pages import chapter_suspect, fetch_later_page, read_chapter_pages
        from tracker.fingerprints.simhash import simhash

        pages = read_chapter_pages(
            page, lambda url: fetch_later_page(self, item.source, url, self.processes.read)
        )
        suspect = chapter_suspect(pages)
        if len(pages) > 1:
            result.pages = [p.final_url for p in pages]
        h = simhash(suspect.text, features="char3")
        original = self.near.find(h) if len(suspect.text) >= 200 else None
        if original is not None:
            result.duplicate_of = original
            self.report.duplicates += 1
            self.report.source(item.source).duplicates += 1
            if self.options.save:
                self.lib.record_captures(original, pages)
            return pages
        checked = self.lib.check_crawled(suspect, pages, save=self.options.save)
        result.checked = True
        result.suspect_id = checked.suspect.id
        result.matches = checked.matches_json()
        self.report.checked_page(result, page.final_url)
        if len(suspect.text) >= 200:
            self.near.add(h, checked.suspect.id)
        if result.matches:
            self.frontier.schedule_revisit(item, self.options.revisit_days * 86400)
        return pages

    def _follow(self, item: FrontierItem, page: Any, result: PageResult) -> None:
        """Queue the links worth following from ``item``'s page, by what it was (see
        the module docstring), in one batch. One trap rule lives here, because it needs
        the whole page: a page that gave nothing new does not lead on to the next page
        of its own kind (same URL pattern): the empty months of a calendar, a list paged
        past its end, a thread's page past its last each cost one fetch, not an endless
        walk. Chapter links are never held back."""
        from tracker.discovery.urls import url_pattern

        now: list[Link] = []
        onward: list[Link] = []  # the same URL pattern as this page: next month, page
        mine = url_pattern(item.url)  # item.url is normalised

        def add(
            url: str,
            priority: float,
            kind: str = "page",
            depth: int | None = None,
            chapter: bool = False,
        ) -> None:
            link = Link(url, priority, kind, depth)
            if self.options.trap_rules and not chapter and pattern_of(url) == mine:
                onward.append(link)
            else:
                now.append(link)

        self._links(item, page, result, add)
        queued = self._queue(item, now)
        if onward and queued == 0 and self.options.trap_rules:
            self.report.traps += len(onward)
            self.lib.redis.hincrby(self.frontier.k("stats"), "traps", len(onward))
        elif onward:
            self._queue(item, onward)

    def _queue(self, item: FrontierItem, links: list[Link]) -> int:
        """Queue ``links`` of ``item``'s page (one batch); how many were new."""
        if not links:
            return 0
        queued = 0
        for verdict in self.frontier.add_links(item, links):
            if verdict == "queued":
                queued += 1
            elif verdict.startswith("trap"):
                self.report.traps += 1
        self.report.source(item.source).found += queued
        return queued

    def _links(
        self, item: FrontierItem, page: Page, result: PageResult, add: Callable[..., None]
    ) -> None:
        """The links of ``item``'s page worth following, by the run's ``LinkPolicy``;
        a site search showing neither results nor a book is said so: the site's
        profile no longer matches (an error), or the book is not there (not found)."""
        matched = bool(result.matches) or bool(result.duplicate_of)
        if self.policy.follow(item, page, matched, item.hint, add):
            return
        profile = self._profile_of(item.source.removeprefix("site:"))
        if not profile_matches(profile, page.html):
            self.report.fail(
                item.source,
                f"the search page {item.url} shows neither results "
                f"nor a book ({profile.name if profile else 'form'} profile no "
                "longer matches: `yinji discover site add` the site again)",
            )
        elif len(self.report.not_found) < MAX_ERRORS:
            self.report.not_found.append(
                f"{item.source}: no book 《{item.hint}》 in its search results ({item.url})"
            )

    def _profile_of(self, host: str) -> SiteProfile | None:
        site: Site | None = SiteRegistry(self.lib.store).get(host)
        return self.profiles.get(site.profile) if site else None

    def finish(self) -> RunReport:
        self.report.finished_at = iso_utc(datetime.now(UTC))
        if self.options.save:
            with contextlib.suppress(Exception):
                RunHistory(self.lib.store).save(self.report)
        return self.report

    def run(self) -> RunReport:
        """Every stage in order; the report."""
        try:
            self.plan()
            self.search()
            self.sites()
            self.legado()
            self.crawl()
        finally:
            if not self.report.fetched and not self.report.idle:
                self.report.idle = self.idle_reason()
            self.finish()
        return self.report

    def idle_reason(self) -> str:
        """Why this run fetched nothing, in words (empty when it fetched something)."""
        sites = SiteRegistry(self.lib.store).list() if self.options.sites else []
        return idle_reason(
            self.report,
            self.options,
            providers=len(self.searcher.providers),
            over_budget=self.over_budget,
            skipped_seeds=self.skipped_seeds,
            searched_today=self.searched_today,
            sites=sites,
        )


def _crawl_part(
    settings: Any,
    options: dict[str, Any],
    keys: DiscoveryKeys,
    run_id: str,
    crawler_factory: Callable[[], Crawler] | None,
    shared: Any,
    outbox: Any,
) -> None:
    """One of a run's other crawl processes (``processes.CrawlProcesses.start_helpers``): the
    crawl stage on the shared frontier and budget; every page and, at the end, its
    report go to ``outbox``."""
    from tracker.library import Library

    try:
        with Library.open(settings) as lib:
            run = DiscoveryRun(
                lib,
                RunOptions(**options),
                providers=[],
                crawler=crawler_factory() if crawler_factory is not None else None,
                keys=keys,
                run_id=run_id,
                on_page=lambda r: outbox.put(("page", asdict(r))),
            )
            run.budget = PageBudget(run.options.max_pages, shared)
            try:
                run._crawl()
            finally:
                run.report.finished_at = iso_utc(datetime.now(UTC))
                outbox.put(("report", run.report.to_dict()))
    except Exception as exc:  # this process's failure is a line of the run's errors
        outbox.put(("error", f"a crawl process failed: {type(exc).__name__}: {exc}"))
