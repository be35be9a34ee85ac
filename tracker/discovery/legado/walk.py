"""The Legado stage of a discovery run: each imported site searched for each book, its
contents followed (over several pages), its chapters read with the source's content
rule (over several pages; the page extractor when the rule gives nothing) and checked
like every page (``Library.check_crawled``: a capture per page, one check of the
chapter's text).

Every request goes through the crawler (SSRF guard on every URL and redirect,
robots.txt, the per-host interval, size limits) and takes one page of the run's budget;
a URL the guard refuses or that does not resolve gives its page back. A request whose
options say ``"webView": true`` is fetched the same way and then rendered by headless
Chromium (``tracker.crawler.browser.render``: the page's own scripts run, every request
they make through the SSRF guard, within a time limit); the rendered HTML goes to the
source's rules, the bytes the server sent stay the evidence. Without a browser such a
request is one line saying what to install, and spends no page. Each site is
walked by one thread, the sites side by side; checks run one at a time. A search's
outcome is the site's health (``SiteRegistry.record_search``); a disabled site is not
searched. Every failure is one line naming the site and the URL.
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from tracker.discovery.legado.rules import (
    Content,
    RuleContext,
    RuleError,
    get_elements,
    get_string,
    get_strings,
    html_to_text,
    needs_js,
    parse_content,
    replace_regex,
)
from tracker.discovery.legado.sources import BookSource, HttpRequest, SourceError

if TYPE_CHECKING:
    from tracker.crawler import Crawler, Page
    from tracker.crawler.crawler import ReadPage
    from tracker.discovery.books import BookTarget
    from tracker.discovery.sites import Site
    from tracker.library import Library

__all__ = ["ChapterRead", "LegadoWalker", "WalkLimits"]

MIN_TEXT_CHARS = 50


class _Spent(Exception):
    """The run's page budget is spent."""


class _Refused(Exception):
    """A URL the SSRF guard or robots.txt refused, or that does not resolve."""


@dataclass(frozen=True)
class WalkLimits:
    books_per_site: int = 3  # search results that name the book, followed
    toc_pages: int = 20
    chapters: int = 200  # per book per site
    chapter_pages: int = 10
    concurrency: int = 4  # sites walked side by side


@dataclass
class ChapterRead:
    """One chapter read from a site: its pages (each its own URL) and its text."""

    site: str
    title: str
    url: str
    pages: list[Page] = field(default_factory=list)
    text: str = ""
    extractor: str = "rule"  # rule | page extractor


@dataclass
class WalkEvents:
    """What the walk tells the run (all called under the walker's lock)."""

    take: Callable[[], bool]  # one page of the budget; False when spent
    give_back: Callable[[], None]
    fetched: Callable[[str, str], None]  # (source, url)
    error: Callable[[str, str], None]  # (source, message)
    not_found: Callable[[str], None]
    check: Callable[[ChapterRead], None]
    fresh: Callable[[str, str], bool]  # (host, book key): not yet searched today
    refused: Callable[[str, str], None]  # (source, message): a URL the guard refused


def _decode_only(body: bytes, content_type: str | None, mime: str, url: str) -> ReadPage:
    from tracker.crawler.crawler import ReadPage
    from tracker.crawler.decoding import decode_html

    html, encoding = decode_html(body, content_type)
    return ReadPage(html, encoding, "", "", None)


def _plain(s: str) -> str:
    return re.sub(r"\W+", "", s).lower()


