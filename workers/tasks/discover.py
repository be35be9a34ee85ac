"""Discovery tasks (queue ``crawl``): a run's plan, searches and site searches in one
task, its crawl spread over workers, and the daily run the beat sends.

- ``yinji.crawl.discover_run(options)``: plans the run (queries from the works),
  asks the providers and the registered sites, puts every URL found into the frontier
  in Redis (``tracker.discovery.frontier``), then sends ``parts`` crawl tasks.
- ``yinji.crawl.discover_crawl(run_id, part, options)``: claims URLs from the shared
  frontier (per-host politeness is Redis's clock, so many workers on many machines never
  ask one host faster than its interval), fetches and checks each page exactly as
  ``yinji check URL`` does, follows links into the same frontier, and keeps its part of
  the run's report (``RunHistory``: one record per part, added up when read).
- ``yinji.crawl.discover_daily()``: the beat's daily run (``YINJI_DISCOVER_AT``,
  default 02:00) with the default budgets: at most ``YINJI_DISCOVER_QUERIES`` (10)
  queries per work per provider per UTC day, ``YINJI_DISCOVER_PAGES`` (2000) fetches,
  ``YINJI_DISCOVER_PARTS`` (4) crawl tasks.

A worker killed mid-crawl loses nothing: its leases in the frontier run out and another
crawl task (or the next run) claims those URLs again; pages already done are never
fetched twice (the frontier's seen set), only revisited on schedule.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from celery import Task, shared_task

from tracker.config import env_int
from tracker.discovery.run import DiscoveryRun, RunOptions, new_run_id
from workers.tasks._base import TASK_OPTIONS, once, rt


def _options(raw: dict[str, Any] | None) -> RunOptions:
    known = {f.name for f in fields(RunOptions)}
    return RunOptions(**{k: v for k, v in (raw or {}).items() if k in known})


@shared_task(name="yinji.crawl.discover_run", **TASK_OPTIONS)
def discover_run(
    self: Task, options: dict[str, Any] | None = None, parts: int = 2
) -> dict[str, Any]:
    """Plan, search and seed one run, then spread its crawl over ``parts`` tasks."""
    return once(self, lambda: _plan_and_spread(self, options, parts))


def _plan_and_spread(task: Task, options: dict[str, Any] | None, parts: int) -> dict[str, Any]:
    runtime = rt(task)
    opts = _options(options)
    run = DiscoveryRun(runtime.library, opts, crawler=runtime.crawler, run_id=new_run_id())
    run.plan()
    run.search()
    run.sites()
    report = run.finish()
    parts = max(1, parts)
    share = dict(asdict(opts), max_pages=max(1, opts.max_pages // parts), wait_for_others=30.0)
    sent = [discover_crawl.apply_async(args=(report.id, i, share)).id for i in range(parts)]
    return {
        "run": report.id,
        "works": report.works,
        "queries": report.queries,
        "seeded": sum(s.found for s in report.sources.values()),
        "errors": report.errors,
        "crawl_tasks": sent,
    }


@shared_task(name="yinji.crawl.discover_crawl", **TASK_OPTIONS)
def discover_crawl(
    self: Task, run_id: str, part: int, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Crawl the shared frontier for run ``run_id`` (its part ``part``)."""
    return once(self, lambda: _crawl(self, run_id, part, options))


def _crawl(task: Task, run_id: str, part: int, options: dict[str, Any] | None) -> dict[str, Any]:
    runtime = rt(task)
    run = DiscoveryRun(
        runtime.library,
        _options(options),
        crawler=runtime.crawler,
        run_id=f"{run_id}~{part:03d}",
    )
    run.crawl()
    report = run.finish()
    return {
        "run": run_id,
        "part": part,
        "fetched": report.fetched,
        "checked": report.checked,
        "duplicates": report.duplicates,
        "matched": report.matched,
        "errors": len(report.errors),
    }


@shared_task(name="yinji.crawl.discover_daily", **TASK_OPTIONS)
def discover_daily(self: Task) -> dict[str, Any]:
    """The beat's daily discovery run within the default budgets."""
    options = asdict(
        RunOptions(
            max_queries=env_int("YINJI_DISCOVER_QUERIES", 10, minimum=0),
            max_pages=env_int("YINJI_DISCOVER_PAGES", 2000, minimum=1),
        )
    )
    parts = env_int("YINJI_DISCOVER_PARTS", 4, minimum=1, maximum=64)
    return once(self, lambda: _plan_and_spread(self, options, parts))
