"""Legado (阅读) book sources: reading the files people share, judging each source, and
making its requests.

A file holds one source (a JSON object) or many (an array), as readers publish them:
byte-order marks, ``//`` and ``/* */`` comments, trailing commas and a JavaScript
wrapper around the JSON are tolerated. Each source is judged on what discovery uses —
its search, its table of contents and its chapter text:

- ``imported``: all three can be read (parts discovery does not use, such as explore
  pages or a login, are left out and named in the reasons);
- ``partial``: one of the three needs JavaScript, a browser (``webView``) when none is
  installed, or a rule Yinji does not read (the reasons say which; discovery falls back
  to the page's links for contents and to the page extractor for chapter text);
- ``refused``: it cannot be used at all (not a novel source, no search URL, no result
  list, a malformed source).

``BookSource.request`` makes a request from a URL rule as Legado's ``AnalyzeUrl`` does:
``{{key}}`` (the search words, percent-encoded in the source's ``charset``) and
``{{page}}`` (1), an options suffix ``,{"method","body","charset","headers","webView"}``,
relative URLs joined to the source's URL, the source's ``header`` added.

``webView`` (Legado's "render this page in a browser"): with Playwright and Chromium
installed the page is fetched like every other and then rendered by headless Chromium
(``tracker.crawler.browser``: the page's own scripts run there, every request they make
through the SSRF guard), and the source is ``imported`` with the reason "webView read
through the headless browser"; without them it is ``partial`` with "needs a browser
(webView): Chromium/Playwright not installed". JavaScript in rules (``<js>``, ``@js:``)
is never run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

from tracker.common.records import JSONValue
from tracker.discovery.legado.rules import RuleError, _compile, needs_js

__all__ = [
    "BookSource",
    "HttpRequest",
    "SourceError",
    "SourceVerdict",
    "judge",
    "load_sources",
]

USED = {
    "search": ("ruleSearch", ("bookList", "name", "author", "bookUrl")),
    "book": ("ruleBookInfo", ("init", "tocUrl")),
    "contents": ("ruleToc", ("chapterList", "chapterName", "chapterUrl", "nextTocUrl")),
    "chapter": ("ruleContent", ("content", "nextContentUrl", "replaceRegex")),
}
LEFT_OUT = {
    "exploreUrl": "explore pages",
    "ruleExplore": "explore pages",
    "loginUrl": "login",
    "loginUi": "login",
    "loginCheckJs": "login",
    "coverDecodeJs": "cover decoding",
    "ruleReview": "reviews",
    "jsLib": "a JavaScript library",
}


class SourceError(ValueError):
    """A file or a source that cannot be read: the message names it and why."""


@dataclass(frozen=True)
class HttpRequest:
    """One request a source makes: URL, method, body (bytes) and headers."""

    url: str
    method: str = "GET"
    body: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()
    charset: str = ""
    webview: bool = False  # rendered by the headless browser (Legado's "webView")


@dataclass
class SourceVerdict:
    """What importing one source gave."""

    name: str
    url: str
    status: str  # imported | partial | refused
    reasons: list[str] = field(default_factory=list)


# --- tolerant JSON --------------------------------------------------------------------------------
def _strip_comments(text: str) -> str:
    out, i, n, quote_ch = [], 0, len(text), ""
    while i < n:
        c = text[i]
        if quote_ch:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == quote_ch:
                quote_ch = ""
        elif c == '"':
            quote_ch = c
            out.append(c)
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


_TRAILING_COMMA = re.compile(r",(\s*[\]}])")


def loads_tolerant(text: str) -> JSONValue:
    """JSON as people share it (see the module docstring); ``ValueError`` if not."""
    text = text.lstrip("\ufeff").strip()
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    cleaned = _TRAILING_COMMA.sub(r"\1", _strip_comments(text))
    try:
        return json.loads(cleaned)
    except (ValueError, RecursionError):
        pass
    starts = [i for i in (cleaned.find("["), cleaned.find("{")) if i >= 0]
    if starts:
        start = min(starts)
        end = max(cleaned.rfind("]"), cleaned.rfind("}"))
        if end > start:
            try:
                return json.loads(cleaned[start : end + 1])
            except (ValueError, RecursionError) as exc:
                raise ValueError(str(exc)) from None
    raise ValueError("no JSON object or array in it")


def load_sources(text: str, name: str) -> list[JSONValue]:
    """The sources in a file's ``text`` (``name`` is how errors name it): a list of
    whatever the file holds, each judged by ``judge``."""
    try:
        data = loads_tolerant(text)
    except ValueError as exc:
        raise SourceError(f"{name}: not Legado book sources (JSON): {exc}") from None
    if isinstance(data, dict):
        return [data]
    if isinstance(data, list):
        return list(data)
    raise SourceError(f"{name}: not Legado book sources: a JSON {type(data).__name__}")


# --- a source -------------------------------------------------------------------------------------
def _options(raw: str) -> tuple[str, dict[str, Any]]:
    """``url,{options}`` → (url, options)."""
    i = raw.find(",{")
    while i >= 0:
        try:
            opts = loads_tolerant(raw[i + 1 :])
        except ValueError:
            opts = None
        if isinstance(opts, dict):
            return raw[:i].strip(), opts
        i = raw.find(",{", i + 1)
    return raw.strip(), {}


def _headers(value: Any) -> dict[str, str]:
    if isinstance(value, str) and value.strip():
        if needs_js(value):
            return {}
        try:
            value = loads_tolerant(value)
        except ValueError:
            return {}
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items() if isinstance(v, str | int | float)}
    return {}


def _check_charset(charset: str) -> str:
    import codecs

    try:
        return codecs.lookup(charset).name
    except LookupError:
        raise SourceError(f"unknown charset {charset!r}") from None


@dataclass
class BookSource:
    """One source, as discovery uses it."""

    raw: dict[str, Any]
    name: str
    url: str  # the site's URL (the part of bookSourceUrl before any '#')

    @classmethod
    def from_raw(cls, raw: object) -> BookSource:
        if not isinstance(raw, dict):
            raise SourceError(f"a source must be a JSON object, not {type(raw).__name__}")
        url = str(raw.get("bookSourceUrl") or "").strip()
        name = str(raw.get("bookSourceName") or "").strip() or url
        base = url.split("#", 1)[0].strip()
        if urlsplit(base).scheme not in ("http", "https") or not urlsplit(base).hostname:
            raise SourceError(f"source {name!r}: bookSourceUrl {url!r} is not an http(s) URL")
        return cls(dict(raw), name, base)

    def rules(self, part: str) -> dict[str, str]:
        value = self.raw.get(part)
        if isinstance(value, str):  # some files keep each rule group as a JSON string
            try:
                value = loads_tolerant(value)
            except ValueError:
                value = {}
        if not isinstance(value, dict):
            return {}
        return {str(k): v for k, v in value.items() if isinstance(v, str)}

    @property
    def headers(self) -> dict[str, str]:
        return _headers(self.raw.get("header"))

    @property
    def search_template(self) -> str:
        return str(self.raw.get("searchUrl") or "").strip()

    @property
    def charset(self) -> str:
        _, opts = _options(self.search_template)
        return str(opts.get("charset") or "").strip()

    def request(self, rule_value: str, base: str = "", key: str = "", page: int = 1) -> HttpRequest:
        """The request a URL rule's value (a template) stands for (module docstring)."""
        template, opts = _options(rule_value)
        charset = str(opts.get("charset") or "").strip()
        codec = _check_charset(charset) if charset else "utf-8"
        body_raw = opts.get("body")
        if isinstance(body_raw, dict | list):
            body_raw = json.dumps(body_raw, ensure_ascii=False)
        body_text = str(body_raw) if body_raw is not None else None
        json_body = body_text is not None and body_text.lstrip()[:1] in ("{", "[")

        def fill(text: str, raw_key: bool) -> str:
            try:
                enc_key = key if raw_key else quote(key.encode(codec), safe="")
            except UnicodeEncodeError:
                raise SourceError(f"the words {key!r} cannot be written in {codec}") from None
            text = re.sub(r"\{\{\s*key\s*\}\}", lambda _: enc_key, text)
            text = re.sub(r"\{\{\s*page\s*\}\}", str(page), text)
            text = text.replace("searchKey", enc_key).replace("searchPage", str(page))
            text = re.sub(r"<([^<>,]*),[^<>]*>", r"\1", text)  # <first,more pages>: page 1
            return text

        url = fill(template, False)
        url = urljoin(base or self.url + "/", url)
        headers = {**self.headers, **_headers(opts.get("headers"))}
        body: bytes | None = None
        if body_text is not None:
            text = fill(body_text, json_body)
            body = text.encode(codec, errors="replace")
            lower = {k.lower() for k in headers}
            if "content-type" not in lower:
                headers["Content-Type"] = (
                    "application/json" if json_body else "application/x-www-form-urlencoded"
                )
        method = str(opts.get("method") or ("POST" if body is not None else "GET")).upper()
        if method not in ("GET", "POST"):
            raise SourceError(f"method {method!r} is not GET or POST")
        return HttpRequest(
            url, method, body, tuple(headers.items()), charset, _is_true(opts.get("webView"))
        )


