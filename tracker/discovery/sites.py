"""Pirate sites: profiles of the common Chinese novel-site layouts, registered sites,
finding a site's search form, and reading its search results.

A **profile** is a JSON file (``tracker/discovery/profiles/*.json``, and a user's own in
``DATA_DIR/discovery/profiles/*.json``, which win on a name clash) with:
``name``, ``description``, ``search_path`` (the search URL under the site, ``{q}`` the
query), ``form_action`` (a regular expression the search form's action matches),
``query_field`` (the form's query input), ``encoding`` (how the query is percent-encoded:
``gbk`` for most JieQi sites), ``book_link`` (a regular expression of book pages' paths)
and ``results_marker`` (a regular expression a results page matches; a page that does
not is "the profile no longer matches").

``find_search`` reads the site's home page through the crawler (SSRF guard, robots.txt,
charset detection), takes its search form (a ``<form>`` with a text input: the action,
the hidden inputs, the query field) and names the profile whose ``form_action`` it
matches; without a form it tries each profile's ``search_path``. The form's page charset
(GBK, GB18030, Big5 or UTF-8) is how the query is encoded.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urljoin, urlsplit

from tracker.common.records import JSONObject
from tracker.discovery.urls import host_of

if TYPE_CHECKING:
    from tracker.crawler import Crawler
    from tracker.store.base import Store

__all__ = [
    "Site",
    "SiteError",
    "SiteProfile",
    "SiteRegistry",
    "find_search",
    "load_profiles",
    "result_links",
    "search_url",
]

BUILTIN_PROFILES = Path(__file__).with_name("profiles")
QUERY_FIELDS = ("searchkey", "keyword", "keywords", "q", "wd", "kw", "key", "s", "searchword")
META_PREFIX = "discovery:site:"
DISABLE_AFTER = 3  # failed searches in a row that disable a site


class SiteError(ValueError):
    """A site cannot be registered or searched: the message names the site and why."""


@dataclass(frozen=True)
class SiteProfile:
    name: str
    search_path: str
    form_action: str = ""
    query_field: str = "q"
    encoding: str = "utf-8"
    book_link: str = ""
    results_marker: str = ""
    description: str = ""

    @classmethod
    def from_file(cls, path: Path) -> SiteProfile:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SiteError(f"site profile {path}: {exc}") from None
        if not isinstance(data, dict) or "name" not in data or "search_path" not in data:
            raise SiteError(f"site profile {path}: needs at least 'name' and 'search_path'")
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        if not all(isinstance(v, str) for v in known.values()):
            raise SiteError(f"site profile {path}: every field must be a string")
        profile = cls(**known)
        for pattern in (profile.form_action, profile.book_link, profile.results_marker):
            try:
                re.compile(pattern)
            except re.error as exc:
                raise SiteError(
                    f"site profile {path}: bad regular expression {pattern!r}: {exc}"
                ) from None
        return profile


def load_profiles(
    user_dir: Path | None = None, errors: list[str] | None = None
) -> dict[str, SiteProfile]:
    """The built-in profiles, then the user's (``user_dir``), by name. With ``errors``
    a malformed file costs only itself: its ``SiteError`` message is added there and
    the other profiles load; without, the first one raises."""
    out: dict[str, SiteProfile] = {}
    for folder in (BUILTIN_PROFILES, user_dir):
        if folder is None or not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.json")):
            try:
                profile = SiteProfile.from_file(path)
            except SiteError as exc:
                if errors is None:
                    raise
                errors.append(str(exc))
                continue
            out[profile.name] = profile
    return out


@dataclass
class Site:
    """A registered pirate site."""

    url: str  # its home page
    search_url: str  # with {q}
    encoding: str = "utf-8"
    profile: str = "form"  # the profile it was recognised by, "form" or "given"
    added_at: str = ""
    note: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    origin: str = ""  # where it came from: "site add", or the Legado file/URL it was imported from
    status: str = ""  # a Legado source: imported | partial (``legado.sources.judge``)
    reasons: list[str] = field(default_factory=list)

    @property
    def health(self) -> JSONObject:
        """The last search (``ok``, ``results``, ``error``, ``at``), consecutive
        ``failures`` and ``disabled`` (after ``DISABLE_AFTER`` failures in a row)."""
        value = self.meta.get("health")
        return value if isinstance(value, dict) else {}

    @property
    def disabled(self) -> bool:
        return bool(self.health.get("disabled"))

    @property
    def host(self) -> str:
        return host_of(self.url)

    @property
    def name(self) -> str:
        return f"site:{self.host}"

    def to_dict(self) -> JSONObject:
        return asdict(self)


class SiteRegistry:
    """Registered sites, kept in the store's meta table (shared by every worker)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add(self, site: Site) -> Site:
        self.store.set_meta(META_PREFIX + site.host, site.to_dict())
        return site

    def list(self) -> list[Site]:
        items = self.store.meta_items(META_PREFIX)
        out = [_site(v) for _, v in sorted(items.items())]
        return [s for s in out if s is not None]

    def get(self, host_or_url: str) -> Site | None:
        host = host_of(host_or_url) if "://" in host_or_url else host_or_url.lower()
        return _site(self.store.get_meta(META_PREFIX + host))

    def record_search(self, host: str, *, ok: bool, results: int = 0, error: str = "") -> None:
        """Note a site's search: its health (``Site.health``); ``DISABLE_AFTER`` failures
        in a row disable it, a success enables it again (a run tries a disabled site
        on one book; a site disabled by hand, ``set_enabled``, is not tried)."""
        from datetime import UTC, datetime

        site = self.get(host)
        if site is None:
            return
        before = site.health
        failures = 0 if ok else int(str(before.get("failures") or 0)) + 1
        site.meta["health"] = {
            "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "ok": ok,
            "results": results,
            "error": error[:300],
            "failures": failures,
            "disabled": failures >= DISABLE_AFTER if not ok else False,
        }
        self.add(site)

    def set_enabled(self, host: str, enabled: bool) -> Site | None:
        """Enable (failures forgotten) or disable a site by hand."""
        site = self.get(host)
        if site is None:
            return None
        health = dict(site.health)
        health.update(
            disabled=not enabled,
            by_hand=not enabled,  # a site disabled by hand is not tried again by runs
            failures=0 if enabled else health.get("failures", 0),
        )
        site.meta["health"] = health
        return self.add(site)

    def remove(self, host_or_url: str) -> bool:
        site = self.get(host_or_url)
        if site is None:
            return False
        self.store.delete_meta(META_PREFIX + site.host)
        return True


