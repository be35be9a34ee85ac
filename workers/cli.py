"""``yinji worker``, ``yinji beat``, ``yinji watch`` and ``yinji job``: commands of the
``yinji`` CLI that live in ``workers`` (entry-point group ``yinji.commands``).

They take the data folder from the parent group (``yinji --data-dir X worker``) and put
it in ``YINJI_DATA_DIR`` before the Celery app reads its configuration, so the worker,
its pool's children and the web app all find the same store and embedded Redis.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any, Literal

import click

from tracker.common.timefmt import iso_utc
from tracker.plumbing.config import SettingError, Settings, WorkerSettings
from tracker.plumbing.datadir import private_dir


def _settings(ctx: click.Context, *, broker: bool = True) -> Settings:
    """The settings; a bad environment variable (worker options included, read here so
    that a worker refuses to start instead of failing on its first task) is a clear
    error naming it."""
    data_dir = (ctx.obj or {}).get("data_dir")
    if data_dir is not None:
        os.environ["YINJI_DATA_DIR"] = str(data_dir)
    from workers.app import require_broker

    try:
        WorkerSettings.from_env()
        _case_settings_from_env()  # alerts, SMTP, schedules, TSA: refuse a bad value
        settings = Settings.from_env()
        if broker:
            require_broker(settings)  # no silent fallback to Celery's default broker
        return settings
    except SettingError as exc:
        raise click.ClickException(str(exc)) from None


def _case_settings_from_env() -> None:
    from tracker.cases.settings import CaseSettings
    from tracker.evidence.settings import EvidenceSettings
    from workers.schedule import CaseSchedule, EvidenceSchedule

    CaseSettings.from_env()
    CaseSchedule.from_env()
    EvidenceSchedule.from_env()
    EvidenceSettings.from_env()  # the TSA and the key the evidence tasks use


def node_name(given: str | None) -> str:
    """The worker's node name: ``given`` with Celery's ``%h``/``%n``/``%d`` expanded
    (``w1@%h`` → ``w1@myhost``; a name without ``@`` gets ``@<host>``), default
    ``yinji-<pid>@<host>``."""
    from celery.utils.nodenames import default_nodename, host_format

    name = given or f"yinji-{os.getpid()}@%h"
    if "@" not in name:
        name = f"{name}@%h"
    return host_format(default_nodename(name))


def _say_durability_problem() -> None:
    """Warn when the broker's Redis keeps no append-only file
    (``workers.health.durability_problem``), from a thread of its own: reading the result
    backend before the worker has started delayed its start by seconds."""
    import threading

    def check() -> None:
        from workers.health import durability_problem

        problem = durability_problem()
        if problem:
            click.echo(f"yinji worker: warning: {problem}", err=True)

    threading.Thread(target=check, name="yinji-durability-check", daemon=True).start()


ROOT_NOTE = (
    "running as root: run Yinji's workers as an unprivileged user (a task that is "
    "tricked into running code would run it as root)"
)


def quiet_root_warning() -> None:
    """Celery warns in ten lines (a ``SecurityWarning``) when a worker runs as root,
    once per worker process: ``yinji serve`` printed it twice at every start. The
    advice stands, in one line: said here, or (``YINJI_ROOT_NOTED``, set by serve for
    its own workers) once by serve itself; Celery's text is filtered out."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    import warnings

    from celery.exceptions import SecurityWarning

    warnings.filterwarnings(
        "ignore", message="You're running the worker with superuser", category=SecurityWarning
    )
    if not os.environ.get("YINJI_ROOT_NOTED"):
        click.echo(f"yinji worker: {ROOT_NOTE}", err=True)


