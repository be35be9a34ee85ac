"""What the CLI, the web admin, the REST API and the workers share: registering a site
and the state of discovery (providers with their quotas, sites, budgets, last runs).
One rule, one place: ``yinji discover site add`` and ``POST /api/v1/discover/sites``
both call ``register_site``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tracker.common.records import JSONObject
from tracker.common.timefmt import iso_utc
from tracker.discovery.keys import DiscoveryKeys
from tracker.discovery.legado.sources import SourceVerdict
from tracker.discovery.providers import Searcher, providers_from_env
from tracker.discovery.run import RunHistory, RunOptions, RunReport
from tracker.discovery.sites import Site, SiteError, SiteRegistry, find_search, load_profiles

if TYPE_CHECKING:
    from tracker.crawler import Crawler
    from tracker.library import Library

__all__ = [
    "DiscoveryOverview",
    "ProviderStatus",
    "import_sources",
    "overview",
    "register_site",
]


def register_site(
    library: Library,
    url: str,
    *,
    search_url: str | None = None,
    encoding: str | None = None,
    crawler: Crawler | None = None,
) -> Site:
    """Register the pirate site at ``url``: with ``search_url`` (``{q}`` for the query)
    as given, else its search form found on its home page (``sites.find_search``).
    ``SiteError`` (a ``ValueError``) names the input and why it was refused."""
    from tracker.common.rules import check_url
    from tracker.discovery.urls import normalize_url

    try:
        check_url(url)
        home = normalize_url(url)
    except ValueError as exc:
        raise SiteError(f"site URL {url!r}: {exc}") from None
    if encoding:
        import codecs

        try:
            codecs.lookup(encoding)
        except LookupError:
            raise SiteError(f"encoding {encoding!r}: not a known character set") from None
    if search_url:
        if "{q}" not in search_url:
            raise SiteError(f"search URL {search_url!r} has no {{q}} for the query")
        try:
            check_url(search_url.replace("{q}", "q"))
        except ValueError as exc:
            raise SiteError(f"search URL {search_url!r}: {exc}") from None
        _guard(library, search_url.replace("{q}", "q"), f"search URL {search_url!r}", crawler)
        site = Site(url=home, search_url=search_url, encoding=encoding or "utf-8", profile="given")
    else:
        # A malformed profile of the user's costs only itself (``load_profiles``).
        profiles = load_profiles(library.settings.data_dir / "discovery" / "profiles", [])
        reader = crawler
        if reader is None:
            from tracker.crawler import Crawler, CrawlerConfig

            reader = Crawler(CrawlerConfig.from_settings(library.settings, screenshots="off"))
        try:
            site = find_search(reader, home, profiles)
        finally:
            if crawler is None:
                reader.close()
        if encoding:
            site.encoding = encoding
    site.added_at = iso_utc(datetime.now(UTC))
    site.origin = "site add"
    return SiteRegistry(library.store).add(site)


def import_sources(
    library: Library,
    *,
    name: str = "upload",
    data: bytes | None = None,
    url: str | None = None,
    crawler: Crawler | None = None,
) -> list[SourceVerdict]:
    """Import Legado book sources from an uploaded file's ``data`` (``name`` names it)
    or from ``url`` (read through the crawler: SSRF guard, robots.txt): one verdict per
    source (``legado.sources.judge``). ``SourceError`` (a ``ValueError``) names a file
    or URL that holds no sources; the one rule of ``yinji discover site import``, the
    发现 page's upload and ``POST /api/v1/discover/sites/import``."""
    from tracker.discovery.legado.importer import import_path, import_text
    from tracker.discovery.legado.sources import SourceError

    if url:
        from tracker.common.rules import check_url

        try:
            check_url(url)
        except ValueError as exc:
            raise SourceError(f"{url}: {exc}") from None
        reader = crawler
        if reader is None:
            from tracker.crawler import Crawler, CrawlerConfig

            reader = Crawler(CrawlerConfig.from_settings(library.settings, screenshots="off"))
        try:
            return import_path(library, url, reader)
        finally:
            if crawler is None:
                reader.close()
    if data is None:
        raise SourceError("give a file of Legado book sources or its URL")
    if len(data) > 32 * 1024 * 1024:
        raise SourceError(f"{name}: larger than 32 MiB")
    return import_text(library, data.decode("utf-8-sig", errors="replace"), name)


def _guard(library: Library, url: str, what: str, crawler: Crawler | None) -> None:
    """The crawler's SSRF guard on ``url`` now (DNS only): a private address is refused
    when given, not at the first run."""
    from tracker.crawler import Blocked, CrawlError, InvalidURL

    reader = crawler
    if reader is None:
        from tracker.crawler import Crawler, CrawlerConfig

        reader = Crawler(CrawlerConfig.from_settings(library.settings, screenshots="off"))
    try:
        reader.check_url(url)
    except (Blocked, InvalidURL) as exc:
        raise SiteError(f"{what}: {exc}") from None
    except CrawlError:
        pass  # not resolvable now: the run says so if it still is not
    finally:
        if crawler is None:
            reader.close()


@dataclass
class ProviderStatus:
    name: str
    quota: int  # queries a UTC day
    used_today: int
    endpoint: str  # where it is asked (no key)


@dataclass
class DiscoveryOverview:
    providers: list[ProviderStatus]
    sites: list[Site]
    budgets: dict[str, Any]
    runs: list[RunReport] = field(default_factory=list)

    def to_json(self) -> JSONObject:
        return {
            "providers": [asdict(p) for p in self.providers],
            "sites": [s.to_dict() for s in self.sites],
            "budgets": self.budgets,
            "runs": [r.to_dict() for r in self.runs],
        }


def overview(library: Library, *, runs: int = 10) -> DiscoveryOverview:
    """Providers (from the environment) with today's use, sites, budgets, last runs."""
    providers = providers_from_env()
    searcher = Searcher(providers, library.redis, DiscoveryKeys(library.settings.redis_prefix))
    statuses = [
        ProviderStatus(
            name=p.name,
            quota=searcher.quotas[p.name],
            used_today=searcher.used_today(p.name),
            endpoint=str(getattr(p, "url", "")),
        )
        for p in providers
    ]
    from tracker.plumbing.config import env_int, env_time

    defaults = RunOptions()
    at_h, at_m = env_time("YINJI_DISCOVER_AT", (2, 0))
    budgets = {
        "queries_per_work_per_provider_per_day": env_int(
            "YINJI_DISCOVER_QUERIES", defaults.max_queries, minimum=0
        ),
        "pages_per_daily_run": env_int("YINJI_DISCOVER_PAGES", 2000, minimum=1),
        "daily_run_at": f"{at_h:02d}:{at_m:02d}",
        "seconds_between_requests_to_one_host": defaults.interval,
    }
    return DiscoveryOverview(
        providers=statuses,
        sites=SiteRegistry(library.store).list(),
        budgets=budgets,
        runs=RunHistory(library.store).list(runs),
    )