def _site(value: Any) -> Site | None:
    """A stored site (fields this version does not know are left aside)."""
    if not isinstance(value, dict):
        return None
    known = {k: value[k] for k in Site.__dataclass_fields__ if k in value}
    try:
        return Site(**known)
    except TypeError:
        return None


def _forms(html: str, base: str) -> list[tuple[str, str, dict[str, str]]]:
    """(action URL, query field, other inputs) of each form with a text input."""
    import lxml.html

    try:
        root = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return []
    out = []
    for form in root.iter("form"):
        action = urljoin(base, (form.get("action") or "").strip() or base)
        if urlsplit(action).scheme not in ("http", "https"):
            continue
        query_field = ""
        hidden: dict[str, str] = {}
        for inp in form.iter("input", "select"):
            name = (inp.get("name") or "").strip()
            kind = (inp.get("type") or "text").lower()
            if not name:
                continue
            if inp.tag == "select":
                opts = [o.get("value") or "" for o in inp.iter("option") if o.get("selected")]
                first = [o.get("value") or "" for o in inp.iter("option")]
                hidden[name] = (opts or first or [""])[0]
            elif kind in ("text", "search") and not query_field:
                query_field = name
            elif kind == "hidden":
                hidden[name] = inp.get("value") or ""
        if query_field:
            out.append((action, query_field, hidden))
    out.sort(key=lambda f: (f[1].lower() not in QUERY_FIELDS, 0))
    return out


def _codec(encoding: str) -> str:
    enc = (encoding or "utf-8").lower()
    if enc in ("gb2312", "gbk", "gb18030", "x-gbk"):
        return "gbk"
    return "big5" if enc.startswith("big5") else "utf-8"


def find_search(crawler: Crawler, home_url: str, profiles: dict[str, SiteProfile]) -> Site:
    """Find the search of the site at ``home_url`` (see the module docstring)."""
    from tracker.crawler import CrawlError

    try:
        page = crawler.crawl_page(home_url, screenshot=False)
    except CrawlError as exc:
        raise SiteError(f"{home_url}: cannot read the home page: {exc}") from None
    base = page.final_url
    encoding = _codec(page.encoding)
    for action, query_field, hidden in _forms(page.html, base):
        # The profile whose form action matches, the one naming the same query field first.
        fits = [
            (p.query_field == query_field, p)
            for p in profiles.values()
            if p.form_action and re.search(p.form_action, action)
        ]
        profile = max(fits, key=lambda f: f[0])[1] if fits else None
        params = urlencode(hidden, encoding=encoding, errors="replace")
        sep = "&" if "?" in action else "?"
        template = f"{action}{sep}{params + '&' if params else ''}{query_field}={{q}}"
        return Site(
            url=base,
            search_url=template,
            encoding=encoding,
            profile=profile.name if profile else "form",
        )
    origin = f"{urlsplit(base).scheme}://{urlsplit(base).netloc}"
    for profile in profiles.values():
        probe = urljoin(origin, profile.search_path.replace("{q}", quote("的")))
        try:
            crawler.crawl_page(probe, screenshot=False)
        except CrawlError:
            continue
        return Site(
            url=base,
            search_url=urljoin(origin, profile.search_path),
            encoding=_codec(profile.encoding),
            profile=profile.name,
        )
    raise SiteError(
        f"{home_url}: no search form on the home page and no known layout "
        f"({', '.join(profiles)}) answers; give the search URL with --search-url "
        "'http://host/path?kw={q}'"
    )


def search_url(site: Site, query: str) -> str:
    """The site's search URL for ``query``, encoded in the site's charset."""
    try:
        encoded = quote(query.encode(site.encoding))
    except (UnicodeEncodeError, LookupError):
        encoded = quote(query.encode("utf-8"))
    return site.search_url.replace("{q}", encoded)


def _plain(s: str) -> str:
    return re.sub(r"\W+", "", s).lower()


def result_links(html: str, page_url: str, title: str) -> list[str]:
    """Links of a search results page that name the book ``title`` (same host)."""
    from tracker.crawler.links import page_links

    want = _plain(title)
    host = host_of(page_url)
    out: list[str] = []
    for link in page_links(html, page_url):
        url, text = link.url, link.text
        if not want or host_of(url) != host or url in out:
            continue
        if want in _plain(text) or (len(_plain(text)) >= 2 and _plain(text) in want):
            out.append(url)
    return out


def profile_matches(profile: SiteProfile | None, html: str) -> bool:
    """Whether a results page still looks like what ``profile`` describes."""
    if profile is None or not profile.results_marker:
        return True
    return re.search(profile.results_marker, html, re.I) is not None
