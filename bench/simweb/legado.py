"""A simulated web of pirate sites built to the rule shapes of real Legado sources.

For each chosen source of ``../shared/data/legado/sources.dev.json`` (imported by
Yinji, its search / contents / chapter rules in a shape this builder can write pages
for), a site is made whose pages answer *that source's rules*: its search at the
source's own path, method (GET or POST), parameters and charset (GBK or UTF-8); result
lists, book pages, contents (over two pages when the source has ``nextTocUrl``) and
chapters (the second over two pages when it has ``nextContentUrl``) with the elements,
classes, ids, indexes and getters its rules select, or the JSON its JSONPath rules read.
Each site serves one book of the library (three chapters planted) among filler books.

The builder writes the page from the rule (``.bookbox`` → ``<div class="bookbox">``,
``tag.a.1`` → a decoy ``<a>`` and the one meant, ``$.data.list[*]`` → that JSON), then
reads it back with Yinji's own rule reader: a source whose page does not read back as
meant is left out (``Site.skip``), so every site in the web is one Yinji's reader
agrees with, built to a real source's shape. Sources are picked so that no two sites
share a shape (the kinds of their rules, method, charset, paging).
"""

from __future__ import annotations

import html as htmlmod
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote_to_bytes, urlsplit

CHAPTERS = 3


class Unsupported(Exception):
    """A rule shape this builder does not write pages for."""


# --- elements -------------------------------------------------------------------------------
@dataclass
class El:
    tag: str = "div"
    id: str = ""
    classes: tuple[str, ...] = ()
    own_text: str = ""  # text.X: an element whose own text holds X
    attrs: dict[str, str] = field(default_factory=dict)
    text: str = ""
    inner: str = ""  # raw HTML inside (a chapter's paragraphs)
    children: list[tuple[tuple[str, int], El]] = field(default_factory=list)

    def key(self) -> str:
        return f"{self.tag}#{self.id}.{'.'.join(self.classes)}~{self.own_text}"

    def child(self, spec: El, index: int) -> El:
        for (k, i), node in self.children:
            if k == spec.key() and i == index:
                return node
        node = El(spec.tag, spec.id, spec.classes, spec.own_text)
        self.children.append(((spec.key(), index), node))
        return node

    def render(self) -> str:
        attrs = dict(self.attrs)
        if self.id:
            attrs["id"] = self.id
        if self.classes:
            attrs["class"] = " ".join(self.classes)
        head = "".join(f' {k}="{htmlmod.escape(v)}"' for k, v in attrs.items())
        body = htmlmod.escape(self.own_text or self.text) + self.inner
        groups: dict[str, list[tuple[int, El]]] = {}
        order: list[str] = []
        for (k, i), node in self.children:
            if k not in groups:
                order.append(k)
            groups.setdefault(k, []).append((i, node))
        for k in order:
            items = groups[k]
            pos = [i for i, _ in items if i >= 0]
            neg = [i for i, _ in items if i < 0]
            size = max([p + 1 for p in pos] + [0]) + max([-n for n in neg] + [0])
            size = max(size, 1)
            slots: list[El | None] = [None] * size
            for i, node in items:
                slots[i if i >= 0 else size + i] = node
            sample = items[0][1]
            for node in slots:
                if node is None:  # a decoy: what an index must skip
                    decoy = El(sample.tag, sample.id and "", sample.classes, sample.own_text)
                    decoy.text = "" if sample.own_text else "无关"
                    if sample.tag == "a":
                        decoy.attrs["href"] = "/nothing.html"
                    body += decoy.render()
                else:
                    body += node.render()
        return f"<{self.tag}{head}>{body}</{self.tag}>"


_COMPOUND = re.compile(r"^([a-zA-Z][a-zA-Z0-9]*)?((?:[.#][\w-]+)*)$")
_INDEX = re.compile(r"^(.*?)([.!])(-?\d+)$")