class LegadoWalker:
    """Walks imported sites for books (see the module docstring)."""

    def __init__(
        self,
        library: Library,
        crawler: Crawler,
        events: WalkEvents,
        limits: WalkLimits | None = None,
    ) -> None:
        self.lib = library
        self.crawler = crawler
        self.events = events
        self.limits = limits or WalkLimits()
        self._lock = threading.Lock()  # the run's counters and budget
        self._check_lock = threading.Lock()  # checks run one at a time
        self._seen: set[str] = set()

    def run(self, sites: list[Site], books: list[BookTarget]) -> None:
        from tracker.crawler.browser import unavailable
        from tracker.discovery.sites import SiteRegistry

        no_browser = unavailable(self.crawler.config)
        usable = []
        for site in sites:
            if site.disabled and site.health.get("by_hand"):
                continue  # disabled by a person: not searched until enabled
            if site.status == "partial" and any(
                "search needs JavaScript" in r
                or ("search needs a browser" in r and no_browser is not None)
                for r in site.reasons
            ):
                continue  # its search needs JavaScript or a browser: said at import
            usable.append(site)
        if not usable or not books:
            return
        registry = SiteRegistry(self.lib.store)
        # A new order each run: with more sites than a day's budget reaches, every site
        # gets its turn over the days (each site and book is searched once a day).
        random.shuffle(usable)
        width = max(1, min(self.limits.concurrency, len(usable)))
        with ThreadPoolExecutor(max_workers=width) as pool:
            list(pool.map(lambda s: self._site(s, books, registry), usable))

    # -- one site --
    def _site(self, site: Site, books: list[BookTarget], registry: object) -> None:
        try:
            source = BookSource.from_raw(site.meta.get("legado"))
        except SourceError as exc:
            self._error(site.name, str(exc))
            return
        # A site disabled after failed searches is tried once a run, on one book: a
        # success enables it again (``SiteRegistry.record_search``).
        probing = site.disabled
        for book in books:
            with self._lock:
                if not self.events.fresh(site.host, book.key):
                    continue
            try:
                ok = self._book(site, source, book, registry)
                if probing and not ok:
                    self._error(
                        site.name,
                        "still failing: stays disabled (tried once a run; `yinji discover "
                        f"site enable {site.host}` to search it in full)",
                    )
                    return
                probing = False
            except _Spent:
                return
            except Exception as exc:  # one book's failure is its own line
                self._error(site.name, f"《{book.title}》: {type(exc).__name__}: {exc}")
                continue
            now = registry.get(site.host) if not ok else None  # type: ignore[attr-defined]
            if now is not None and now.disabled:
                self._error(
                    site.name,
                    f"disabled after {now.health.get('failures', 0)} failed searches in a row; "
                    f"its other books are not searched (`yinji discover site enable {site.host}`)",
                )
                return

    def _fetch(self, site: Site, req: HttpRequest) -> Page:
        from tracker.crawler import Blocked, CrawlError, InvalidURL, RobotsDisallowed, Unreachable
        from tracker.crawler.browser import BrowserMissing, render, unavailable
        from tracker.crawler.fetch import Request

        if req.webview:
            why = unavailable(self.crawler.config)
            if why is not None:  # said before a page is spent
                raise BrowserMissing(req.url, f"needs a browser (webView): {why}")
        with self._lock:
            if not self.events.take():
                raise _Spent
        extra = Request(req.method, req.body, req.headers, json_ok=True)
        try:
            page = self.crawler.crawl_page(
                req.url, screenshot=False, reader=_decode_only, request=extra
            )
        except (Blocked, InvalidURL, RobotsDisallowed, Unreachable) as exc:
            if isinstance(exc, Unreachable) and "resolve" not in str(exc).lower():
                with self._lock:
                    self.events.fetched(site.name, req.url)
                raise
            with self._lock:
                self.events.give_back()  # refused or unresolvable: no page spent
                self.events.refused(site.name, str(exc))
            raise _Refused(str(exc)) from None
        except CrawlError:
            with self._lock:
                self.events.fetched(site.name, req.url)
            raise
        with self._lock:
            self.events.fetched(site.name, req.url)
        if req.webview:  # a CrawlError naming the page when the browser fails
            page = replace(page, html=render(page, self.crawler.config).html)
        return page

    def _book(self, site: Site, source: BookSource, book: BookTarget, registry: object) -> bool:
        from tracker.crawler import CrawlError
        from tracker.discovery.sites import SiteRegistry

        assert isinstance(registry, SiteRegistry)
        try:
            req = source.request(source.search_template, key=book.title)
            page = self._fetch(site, req)
            content = parse_content(page.html)
            ctx = RuleContext(page.final_url)
            rules = source.rules("ruleSearch")
            items = get_elements(content.root, rules["bookList"], ctx)
        except _Spent:
            raise
        except _Refused as exc:
            registry.record_search(site.host, ok=False, error=str(exc))
            return False
        except (CrawlError, SourceError, RuleError) as exc:
            registry.record_search(site.host, ok=False, error=str(exc))
            self._error(site.name, f"search for 《{book.title}》: {exc}")
            return False
        registry.record_search(site.host, ok=True, results=len(items))
        found: list[str] = []
        want = _plain(book.title)
        for item in items:
            try:
                name = get_string(item, rules["name"], ctx)
                if not want or (_plain(name) != want and want not in _plain(name)):
                    continue
                raw_url = (
                    get_string(item, rules.get("bookUrl", ""), ctx)
                    if rules.get("bookUrl")
                    else page.final_url
                )
            except RuleError as exc:
                self._error(site.name, f"search result of 《{book.title}》: {exc}")
                continue
            if raw_url and raw_url not in found:
                found.append(raw_url)
        if not found:
            with self._lock:
                self.events.not_found(
                    f"{site.name}: no book 《{book.title}》 in its search results ({req.url})"
                )
            return True
        for raw_url in found[: self.limits.books_per_site]:
            self._read_book(site, source, book, raw_url, page.final_url)
        return True

    def _request(self, source: BookSource, raw: str, base: str) -> HttpRequest:
        return source.request(raw.strip(), base=base)

    def _read_book(
        self, site: Site, source: BookSource, book: BookTarget, raw_url: str, base: str
    ) -> None:
        from tracker.crawler import CrawlError

        try:
            req = self._request(source, raw_url, base)
            page = self._fetch(site, req)
            info = source.rules("ruleBookInfo")
            content = parse_content(page.html)
            ctx = RuleContext(page.final_url)
            toc_page, toc_content = page, content
            init, toc_rule = info.get("init", ""), info.get("tocUrl", "")
            if init.strip() and not needs_js(init):
                picked = get_elements(content.root, init, ctx)
                if picked and not init.strip().startswith("@put:"):
                    content = Content(picked[0], content.is_json)
            if toc_rule.strip() and not needs_js(toc_rule):
                toc_raw = get_string(content.root, toc_rule, ctx)
                if toc_raw and toc_raw.split(",{")[0] != page.final_url:
                    toc_page = self._fetch(site, self._request(source, toc_raw, page.final_url))
                    toc_content = parse_content(toc_page.html)
            chapters = self._toc(site, source, toc_page, toc_content)
        except _Spent:
            raise
        except _Refused:
            return
        except (CrawlError, SourceError, RuleError) as exc:
            self._error(site.name, f"《{book.title}》 {raw_url}: {exc}")
            return
        urls = [r.url for _, r in chapters]
        for i, (title, chapter) in enumerate(chapters[: self.limits.chapters]):
            nxt = urls[i + 1] if i + 1 < len(urls) else ""
            with self._lock:
                if chapter.url in self._seen:
                    continue
                self._seen.add(chapter.url)
            self._chapter(site, source, title, chapter, nxt, toc_page.final_url)

    def _toc(
        self, site: Site, source: BookSource, page: Page, content: Content
    ) -> list[tuple[str, HttpRequest]]:
        """(name, request) of every chapter of the contents, over its pages."""
        from tracker.cases.books import chapter_links
        from tracker.crawler import CrawlError

        rules = source.rules("ruleToc")
        out: list[tuple[str, HttpRequest]] = []
        seen_pages = {page.final_url}
        list_rule = rules.get("chapterList", "")
        usable = bool(list_rule.strip()) and not needs_js(list_rule)
        usable = usable and not needs_js(rules.get("chapterUrl", ""))
        for _ in range(self.limits.toc_pages):
            ctx = RuleContext(page.final_url)
            if usable:
                for item in get_elements(content.root, list_rule, ctx):
                    name = get_string(item, rules.get("chapterName", "text") or "text", ctx)
                    raw = get_string(item, rules.get("chapterUrl", "href") or "href", ctx)
                    if raw:
                        req = self._request(source, raw, page.final_url)
                        if all(req.url != r.url for _, r in out):
                            out.append((name, req))
            else:
                out += [("", HttpRequest(u)) for u in chapter_links(page.html, page.final_url)]
            next_rule = rules.get("nextTocUrl", "")
            if not next_rule.strip() or needs_js(next_rule):
                break
            nexts = [
                self._request(source, u, page.final_url)
                for u in get_strings(content.root, next_rule, ctx)
                if u.strip()
            ]
            nexts = [r for r in nexts if r.url not in seen_pages]
            if not nexts:
                break
            seen_pages.add(nexts[0].url)
            try:
                page = self._fetch(site, nexts[0])
            except _Refused:
                break
            except CrawlError as exc:
                self._error(site.name, f"contents page {nexts[0].url}: {exc}")
                break
            content = parse_content(page.html)
        return out

    def _chapter(
        self,
        site: Site,
        source: BookSource,
        title: str,
        first: HttpRequest,
        next_chapter: str,
        base: str,
    ) -> None:
        from tracker.crawler import CrawlError
        from tracker.crawler.extraction import extract

        rules = source.rules("ruleContent")
        content_rule = rules.get("content", "")
        next_rule = rules.get("nextContentUrl", "")
        use_rule = bool(content_rule.strip()) and not needs_js(content_rule)
        url = first.url
        read = ChapterRead(site.name, title, url)
        texts: list[str] = []
        req: HttpRequest | None = first
        visited: set[str] = set()
        try:
            for _ in range(self.limits.chapter_pages):
                assert req is not None
                visited.add(req.url)
                page = self._fetch(site, req)
                text = ""
                content = parse_content(page.html)
                ctx = RuleContext(page.final_url)
                if use_rule:
                    try:
                        text = html_to_text(get_string(content.root, content_rule, ctx))
                        text = self._replace(source, text)
                    except RuleError as exc:
                        self._error(site.name, f"{page.final_url}: {exc}")
                        text = ""
                if len(text) < MIN_TEXT_CHARS and not content.is_json:
                    text = extract(page.html, page.final_url)[1]
                    read.extractor = "page extractor"
                read.pages.append(replace(page, text=text, title=title or page.title))
                texts.append(text)
                req = None
                if next_rule.strip() and not needs_js(next_rule):
                    for raw in get_strings(content.root, next_rule, ctx):
                        cand = self._request(source, raw, page.final_url)
                        if cand.url not in visited and cand.url not in (next_chapter, base):
                            req = cand
                            break
                if req is None:
                    break
        except _Spent:
            if not read.pages:
                raise
        except _Refused:
            if not read.pages:
                return
        except (CrawlError, SourceError, RuleError) as exc:
            self._error(site.name, f"chapter {url}: {exc}")
            if not read.pages:
                return
        read.text = "\n".join(t for t in texts if t)
        with self._check_lock:
            self.events.check(read)

    def _replace(self, source: BookSource, text: str) -> str:
        """The source's ``replaceRegex`` (``##regex##replacement``, one or several)."""
        rule = source.rules("ruleContent").get("replaceRegex", "")
        if not rule.strip() or needs_js(rule):
            return text
        parts = rule.split("##")
        # "##a##b##c##d": pairs after the leading empty part; a lone regex removes.
        pieces = parts[1:] if parts and parts[0] == "" else parts
        for i in range(0, len(pieces), 2):
            pattern = pieces[i]
            if pattern:
                replacement = pieces[i + 1] if i + 1 < len(pieces) else ""
                text = replace_regex(text, pattern, replacement)
        return text

    def _error(self, source: str, message: str) -> None:
        with self._lock:
            self.events.error(source, message)
