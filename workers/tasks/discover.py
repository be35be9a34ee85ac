"""Discovery tasks (queue ``crawl``): a run's plan, searches and site searches in one
task, its crawl spread over workers, and the daily run the beat sends.

- ``yinji.crawl.discover_run(options, parts)``: plans the run (queries from the
  works), asks the providers and the registered sites, puts every URL found into the
  frontier in Redis (``tracker.discovery.frontier``), then fans the crawl out as one
  Celery group of bounded chunks (``_base.fanout``): the run's page budget cut into
  chunks of at most ``YINJI_DISCOVER_CHUNK`` (50) pages, at least ``parts`` of them,
  adding up to the budget exactly. ``workers.jobs.job_status`` of the run's task id
  adds their progress up (pages fetched / budget), as for any job that fans out.
- ``yinji.crawl.discover_crawl(run_id, part, options)``: one chunk. It claims URLs
  from the shared frontier (per-host politeness is Redis's clock, so many workers on
  many machines never ask one host faster than its interval), fetches and checks each
  page exactly as ``yinji check URL`` does, follows links into the same frontier, and
  keeps its part of the run's report (``RunHistory``: one record per chunk, added up
  when read). A chunk ends at its budget or when the frontier is empty (after waiting
  up to 30 s for links from pages still out with other chunks): a chunk is seconds to a
  minute of work, far under the visibility timeout (docs/WORKERS.md).
- ``yinji.crawl.discover_daily()``: the beat's daily run (``YINJI_DISCOVER_AT``,
  default 02:00) within the budgets: at most ``YINJI_DISCOVER_QUERIES`` (10) queries
  per work per provider per UTC day (counted in Redis, shared with any manual run
  that day), ``YINJI_DISCOVER_PAGES`` (2000) fetches in all chunks together, at least
  ``YINJI_DISCOVER_PARTS`` (4) chunks.

A worker killed mid-chunk loses nothing: its leases in the frontier run out and another
chunk (or the next run) claims those URLs again, checking from the stored body the
pages that had arrived (``Frontier.fetched``); pages already done are never fetched
twice (the frontier's seen set), only revisited on schedule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields
from typing import Any

from celery import Task, shared_task

from tracker.common.records import JSONObject
from tracker.discovery.run import DiscoveryRun, PageResult, RunOptions, new_run_id
from tracker.plumbing.config import env_int
from workers.tasks._base import TASK_OPTIONS, Child, Progress, fanout, once, rt


def _options(raw: Mapping[str, object] | None) -> RunOptions:
    known = {f.name for f in fields(RunOptions)}
    values: dict[str, Any] = {k: v for k, v in (raw or {}).items() if k in known}
    return RunOptions(**values)


CHUNK_PAGES = 50  # pages a crawl chunk fetches at most (``YINJI_DISCOVER_CHUNK``)


def chunk_budgets(max_pages: int, chunk: int, parts: int = 1) -> list[int]:
    """The fetch budgets of a run's crawl chunks: at most ``chunk`` pages each, at least
    ``parts`` chunks, adding up to exactly ``max_pages`` (the run's budget)."""
    max_pages, chunk = max(1, max_pages), max(1, chunk)
    n = min(max_pages, max(parts, -(-max_pages // chunk)))
    base, extra = divmod(max_pages, n)
    return [base + (1 if i < extra else 0) for i in range(n)]


@shared_task(name="yinji.crawl.discover_run", **TASK_OPTIONS)
def discover_run(
    self: Task,
    options: Mapping[str, object] | None = None,
    parts: int = 2,
    run_id: str | None = None,
) -> JSONObject:
    """Plan, search and seed one run, then spread its crawl over bounded chunks (at
    least ``parts``), sent as one Celery group: ``workers.jobs.job_status`` of this
    task's id follows them (progress = pages fetched / the run's page budget). With
    imported Legado sites, half the budget goes to chunks that walk them
    (``discover_legado``, the sites shared out among at most ``parts`` chunks)."""
    return once(self, lambda: _plan_and_spread(self, options, parts, run_id))


def legado_split(max_pages: int, hosts: list[str], parts: int) -> list[tuple[list[str], int]]:
    """(sites, page budget) of each Legado chunk: half the run's budget (all of it when
    ``max_pages`` is 1), shared out among at most ``parts`` chunks by their sites."""
    if not hosts:
        return []
    total = max(1, max_pages // 2)
    n = max(1, min(parts, len(hosts), total))
    groups = [hosts[i::n] for i in range(n)]
    base, extra = divmod(total, n)
    return [(g, base + (1 if i < extra else 0)) for i, g in enumerate(groups)]


def _plan_and_spread(
    task: Task, options: Mapping[str, object] | None, parts: int, run_id: str | None = None
) -> dict[str, Any]:
    runtime = rt(task)
    opts = _options(options)
    run = DiscoveryRun(
        runtime.library, opts, crawler=runtime.crawler, run_id=run_id or new_run_id()
    )
    run.plan()
    run.search()
    run.sites()
    report = run.finish()
    chunk = env_int("YINJI_DISCOVER_CHUNK", CHUNK_PAGES, minimum=1, maximum=10_000)
    walks = legado_split(opts.max_pages, run.legado_hosts() if run.books else [], max(1, parts))
    crawl_pages = opts.max_pages - sum(b for _, b in walks)
    budgets = chunk_budgets(crawl_pages, chunk, max(1, parts)) if crawl_pages > 0 else []
    children: list[Child] = [
        (
            "yinji.crawl.discover_crawl",
            [report.id, i, dict(asdict(opts), max_pages=pages, wait_for_others=30.0)],
            {},
            f"{report.id} chunk {i + 1}/{len(budgets)}",
        )
        for i, pages in enumerate(budgets)
    ]
    children += [
        (
            "yinji.crawl.discover_legado",
            [report.id, i, dict(asdict(opts), max_pages=pages), hosts],
            {},
            f"{report.id} Legado sites {i + 1}/{len(walks)}",
        )
        for i, (hosts, pages) in enumerate(walks)
    ]
    budgets = budgets + [pages for _, pages in walks]
    sent = fanout(task, children, totals=budgets)
    return {
        "run": report.id,
        "works": report.works,
        "queries": report.queries,
        "seeded": sum(s.found for s in report.sources.values()),
        "errors": report.errors,
        "crawl_tasks": [c["id"] for c in sent],
        "fanout": sent,
    }


@shared_task(name="yinji.crawl.discover_crawl", **TASK_OPTIONS)
def discover_crawl(
    self: Task, run_id: str, part: int, options: Mapping[str, object] | None = None
) -> JSONObject:
    """One chunk of run ``run_id``'s crawl: at most ``options["max_pages"]`` pages from
    the shared frontier (its part ``part`` of the run's report)."""
    return once(self, lambda: _crawl(self, run_id, part, options))


def _crawl(
    task: Task, run_id: str, part: int, options: Mapping[str, object] | None
) -> dict[str, Any]:
    runtime = rt(task)
    opts = _options(options)
    # Workers scale by their own processes; a reader process per chunk would cost its
    # start-up (trafilatura's imports) every 50 pages.
    opts.read_processes = 0
    progress = Progress(task, opts.max_pages)
    progress.start()
    fetched = 0

    def on_page(_result: PageResult) -> None:
        nonlocal fetched
        fetched += 1
        progress(fetched)

    run = DiscoveryRun(
        runtime.library,
        opts,
        crawler=runtime.crawler,
        run_id=f"{run_id}~{part:03d}",
        on_page=on_page,
    )
    run.crawl()
    report = run.finish()
    return {
        "run": run_id,
        "part": part,
        "total": opts.max_pages,  # the chunk's budget: what its progress counts to
        "fetched": report.fetched,
        "checked": report.checked,
        "duplicates": report.duplicates,
        "matched": report.matched,
        "errors": len(report.errors),
    }


@shared_task(name="yinji.crawl.discover_legado", **TASK_OPTIONS)
def discover_legado(
    self: Task, run_id: str, part: int, options: Mapping[str, object], hosts: list[str]
) -> JSONObject:
    """One Legado chunk of run ``run_id``: the imported sites ``hosts`` searched for
    every book and walked within ``options["max_pages"]`` fetches (its part of the
    run's report)."""
    return once(self, lambda: _legado(self, run_id, part, options, hosts))


def _legado(
    task: Task, run_id: str, part: int, options: Mapping[str, object], hosts: list[str]
) -> dict[str, Any]:
    runtime = rt(task)
    opts = _options(options)
    progress = Progress(task, opts.max_pages)
    progress.start()
    run = DiscoveryRun(
        runtime.library, opts, crawler=runtime.crawler, run_id=f"{run_id}~L{part:03d}"
    )
    run.on_page = lambda _result: progress(min(run.report.fetched, opts.max_pages))
    run.plan_books()
    run.legado(hosts)
    report = run.finish()
    return {
        "run": run_id,
        "part": f"L{part}",
        "total": opts.max_pages,
        "fetched": report.fetched,
        "checked": report.checked,
        "matched": report.matched,
        "errors": len(report.errors),
    }


@shared_task(name="yinji.crawl.discover_daily", **TASK_OPTIONS)
def discover_daily(self: Task) -> JSONObject:
    """The beat's daily discovery run within the default budgets."""
    options = asdict(
        RunOptions(
            max_queries=env_int("YINJI_DISCOVER_QUERIES", 10, minimum=0),
            max_pages=env_int("YINJI_DISCOVER_PAGES", 2000, minimum=1),
        )
    )
    parts = env_int("YINJI_DISCOVER_PARTS", 4, minimum=1, maximum=64)
    return once(self, lambda: _plan_and_spread(self, options, parts))