def _css_steps(css: str) -> list[El]:
    steps = []
    for part in css.replace(">", " ").split():
        m = _COMPOUND.match(part)
        if not m or not part:
            raise Unsupported(f"css {css!r}")
        tag = m.group(1) or "div"
        ids = re.findall(r"#([\w-]+)", m.group(2) or "")
        classes = tuple(re.findall(r"\.([\w-]+)", m.group(2) or ""))
        steps.append(El(tag, ids[0] if ids else "", classes))
    return steps


def _segment(seg: str) -> list[tuple[El, int]]:
    """One segment of a default rule: its element steps, the last with its index."""
    seg = seg.strip()
    index = 0
    if seg.endswith("]"):
        head, _, inside = seg[:-1].rpartition("[")
        if not re.fullmatch(r"-?\d+", inside.strip()):
            raise Unsupported(f"index {seg!r}")
        seg, index = head, int(inside)
    else:
        m = _INDEX.match(seg)
        if m and m.group(1):
            if m.group(2) == "!" and m.group(3) != "0":
                raise Unsupported(f"exclusion {seg!r}")
            seg, index = m.group(1), (EXCLUDE_FIRST if m.group(2) == "!" else int(m.group(3)))
    kind, _, name = seg.partition(".")
    if kind == "class" and name:
        steps = [El("div", "", tuple(name.split()))]
    elif kind == "id" and name:
        steps = [El("div", name)]
    elif kind == "tag" and name:
        steps = [El(name)]
    elif kind == "text" and name:
        steps = [El("a", own_text=name)]
    elif kind == "children":
        raise Unsupported("children")
    else:
        steps = _css_steps(seg)
    out = [(s, 0) for s in steps[:-1]]
    out.append((steps[-1], index))
    return out


GETTERS = {"text", "textnodes", "owntext", "html", "all"}
ATTRS = {"href", "src", "value", "content", "title", "alt", "data-url", "abs:href"}
EXCLUDE_FIRST = -1000  # "!0": the list's first element is a header, not an item


def _split_rule(rule: str) -> tuple[list[tuple[El, int]], str]:
    """(element steps, getter) of a string rule (``##`` parts dropped)."""
    rule = rule.split("##", 1)[0].strip()
    if not rule or any(x in rule for x in ("&&", "||", "%%", "{{", "@put", "@get")):
        raise Unsupported(f"rule {rule!r}")
    if rule.lower().startswith("@css:"):
        body = rule[5:]
        css, _, get = body.rpartition("@") if "@" in body else (body, "", "text")
        return [(s, 0) for s in _css_steps(css)], get or "text"
    if rule.startswith(("/", "$", "@")):
        raise Unsupported(f"rule {rule!r}")
    parts = rule.split("@")
    alone = parts[-1].strip().lower() in GETTERS | ATTRS
    get = parts[-1].strip() if len(parts) > 1 or alone else "text"
    segs = parts[:-1] if len(parts) > 1 or alone else parts
    steps: list[tuple[El, int]] = []
    for seg in segs:
        if seg.strip():
            steps += _segment(seg)
    return steps, get


def _list_steps(rule: str) -> list[tuple[El, int]]:
    rule = rule.strip().lstrip("-+")
    if rule.lower().startswith("@css:"):
        return [(s, 0) for s in _css_steps(rule[5:])]
    if rule.startswith(("/", "$", "@")) or any(x in rule for x in ("&&", "||", "%%", "##")):
        raise Unsupported(f"list rule {rule!r}")
    steps: list[tuple[El, int]] = []
    for seg in rule.split("@"):
        steps += _segment(seg)
    return steps


def _put(root: El, steps: list[tuple[El, int]], get: str, value: str) -> None:
    node = root
    for spec, index in steps:
        node = node.child(spec, index)
    g = get.lower()
    if g in ("text", "owntext", "textnodes"):
        if node.text and node.text != value:
            raise Unsupported("two values on one element")
        node.text = value
    elif g in ("html", "all"):
        node.inner = value
    else:
        node.attrs[get.removeprefix("abs:")] = value