@click.command()
@click.option(
    "-c",
    "--concurrency",
    type=click.IntRange(min=1),
    default=None,
    help="Tasks run at once [default: number of CPUs].",
)
@click.option(
    "-Q",
    "--queues",
    default=None,
    help="Comma-separated queues to consume [default: all: "
    "default,crawl,check,ingest,reports,index,cases,alerts].",
)
@click.option(
    "-l",
    "--loglevel",
    default="INFO",
    show_default=True,
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], case_sensitive=False),
)
@click.option(
    "-P",
    "--pool",
    default="prefork",
    show_default=True,
    type=click.Choice(["prefork", "threads", "solo"]),
    help="prefork: one process per task slot (CPU-bound checks); threads: "
    "crawl-heavy workers; solo: one task at a time in this process.",
)
@click.option(
    "-n",
    "--hostname",
    default=None,
    help="Node name; %h (host name), %n (its first part) and %d (domain) are expanded, "
    "as in Celery [default: yinji-<pid>@%h].",
)
@click.pass_context
def worker(
    ctx: click.Context,
    concurrency: int | None,
    queues: str | None,
    loglevel: str,
    pool: str,
    hostname: str | None,
) -> None:
    """Run a Celery worker (scale out by running more of them)."""
    settings = _settings(ctx)
    from workers.app import QUEUES, celery_app

    chosen = [q.strip() for q in (queues or "").split(",") if q.strip()] or list(QUEUES)
    unknown = sorted(set(chosen) - set(QUEUES))
    if unknown:
        raise click.UsageError(
            f"unknown queue(s) {', '.join(unknown)}; choose from {', '.join(QUEUES)}"
        )
    celery_app.yinji_settings = settings
    celery_app.set_default()
    quiet_root_warning()
    _say_durability_problem()

    w = celery_app.Worker(
        hostname=node_name(hostname),
        concurrency=concurrency,
        queues=chosen,
        loglevel=loglevel.upper(),
        pool_cls=pool,
        # Mingle and gossip sync revoked ids and clocks between workers at a cost per
        # worker; Yinji revokes nothing, and they slow every start by a second.
        without_mingle=True,
        without_gossip=True,
    )
    w.start()
    # The queue server this worker may have started (the first process on the data
    # folder): stopped when nobody else uses it, after this worker's own connections.
    from workers.app import release_embedded

    with contextlib.suppress(Exception):
        celery_app.close()
        celery_app.backend.client.connection_pool.disconnect()
    with contextlib.suppress(Exception):
        release_embedded(settings, only_if_alone=True)
    ctx.exit(w.exitcode or 0)


@click.command()
@click.option(
    "-l",
    "--loglevel",
    default="INFO",
    show_default=True,
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], case_sensitive=False),
)
@click.pass_context
def beat(ctx: click.Context, loglevel: str) -> None:
    """Run the scheduler (daily watch-list re-crawl, check of new mothers, re-check of
    noticed cases, digest; the evidence log's tree head every hour). Run one."""
    settings = _settings(ctx)
    from workers.app import celery_app

    celery_app.yinji_settings = settings
    celery_app.set_default()
    private_dir(settings.data_dir)
    celery_app.Beat(
        schedule=str(settings.data_dir / "celerybeat-schedule"),
        loglevel=loglevel.upper(),
    ).run()


@click.group()
def watch() -> None:
    """The watch list: URLs and sites re-crawled every day."""


def _store(ctx: click.Context) -> Any:
    from tracker.store import open_store

    return open_store(_settings(ctx, broker=False))


@watch.command("add")
@click.argument("url")
@click.option(
    "--site", is_flag=True, help="Watch a site: its start page and the same-host links on it."
)
@click.option(
    "--book",
    is_flag=True,
    help="Watch a pirate book: URL is its index page; every chapter (and its next pages) "
    "is checked and the book is one case on its domain.",
)
@click.option("--no-crawl", is_flag=True, help="Do not crawl it now, only from the next run.")
@click.pass_context
def watch_add(ctx: click.Context, url: str, site: bool, book: bool, no_crawl: bool) -> None:
    """Add (or re-activate) URL, crawl and check it once now, and say when the daily
    re-crawl (run by `yinji beat` with a worker) visits it next."""
    from tracker.common.rules import check_url
    from tracker.store import WatchItem

    if site and book:
        raise click.UsageError("choose --site or --book, not both")
    try:
        url = check_url(url)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="URL") from None
    kind: Literal["url", "site", "book"] = "site" if site else "book" if book else "url"
    with _store(ctx) as store:
        # A book item is re-crawled by the crawl_book task (tracker.cases.books).
        store.put_watch(WatchItem(url=url, kind=kind))
    click.echo(f"watching {kind} {url}", err=True)
    if not no_crawl:
        _watch_crawl_now(ctx, url, kind)
    _say_next_crawl()


