"""The links of a page, and which of them stay on its site: one rule for the site
crawl (``workers.tasks.crawl``) and the book monitor (``tracker.cases.books``).

- ``page_links``: every http(s) ``<a href>`` in page order, resolved against the page's
  ``<base href>`` when it has one, without the fragment, with its anchor text.
- ``same_site``: a site as cases count it (``tracker.common.rules.site_of``: host and port
  when that is not the scheme's default). ``http`` and ``https`` of one host are one
  site (sites move between them); another port is another server, another subdomain
  another site.
- ``same_site_links``: the distinct links of a page on its own site, in page order,
  without the page itself; "distinct" is ``tracker.crawler.pagesim.canonical_url`` (one
  spelling per page: no tracking parameters, parameters sorted, no trailing slash).

lxml parses the page (already a dependency, fast, forgiving of broken HTML).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from urllib.parse import urldefrag, urljoin, urlsplit

from tracker.common.rules import site_of
from tracker.crawler.pagesim import canonical_url

_SCHEMES = ("http", "https")


@dataclass(frozen=True)
class Link:
    url: str  # absolute, without fragment
    text: str  # the anchor's text, white space folded


def same_site(url: str, other: str) -> bool:
    """Whether two URLs are on one site (``site_of``); never for a URL without one."""
    site = site_of(url)
    return bool(site) and site == site_of(other)


def page_links(html: str | bytes, base_url: str, limit: int | None = None) -> list[Link]:
    """Every http(s) link of ``html`` (see the module docstring); the first ``limit``
    of them when given (a page of 100,000 links costs a bounded walk)."""
    import lxml.html
    from lxml import etree

    if not html or (isinstance(html, str) and not html.strip()):
        return []
    try:
        root = lxml.html.fromstring(html)
    except ValueError:  # a str that declares its encoding
        try:
            root = lxml.html.fromstring(str(html).encode("utf-8"))
        except (ValueError, etree.ParserError):
            return []
    except etree.ParserError:
        return []
    base = base_url
    for element in root.iter("base"):
        href = (element.get("href") or "").strip()
        if href:
            with contextlib.suppress(ValueError):  # a malformed <base>: the page's URL
                base = urljoin(base_url, href)
            break
    out: list[Link] = []
    for anchor in root.iter("a"):
        href = (anchor.get("href") or "").strip()
        if not href:
            continue
        try:
            url = urldefrag(urljoin(base, href))[0]
            scheme = urlsplit(url).scheme.lower()
        except ValueError:
            continue
        if scheme in _SCHEMES:
            out.append(Link(url, " ".join((anchor.text_content() or "").split())))
            if limit is not None and len(out) >= limit:
                break
    return out


def same_site_links(html: str | bytes, page_url: str, limit: int | None = None) -> list[Link]:
    """The distinct links of ``html`` on the site of ``page_url``, in page order,
    without the page itself; at most ``limit`` of them (None: all)."""
    if limit is not None and limit <= 0:
        return []
    site = site_of(page_url)
    if not site:
        return []
    seen = {canonical_url(page_url)}
    out: list[Link] = []
    for link in page_links(html, page_url):
        if site_of(link.url) != site:
            continue
        key = canonical_url(link.url)
        if key in seen:
            continue
        seen.add(key)
        out.append(link)
        if limit is not None and len(out) >= limit:
            break
    return out