def html_list(
    list_rule: str,
    items: list[dict[str, tuple[str, str]]],
    extra: list[tuple[str, str]] | None = None,
) -> str:
    """A page whose ``list_rule`` elements hold ``items`` (each: rule -> value, set
    inside the item) and whose ``extra`` (rule, value) pairs are set from the top."""
    root = El("body")
    steps = _list_steps(list_rule)
    parent = root
    for spec, index in steps[:-1]:
        parent = parent.child(spec, index)
    last, last_index = steps[-1]
    shift = 0
    if last_index == EXCLUDE_FIRST:  # a header row first, which the rule skips
        header = El(last.tag, last.id, last.classes, last.own_text)
        header.text = "书名"
        parent.children.append(((last.key(), 0), header))
        shift = 1
    for idx, item in enumerate(items):
        node = El(last.tag, last.id, last.classes, last.own_text)
        for rule, value in item.values():
            sub, get = _split_rule(rule)
            _put(node, sub, get, value)
        parent.children.append(((last.key(), idx + shift), node))
    for rule, value in extra or []:
        sub, get = _split_rule(rule)
        _put(root, sub, get, value)
    return root.render()


# --- JSON -----------------------------------------------------------------------------------------
def _json_path(rule: str) -> list[str]:
    rule = rule.split("##", 1)[0].strip()
    if rule.lower().startswith("@json:"):
        rule = rule[6:]
    if rule.startswith("$.."):  # recursive descent: found at the top as well
        rule = rule[3:]
    elif rule.startswith("$."):
        rule = rule[2:]
    elif rule.startswith("$"):
        raise Unsupported(f"json {rule!r}")
    rule = rule.removesuffix("[*]")
    if not re.fullmatch(r"[\w]+(\.[\w]+)*", rule):
        raise Unsupported(f"json {rule!r}")
    return rule.split(".")


def _json_set(obj: dict[str, Any], path: list[str], value: Any) -> None:
    for key in path[:-1]:
        obj = obj.setdefault(key, {})
    obj[path[-1]] = value


def _json_url_rule(rule: str) -> tuple[str, list[str]] | None:
    """A URL rule of a JSON source: a template around one ``{{$.x}}``, or a path."""
    m = re.fullmatch(r"(.*)\{\{\s*\$\.([\w]+)\s*\}\}(.*)", rule.strip(), re.S)
    if m:
        if "{{" in m.group(1) + m.group(3) or "," in m.group(3):
            raise Unsupported(f"json url {rule!r}")
        return m.group(1) + "\x00" + m.group(3), [m.group(2)]
    return None