def _watch_crawl_now(ctx: click.Context, url: str, kind: str) -> None:
    """The item's first crawl, in this process (``tracker.cases.watching.crawl_now``)."""
    from tracker.cases import CaseService, open_case_store
    from tracker.cases.watching import crawl_now
    from tracker.crawler import Crawler, CrawlerConfig
    from tracker.library import Library
    from tracker.services.watch_list import WatchList

    settings = _settings(ctx)
    ws = WorkerSettings.from_env()
    overrides = {} if ws.crawl_min_interval is None else {"min_interval": ws.crawl_min_interval}
    with (
        Library.open(settings) as lib,
        Crawler(CrawlerConfig.from_settings(settings, **overrides)) as crawler,
        open_case_store(settings) as cases,
    ):
        svc = CaseService(cases, settings)
        try:
            run = crawl_now(
                url, kind, library=lib, crawler=crawler, svc=svc, site_limit=ws.site_crawl_limit
            )
        finally:
            svc.close()
        if run.pages:
            WatchList.of(lib).mark_crawled(url)
    case = f"; case {run.case_id}" if run.case_id else ""
    click.echo(f"crawled now: {run.pages} page(s), {run.matches} match(es){case}", err=True)
    for error in run.errors:
        click.echo(f"  not fetched: {error}", err=True)


def _say_next_crawl() -> None:
    from tracker.cases.watching import next_daily_run
    from tracker.common.timefmt import human_utc

    ws = WorkerSettings.from_env()
    when = next_daily_run(ws.recrawl_at, ws.timezone)
    click.echo(
        f"next crawl: {human_utc(when)} (daily at {ws.recrawl_at[0]:02d}:{ws.recrawl_at[1]:02d}"
        f" {ws.timezone}, YINJI_RECRAWL_AT), run by `yinji beat` with a worker "
        "(`yinji worker`, or the one `yinji serve` starts): without `yinji beat` running, "
        "no daily crawl happens",
        err=True,
    )


@watch.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include inactive items.")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines on stdout.")
@click.pass_context
def watch_list(ctx: click.Context, show_all: bool, as_json: bool) -> None:
    """List the watch list."""
    with _store(ctx) as store:
        items = store.list_watch(active_only=not show_all)
    for item in items:
        last = iso_utc(item.last_crawled_at)
        if as_json:
            click.echo(
                json.dumps(
                    {
                        "url": item.url,
                        "kind": item.kind,
                        "active": item.active,
                        "added_at": iso_utc(item.added_at),
                        "last_crawled_at": last,
                    },
                    ensure_ascii=False,
                )
            )
        else:
            flag = "" if item.active else " (inactive)"
            click.echo(f"{item.kind:<4} {item.url}{flag}  last crawled: {last or 'never'}")
    if not as_json:
        click.echo(f"{len(items)} item(s)", err=True)


@watch.command("remove")
@click.argument("url")
@click.pass_context
def watch_remove(ctx: click.Context, url: str) -> None:
    """Remove URL from the watch list."""
    with _store(ctx) as store:
        known = {item.url for item in store.list_watch(active_only=False)}
        if url.strip() not in known:
            raise click.ClickException(f"not on the watch list: {url}")
        store.delete_watch(url.strip())
    click.echo(f"removed {url.strip()}", err=True)


@click.command()
@click.argument("job_id")
@click.pass_context
def job(ctx: click.Context, job_id: str) -> None:
    """Print a background job's status as JSON."""
    _settings(ctx)
    from workers import jobs

    try:
        status = jobs.job_status(job_id)
    except jobs.UnknownJob:
        raise click.ClickException(f"no such job: {job_id}") from None
    click.echo(json.dumps(status, ensure_ascii=False, indent=2))
