"""``yinji discover site import FILE|DIR|URL``: Legado sources become registered sites.

Every source of the input is judged (``sources.judge``); each one not refused is kept
as a ``Site`` (``profile`` "legado", the source in ``meta["legado"]``, ``origin`` the file
or URL it came from, its ``status`` and ``reasons``). Re-importing a site's source
updates it and keeps its health. A file that cannot be read is one ``SourceError``
naming it; a source that cannot be used is one ``refused`` verdict naming it: neither
costs the others anything.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from tracker.common.timefmt import iso_utc
from tracker.discovery.legado.sources import (
    BookSource,
    SourceError,
    SourceVerdict,
    judge,
    load_sources,
)
from tracker.discovery.sites import Site, SiteRegistry

if TYPE_CHECKING:
    from tracker.crawler import Crawler
    from tracker.library import Library

__all__ = ["import_path", "import_text", "read_input"]

MAX_FILE_BYTES = 32 * 1024 * 1024
SUFFIXES = (".json", ".txt", ".js")


def read_input(target: str, crawler: Crawler | None = None) -> list[tuple[str, str]]:
    """(origin, text) of each file ``target`` names: a file, a folder's ``*.json``/
    ``*.txt``/``*.js`` files, or an http(s) URL (read through ``crawler``: SSRF guard,
    robots.txt). ``SourceError`` names what cannot be read."""
    if target.startswith(("http://", "https://")):
        from tracker.crawler import CrawlError
        from tracker.crawler.fetch import Request

        if crawler is None:
            raise SourceError(f"{target}: no crawler to read a URL with")
        try:
            result = crawler.fetch(target, request=Request(json_ok=True))
        except CrawlError as exc:
            raise SourceError(f"{target}: cannot read it: {exc}") from None
        return [(target, result.body.decode("utf-8-sig", errors="replace"))]
    path = Path(target)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in SUFFIXES and p.is_file())
        if not files:
            raise SourceError(f"{target}: no .json, .txt or .js file in this folder")
    elif path.is_file():
        files = [path]
    else:
        raise SourceError(f"{target}: no such file, folder or http(s) URL")
    out = []
    for f in files:
        if f.stat().st_size > MAX_FILE_BYTES:
            raise SourceError(f"{f}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
        out.append((str(f), f.read_bytes().decode("utf-8-sig", errors="replace")))
    return out


def _no_browser(library: Library, crawler: Crawler | None) -> str | None:
    """Why ``webView`` pages cannot be rendered here (None when they can): the browser
    settings of ``crawler``, else of the library's settings (``YINJI_CHROMIUM``)."""
    from tracker.crawler import CrawlerConfig
    from tracker.crawler.browser import unavailable

    config = crawler.config if crawler is not None else None
    return unavailable(config or CrawlerConfig.from_settings(library.settings))


def import_text(
    library: Library, text: str, origin: str, crawler: Crawler | None = None
) -> list[SourceVerdict]:
    """Judge and keep every source of one file's ``text`` (see the module docstring);
    ``webView`` sources are judged by whether a headless browser is installed
    (``crawler``'s settings, else the library's)."""
    registry = SiteRegistry(library.store)
    verdicts = []
    no_browser = _no_browser(library, crawler)
    for raw in load_sources(text, origin):
        verdict = judge(raw, no_browser)
        if verdict.status != "refused":
            try:
                _keep(registry, BookSource.from_raw(raw), verdict, origin)
            except (SourceError, ValueError) as exc:
                verdict = SourceVerdict(verdict.name, verdict.url, "refused", [str(exc)])
        verdicts.append(verdict)
    return verdicts


def import_path(
    library: Library, target: str, crawler: Crawler | None = None
) -> list[SourceVerdict]:
    """Import every file of ``target`` (``read_input``); a file that is not sources is
    one refused verdict naming it, and the other files are still imported."""
    out: list[SourceVerdict] = []
    for origin, text in read_input(target, crawler):
        try:
            out += import_text(library, text, origin, crawler)
        except SourceError as exc:
            out.append(SourceVerdict(Path(origin).name, origin, "refused", [str(exc)]))
    return out


def _keep(registry: SiteRegistry, source: BookSource, verdict: SourceVerdict, origin: str) -> Site:
    from tracker.common.rules import check_url
    from tracker.discovery.urls import normalize_url

    home = normalize_url(check_url(source.url))
    old = registry.get(home)
    meta = {"legado": source.raw}
    if old is not None and old.health:
        meta["health"] = old.health
    site = Site(
        url=home,
        search_url=source.search_template,
        encoding=source.charset or "utf-8",
        profile="legado",
        added_at=iso_utc(datetime.now(UTC)),
        note=source.name,
        meta=meta,
        origin=origin,
        status=verdict.status,
        reasons=list(verdict.reasons),
    )
    return registry.add(site)