# --- one site ---------------------------------------------------------------------------------
@dataclass
class Site:
    host: str  # e.g. s03.legado.sim
    port: int
    source: dict[str, Any]  # the real source, rebased to this host
    original: str  # its real bookSourceUrl
    book: str  # the library book it serves
    chapters: list[str]  # its planted chapters' texts
    charset: str = "utf-8"
    json: bool = False
    search_path: str = ""
    method: str = "GET"
    key_param: str = ""
    fillers: list[str] = field(default_factory=list)
    skip: str = ""
    shape: str = ""

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    def rules(self, group: str) -> dict[str, str]:
        v = self.source.get(group)
        return {k: x for k, x in v.items() if isinstance(x, str)} if isinstance(v, dict) else {}

    # the pages ---------------------------------------------------------------------------
    def _books(self) -> list[str]:
        return [self.book, *self.fillers]

    def search(self, key: str) -> tuple[str, bytes]:
        found = [(i, t) for i, t in enumerate(self._books()) if key and key in t]
        rs = self.rules("ruleSearch")
        if self.json:
            items = []
            for i, title in found:
                item: dict[str, Any] = {}
                _json_set(item, _json_path(rs["name"]), title)
                url_rule = _json_url_rule(rs["bookUrl"])
                if url_rule:
                    _json_set(item, url_rule[1], f"b{i}")
                else:
                    _json_set(item, _json_path(rs["bookUrl"]), f"/b/{i}/")
                if rs.get("author"):
                    with _ignore():
                        _json_set(item, _json_path(rs["author"]), "佚名")
                items.append(item)
            data: dict[str, Any] = {}
            _json_set(data, _json_path(rs["bookList"]) or ["list"], items)
            return "application/json", json.dumps(data, ensure_ascii=False).encode()
        items = [
            {"name": (rs["name"], title), "url": (rs["bookUrl"], f"/b/{i}/")} for i, title in found
        ]
        page = html_list(rs["bookList"], items)
        return self._html(page)

    def _html(self, body: str) -> tuple[str, bytes]:
        page = f"<html><head><meta charset='{self.charset}'><title>搜索</title></head>{body}</html>"
        return f"text/html; charset={self.charset}", page.encode(self.charset, "replace")

    def book_page(self, i: int) -> tuple[str, bytes]:
        toc_rule = self.rules("ruleBookInfo").get("tocUrl", "")
        if self.json:
            return self.toc(i, 1)
        if toc_rule.strip():
            page = html_list("tag.body", [], [(toc_rule, f"/b/{i}/toc/")])
            return self._html(page)
        return self.toc(i, 1)

    def toc(self, i: int, page: int) -> tuple[str, bytes]:
        rt = self.rules("ruleToc")
        numbers = list(range(1, CHAPTERS + 1))
        paged = bool(rt.get("nextTocUrl", "").strip()) and not self.json
        if paged:
            numbers = numbers[:2] if page == 1 else numbers[2:]
        if self.json:
            items = []
            for n in numbers:
                item: dict[str, Any] = {}
                _json_set(item, _json_path(rt.get("chapterName") or "title"), f"第{n}章")
                url_rule = _json_url_rule(rt["chapterUrl"])
                if url_rule:
                    _json_set(item, url_rule[1], f"{i}-{n}")
                else:
                    _json_set(item, _json_path(rt["chapterUrl"]), f"/b/{i}/{n}.html")
                items.append(item)
            data: dict[str, Any] = {}
            _json_set(data, _json_path(rt["chapterList"]), items)
            return "application/json", json.dumps(data, ensure_ascii=False).encode()
        items = [
            {
                "name": (rt.get("chapterName") or "text", f"第{n}章"),
                "url": (rt.get("chapterUrl") or "href", f"/b/{i}/{n}.html"),
            }
            for n in numbers
        ]
        extra = [(rt["nextTocUrl"], f"/b/{i}/toc_2/")] if paged and page == 1 else []
        return self._html(html_list(rt["chapterList"], items, extra))

    def chapter(self, i: int, n: int, part: int) -> tuple[str, bytes]:
        rc = self.rules("ruleContent")
        text = self.chapters[n - 1] if i == 0 else "无关的内容。" * 80
        paged = n == 2 and bool(rc.get("nextContentUrl", "").strip()) and not self.json
        if paged:
            cut = len(text) // 2
            text = text[:cut] if part == 1 else text[cut:]
        if self.json:
            data: dict[str, Any] = {}
            _json_set(data, _json_path(rc["content"]), text.replace("。", "。\n"))
            return "application/json", json.dumps(data, ensure_ascii=False).encode()
        _, get = _split_rule(rc["content"])
        if get.lower() in ("html", "all"):
            value = "".join(f"<p>{s}。</p>" for s in text.split("。") if s)
        elif get.lower() == "textnodes":
            value = text
        else:
            value = text
        extra = [(rc["content"], value)]
        if paged and part == 1:
            extra.append((rc["nextContentUrl"], f"/b/{i}/{n}_2.html"))
        return self._html(html_list("tag.body", [], extra))

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
        parts = urlsplit(path)
        if parts.path == "/robots.txt":
            return 404, "text/plain", b""
        if parts.path == self.search_path:
            key = self._key(parts.query, body)
            ctype, out = self.search(key)
            return 200, ctype, out
        m = re.fullmatch(r"/b/(\d+)/(?:(toc|toc_2)/|(\d+)(_2)?\.html)?", parts.path)
        q = parse_qs(parts.query)
        if self.json and parts.path.startswith("/api/"):
            ident = (q.get("id") or [""])[0]
            if parts.path == "/api/book":
                return (200, *self.toc(int(ident.removeprefix("b")), 1))
            if parts.path == "/api/chapter":
                b, _, n = ident.partition("-")
                return (200, *self.chapter(int(b), int(n), 1))
        if not m:
            return 404, "text/plain", b"not found"
        i = int(m.group(1))
        if m.group(2) == "toc":
            return (200, *self.toc(i, 1))
        if m.group(2) == "toc_2":
            return (200, *self.toc(i, 2))
        if m.group(3):
            return (200, *self.chapter(i, int(m.group(3)), 2 if m.group(4) else 1))
        return (200, *self.book_page(i))

    def _key(self, query: str, body: bytes) -> str:
        fields: dict[str, bytes] = {}
        for raw in (query, body.decode("ascii", "replace") if self.method == "POST" else ""):
            for pair in raw.split("&"):
                k, _, v = pair.partition("=")
                if k:
                    fields[k] = unquote_to_bytes(v.replace("+", " "))
        value = fields.get(self.key_param, b"")
        return value.decode(self.charset if self.charset != "utf-8" else "utf-8", "replace")


