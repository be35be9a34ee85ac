"""``yinji discover``: run discovery, manage pirate sites, read past runs.

Output contract of ``discover run --json``: stdout is JSON Lines, one line per page
checked, ``{"url", "requested_url", "source", "suspect_id", "matches": [...]}`` (the
``matches`` of ``yinji check --json``; a chapter read over several pages adds ``pages``);
without ``--json``: ``source<TAB>url<TAB>matches<TAB>suspect_id``. The summary goes to
stderr; exit status 0 (errors of providers, sites and pages are lines of the summary, the
run goes on).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click


def _library(ctx: click.Context) -> Any:
    from tracker.cli_common import command_settings, open_library

    click.echo(f"library: {command_settings(ctx).describe_library()}", err=True)
    return open_library(ctx)


@click.group()
def discover() -> None:
    """发现 Discovery: find copies nobody has pointed at (web search, pirate sites, crawl)."""


@discover.command("run")
@click.option("--work", "works", multiple=True, help="A work id to look for (repeatable).")
@click.option(
    "--max-queries",
    type=click.IntRange(0, 1000),
    default=10,
    show_default=True,
    help="Queries per work per provider per UTC day.",
)
@click.option(
    "--max-pages", type=click.IntRange(0), default=200, show_default=True, help="Fetches."
)
@click.option("--max-works", type=click.IntRange(1), default=100, show_default=True)
@click.option("--concurrency", type=click.IntRange(1, 64), default=4, show_default=True)
@click.option(
    "--interval",
    type=click.FloatRange(0.0),
    default=1.0,
    show_default=True,
    help="Seconds between two requests to one host.",
)
@click.option(
    "--processes",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Crawl processes sharing the frontier and the page budget (1: one, with a "
    "reader process for extraction on a machine of two cores or more).",
)
@click.option("--json", "as_json", is_flag=True, help="JSON Lines on stdout, one per page checked.")
@click.pass_context
def run_cmd(
    ctx: click.Context,
    works: tuple[str, ...],
    max_queries: int,
    max_pages: int,
    max_works: int,
    concurrency: int,
    interval: float,
    processes: int,
    as_json: bool,
) -> None:
    """Build queries from the works, ask the search providers (YINJI_SEARCH_URL,
    YINJI_GOOGLE_API_KEY + YINJI_GOOGLE_CX, YINJI_BRAVE_API_KEY) and the registered
    sites, crawl, and check every page like `yinji check URL` (evidence recorded)."""
    from tracker.discovery.run import DiscoveryRun, PageResult, RunOptions

    options = RunOptions(
        works=list(works),
        max_queries=max_queries,
        max_pages=max_pages,
        max_works=max_works,
        concurrency=concurrency,
        interval=interval,
        crawl_processes=processes,
    )

    def on_page(result: PageResult) -> None:
        if not result.checked:
            return
        if as_json:
            sys.stdout.write(json.dumps(result.to_json(), ensure_ascii=False) + "\n")
            sys.stdout.flush()
        else:
            found = ", ".join(f"{m['mother_id']} {m.get('score', 0):.2f}" for m in result.matches)
            where = result.final_url or result.url
            if len(result.pages) > 1:  # a chapter over pages: one check, every page filed
                where += " + " + " + ".join(result.pages[1:])
            click.echo(f"{result.source}\t{where}\t{found or '-'}\t{result.suspect_id}")

    with _library(ctx) as lib:
        if lib.store.count_mothers() == 0:
            raise click.ClickException("the library holds no works: ingest some first")
        runner = DiscoveryRun(
            lib, options, on_page=on_page, on_note=lambda note: click.echo(note, err=True)
        )
        if not runner.providers:
            click.echo(
                "no search provider configured (YINJI_SEARCH_URL, YINJI_GOOGLE_API_KEY + "
                "YINJI_GOOGLE_CX, YINJI_BRAVE_API_KEY): registered sites and the crawl only",
                err=True,
            )
        report = runner.run()
    for line in report.summary_lines():
        click.echo(line, err=True)


@discover.group("site")
def site() -> None:
    """Pirate sites searched by title in every run."""


@site.command("add")
@click.argument("site_url")
@click.option(
    "--search-url",
    default=None,
    help="The site's search URL with {q} for the query, e.g. 'http://host/search?kw={q}'.",
)
@click.option("--encoding", default=None, help="How the query is encoded (gbk, utf-8...).")
@click.pass_context
def site_add(
    ctx: click.Context, site_url: str, search_url: str | None, encoding: str | None
) -> None:
    """Register SITE_URL; without --search-url its search form is found by itself."""
    from tracker.discovery.service import register_site
    from tracker.discovery.sites import SiteError

    with _library(ctx) as lib:
        try:
            found = register_site(lib, site_url, search_url=search_url, encoding=encoding)
        except SiteError as exc:
            raise click.ClickException(str(exc)) from None
    click.echo(f"{found.host}\t{found.profile}\t{found.encoding}\t{found.search_url}")


@site.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def site_list(ctx: click.Context, as_json: bool) -> None:
    """The registered sites: host, layout, encoding, where it came from, its last search."""
    from tracker.discovery.sites import SiteRegistry

    with _library(ctx) as lib:
        sites = SiteRegistry(lib.store).list()
    for s in sites:
        if as_json:
            click.echo(json.dumps(s.to_dict(), ensure_ascii=False))
        else:
            click.echo(
                f"{s.host}\t{s.profile}\t{s.encoding}\t{s.origin or 'site add'}\t"
                f"{_health(s)}\t{s.note or s.search_url}"
            )
    if not sites:
        click.echo(
            "no site registered (yinji discover site add URL, yinji discover site import FILE)",
            err=True,
        )


def _health(site: Any) -> str:
    h = site.health
    if not h:
        return "not searched yet"
    state = "disabled" if h.get("disabled") else "enabled"
    if h.get("ok"):
        return f"{state}; last search {h.get('at')} ok, {h.get('results', 0)} results"
    failures = h.get("failures", 0)
    return f"{state}; last search {h.get('at')} failed ({failures} in a row): {h.get('error', '')}"


@site.command("import")
@click.argument("target")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per source.")
@click.pass_context
def site_import(ctx: click.Context, target: str, as_json: bool) -> None:
    """Import Legado (阅读) book sources from a FILE, a DIR of files or a URL: one line
    per source, imported / partial / refused with the reasons."""
    from dataclasses import asdict

    from tracker.discovery.legado.importer import import_path
    from tracker.discovery.legado.sources import SourceError

    with _library(ctx) as lib:
        crawler = None
        if target.startswith(("http://", "https://")):
            from tracker.crawler import Crawler, CrawlerConfig

            crawler = Crawler(CrawlerConfig.from_settings(lib.settings, screenshots="off"))
        try:
            verdicts = import_path(lib, target, crawler)
        except SourceError as exc:
            raise click.ClickException(str(exc)) from None
        finally:
            if crawler is not None:
                crawler.close()
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v.status] = counts.get(v.status, 0) + 1
        if as_json:
            click.echo(json.dumps(asdict(v), ensure_ascii=False))
        else:
            why = "; ".join(v.reasons)
            click.echo(f"{v.status}\t{v.name}\t{v.url}" + (f"\t{why}" if why else ""))
    kept = counts.get("imported", 0) + counts.get("partial", 0)
    click.echo(
        f"{len(verdicts)} sources: "
        + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        + (" (see `yinji discover site list`)" if kept else ""),
        err=True,
    )


@site.command("enable")
@click.argument("host")
@click.pass_context
def site_enable(ctx: click.Context, host: str) -> None:
    """Search a site again after repeated failures disabled it."""
    from tracker.discovery.sites import SiteRegistry

    with _library(ctx) as lib:
        if SiteRegistry(lib.store).set_enabled(host, True) is None:
            raise click.ClickException(f"no registered site {host!r}")
    click.echo(f"enabled {host}", err=True)


@site.command("disable")
@click.argument("host")
@click.pass_context
def site_disable(ctx: click.Context, host: str) -> None:
    """Stop searching a site until it is enabled again."""
    from tracker.discovery.sites import SiteRegistry

    with _library(ctx) as lib:
        if SiteRegistry(lib.store).set_enabled(host, False) is None:
            raise click.ClickException(f"no registered site {host!r}")
    click.echo(f"disabled {host}", err=True)


@site.command("remove")
@click.argument("site_url")
@click.pass_context
def site_remove(ctx: click.Context, site_url: str) -> None:
    """Forget a registered site (by its URL or host name)."""
    from tracker.discovery.sites import SiteRegistry

    with _library(ctx) as lib:
        if not SiteRegistry(lib.store).remove(site_url):
            raise click.ClickException(f"no registered site {site_url!r}")
    click.echo(f"removed {site_url}", err=True)


@discover.command("runs")
@click.option("--limit", type=click.IntRange(1), default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def runs(ctx: click.Context, limit: int, as_json: bool) -> None:
    """The last discovery runs and what each found."""
    from tracker.discovery.run import RunHistory

    with _library(ctx) as lib:
        reports = RunHistory(lib.store).list(limit)
    for r in reports:
        if as_json:
            click.echo(json.dumps(r.to_dict(), ensure_ascii=False))
        else:
            click.echo("\n".join(r.summary_lines()))