def _is_true(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


_WEBVIEW = re.compile(r"""["']?webView["']?\s*:\s*["']?true""", re.IGNORECASE)
WEBVIEW_OK = "webView read through the headless browser"
NO_BROWSER = "Chromium/Playwright not installed"


def wants_webview(text: str) -> bool:
    """Whether a URL or URL rule asks for a browser (``"webView": true``)."""
    return bool(_WEBVIEW.search(text))


# --- judging --------------------------------------------------------------------------------------
def _rule_problems(source: BookSource, part: str) -> list[tuple[str, str]]:
    """(field, why) of the rules of ``part`` discovery cannot read."""
    group, names = USED[part]
    out = []
    rules = source.rules(group)
    for name in names:
        rule = rules.get(name, "")
        if not rule.strip():
            continue
        where = f"{group}.{name}"
        if needs_js(rule):
            out.append((where, "JavaScript"))
            continue
        if rule.strip().startswith(":"):
            out.append((where, "a regex all-in-one rule Yinji does not read"))
            continue
        for piece in rule.split("##")[1:2]:
            try:
                _compile(piece)
            except RuleError as exc:
                out.append((where, str(exc)))
    return out


def judge(raw: object, no_browser: str | None = NO_BROWSER) -> SourceVerdict:
    """The verdict on one source (see the module docstring); never raises.
    ``no_browser``: why no headless browser can render ``webView`` pages here
    (``tracker.crawler.browser.unavailable``), None when one can."""
    try:
        source = BookSource.from_raw(raw)
    except SourceError as exc:
        name = str(raw.get("bookSourceName") or "?") if isinstance(raw, dict) else "?"
        url = str(raw.get("bookSourceUrl") or "") if isinstance(raw, dict) else ""
        return SourceVerdict(name, url, "refused", [str(exc)])
    raw = source.raw
    name, url = source.name, str(raw.get("bookSourceUrl"))
    kind = raw.get("bookSourceType", 0)
    if kind not in (0, "0", None, ""):
        return SourceVerdict(name, url, "refused", [f"not a novel source (bookSourceType {kind})"])
    template = source.search_template
    if not template:
        return SourceVerdict(name, url, "refused", ["no searchUrl: the site cannot be searched"])
    search = source.rules("ruleSearch")
    if not search.get("bookList", "").strip() or not search.get("name", "").strip():
        return SourceVerdict(
            name, url, "refused", ["ruleSearch has no bookList or name: results cannot be read"]
        )
    reasons: list[str] = []
    partial = False
    _, opts = _options(template)
    if needs_js(template) or "js" in opts:
        partial = True
        reasons.append("search needs JavaScript (searchUrl)")
    elif _is_true(opts.get("webView")) and no_browser is not None:
        partial = True
        reasons.append(f"search needs a browser (webView): {no_browser}")
    else:
        try:
            source.request(template, key="书")
        except SourceError as exc:
            return SourceVerdict(name, url, "refused", [f"searchUrl: {exc}"])
    labels = {
        "search": "search",
        "book": "contents",
        "contents": "contents",
        "chapter": "chapter text",
    }
    for part in USED:
        for where, why in _rule_problems(source, part):
            partial = True
            what = labels[part]
            verb = "needs" if what != "contents" else "need"
            if why == "JavaScript":
                reasons.append(f"{what} {verb} JavaScript ({where})")
            else:
                reasons.append(f"{what}: {where}: {why}")
    webview = _is_true(opts.get("webView"))
    for part in ("search", "book", "contents", "chapter"):
        group, names = USED[part]
        rules = source.rules(group)
        for field_name in names:
            rule = rules.get(field_name, "")
            if not wants_webview(rule) or needs_js(rule):
                continue
            webview = True
            if no_browser is not None:
                partial = True
                what = labels[part]
                verb = "needs" if what != "contents" else "need"
                where = f"{group}.{field_name}"
                reasons.append(f"{what} {verb} a browser (webView) ({where}): {no_browser}")
    if webview and no_browser is None:
        reasons.append(WEBVIEW_OK)
    if not source.rules("ruleToc").get("chapterList", "").strip():
        partial = True
        reasons.append("contents: no ruleToc.chapterList (the page's chapter links are used)")
    if not source.rules("ruleContent").get("content", "").strip():
        partial = True
        reasons.append("chapter text: no ruleContent.content (the page extractor is used)")
    left = sorted({label for key, label in LEFT_OUT.items() if raw.get(key)})
    if raw.get("header") and needs_js(str(raw.get("header"))):
        left.append("headers made by JavaScript")
    if left:
        reasons.append("left out (not used by discovery): " + ", ".join(left))
    return SourceVerdict(name, url, "partial" if partial else "imported", reasons)