class _ignore:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is Unsupported


def build_site(raw: dict[str, Any], host: str, port: int, book: str, chapters: list[str],
               fillers: list[str]) -> Site:  # fmt: skip
    """A site for ``raw`` (a real source) serving ``book`` among ``fillers``; ``skip``
    says why it cannot be built (``Unsupported``, or its pages do not read back)."""
    from tracker.discovery.legado.sources import BookSource, _options

    src = json.loads(json.dumps(raw))
    original = str(src.get("bookSourceUrl"))
    base = f"http://{host}:{port}"
    src["bookSourceUrl"] = base
    src.pop("header", None)
    site = Site(host, port, src, original, book, chapters, fillers=fillers)
    try:
        template, opts = _options(str(src.get("searchUrl") or ""))
        if opts.get("headers") or opts.get("webView"):
            raise Unsupported("headers")
        site.charset = (
            "gbk" if str(opts.get("charset", "")).lower() in ("gbk", "gb2312") else "utf-8"
        )
        site.method = str(opts.get("method") or "GET").upper()
        parts = urlsplit(template)
        if parts.scheme and parts.netloc:
            template = parts._replace(scheme="http", netloc=f"{host}:{port}").geturl()
        opts.pop("headers", None)
        src["searchUrl"] = template + ("," + json.dumps(opts, ensure_ascii=False) if opts else "")
        site.search_path = urlsplit(template).path or "/"
        where = (opts.get("body") if site.method == "POST" else parts.query) or ""
        m = re.search(r"(?:^|&)([^=&]+)=\{\{\s*key\s*\}\}", str(where))
        if not m:
            raise Unsupported("no key=value for the key")
        site.key_param = m.group(1)
        rs, rt, rc = site.rules("ruleSearch"), site.rules("ruleToc"), site.rules("ruleContent")
        site.json = rs["bookList"].strip().startswith(("$", "@json:", "@Json:"))
        if site.json:
            if not all(
                r.split("##")[0].strip().startswith(("$", "@json", "@Json"))
                or re.fullmatch(r"\w+(\.\w+)*", r.split("##")[0].strip())
                for r in (rt.get("chapterList", ""), rc.get("content", ""))
            ):
                raise Unsupported("a JSON search with HTML contents")
            for group, key in ((rs, "bookUrl"), (rt, "chapterUrl")):
                rule = group.get(key, "")
                if _json_url_rule(rule) is None:
                    raise Unsupported(f"json {key} {rule!r}")
            book_key = _json_url_rule(rs["bookUrl"])[1][0]  # type: ignore[index]
            chapter_key = _json_url_rule(rt["chapterUrl"])[1][0]  # type: ignore[index]
            rs["bookUrl"] = "/api/book?id={{$." + book_key + "}}"
            rt["chapterUrl"] = "/api/chapter?id={{$." + chapter_key + "}}"
            src["ruleSearch"], src["ruleToc"] = rs, rt
            src.pop("ruleBookInfo", None)
        bs = BookSource.from_raw(src)
        site.source = src
        site.shape = _shape(site, bs)
        _self_check(site, bs)
    except (Unsupported, KeyError, ValueError) as exc:
        site.skip = f"{type(exc).__name__}: {exc}"
    return site


def _shape(site: Site, bs: Any) -> str:
    def kind(rule: str) -> str:
        r = rule.strip().lstrip("-")
        if r.startswith("$") or r.lower().startswith("@json"):
            return "jsonpath"
        if r.lower().startswith("@css:"):
            return "@css"
        if re.search(r"(^|@)(class|id|tag|text)\.", r):
            return "jsoup"
        return "bare-css"

    rs, rt, rc = site.rules("ruleSearch"), site.rules("ruleToc"), site.rules("ruleContent")
    bits = [
        site.method,
        site.charset,
        kind(rs["bookList"])
        + "/"
        + kind(rt.get("chapterList", ""))
        + "/"
        + kind(rc.get("content", "")),
        "tocUrl" if site.rules("ruleBookInfo").get("tocUrl") else "",
        "nextToc" if rt.get("nextTocUrl") else "",
        "nextContent" if rc.get("nextContentUrl") else "",
        "regex" if "##" in json.dumps([rs, rt, rc], ensure_ascii=False) else "",
    ]
    return " ".join(b for b in bits if b)


def _self_check(site: Site, bs: Any) -> None:
    """Read the site's pages back with Yinji's rule reader; ``Unsupported`` if they do
    not read as meant."""
    from urllib.parse import urljoin

    from tracker.discovery.legado.rules import (
        RuleContext,
        get_elements,
        get_string,
        get_strings,
        html_to_text,
        parse_content,
    )

    rs, rt, rc = site.rules("ruleSearch"), site.rules("ruleToc"), site.rules("ruleContent")
    _, body = site.search(site.book)
    content = parse_content(body.decode(site.charset, "replace"))
    items = get_elements(content.root, rs["bookList"], RuleContext())
    names = [get_string(it, rs["name"]) for it in items]
    if site.book not in "".join(names):
        raise Unsupported(f"search reads back {names!r}")
    url = get_string(items[0], rs["bookUrl"])
    if not url:
        raise Unsupported("no book URL read back")
    if urlsplit(urljoin(site.base + "/", url)).netloc != urlsplit(site.base).netloc:
        raise Unsupported(f"book URLs on another host: {url}")
    path = urlsplit(urljoin(site.base + "/", url)).path + (
        "?" + urlsplit(urljoin(site.base + "/", url)).query if urlsplit(url).query else ""
    )
    _, _, body = site.answer("GET", path, b"")
    page = parse_content(body.decode(site.charset, "replace"))
    toc = page
    if site.rules("ruleBookInfo").get("tocUrl") and not site.json:
        t = get_string(page.root, site.rules("ruleBookInfo")["tocUrl"])
        _, _, body = site.answer("GET", urlsplit(urljoin(site.base + "/", t)).path, b"")
        toc = parse_content(body.decode(site.charset, "replace"))
    chapters = get_elements(toc.root, rt["chapterList"])
    urls = [get_string(c, rt.get("chapterUrl") or "href") for c in chapters]
    if len(urls) < (2 if rt.get("nextTocUrl") and not site.json else CHAPTERS) or not all(urls):
        raise Unsupported(f"contents read back {urls!r}")
    if rt.get("nextTocUrl") and not site.json:
        nxt = get_strings(toc.root, rt["nextTocUrl"])
        if not nxt or "toc_2" not in nxt[0]:
            raise Unsupported(f"next contents page read back {nxt!r}")
    full = urljoin(site.base + "/", urls[0])
    p = urlsplit(full)
    if p.netloc != urlsplit(site.base).netloc:
        raise Unsupported(f"chapter URLs on another host: {full}")
    _status, _ctype, body = site.answer("GET", p.path + (f"?{p.query}" if p.query else ""), b"")
    text = html_to_text(
        get_string(parse_content(body.decode(site.charset, "replace")).root, rc["content"])
    )
    if re.sub(r"[\W_]+", "", site.chapters[0])[:20] not in re.sub(r"[\W_]+", "", text):
        raise Unsupported(f"chapter read back {text[:60]!r}")
