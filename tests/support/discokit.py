"""Local stand-ins for discovery tests: a fake SearXNG (its JSON API) and a fake
JieQi-style pirate site (GBK pages, a search form, book index, chapters), each on its
own 127.0.0.1 port. Nothing reaches a public service."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote_to_bytes, urlsplit

Answer = tuple[int, dict[str, str], bytes]


class LocalServer:
    """A threaded HTTP server on 127.0.0.1 answering GETs with ``route(path) -> Answer``;
    every request path is kept in ``requests`` with its time."""

    def __init__(self, route: Callable[[str], Answer]) -> None:
        self.route = route
        self.requests: list[tuple[float, str]] = []

    def __enter__(self) -> LocalServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                server.requests.append((time.monotonic(), self.path))
                status, headers, body = server.route(self.path)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def paths(self) -> list[str]:
        return [p for _, p in self.requests]

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class FakeSearxng:
    """SearXNG's ``GET /search?q=QUERY&format=json``: ``{"results": [{"url", "title",
    "content"}]}``, answering with the indexed pages whose text holds the query's quoted
    phrase (or any of its words). ``mode``: "ok", "html" (an HTML error page), "429",
    "500" or "slow" (answers after ``delay`` seconds)."""

    def __init__(self) -> None:
        self.index: list[tuple[str, str, str]] = []  # url, title, text
        self.mode = "ok"
        self.delay = 0.0
        self.queries: list[str] = []
        self.server = LocalServer(self._route)

    def __enter__(self) -> FakeSearxng:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)

    @property
    def url(self) -> str:
        return f"{self.server.base}/search"

    def _route(self, path: str) -> Answer:
        parts = urlsplit(path)
        params = parse_qs(parts.query)
        if parts.path != "/search":
            return 404, {}, b"not found"
        q = params.get("q", [""])[0]
        self.queries.append(q)
        if self.mode == "429":
            return 429, {"Retry-After": "0"}, b"slow down"
        if self.mode == "500":
            return 500, {}, b"internal error"
        if self.mode == "html":
            return 200, {"Content-Type": "text/html"}, b"<html><body>Forbidden</body></html>"
        if self.mode == "slow":
            time.sleep(self.delay)
        if params.get("format") != ["json"]:
            return 403, {}, b"format not allowed"
        phrase = q.strip().strip('"')
        words = [w.strip('"') for w in q.split() if w.strip('"')]
        hits = [
            {"url": url, "title": title, "content": text[:80]}
            for url, title, text in self.index
            if phrase in text or phrase in title or any(w in title for w in words)
        ]
        body = json.dumps({"query": q, "results": hits}, ensure_ascii=False).encode()
        return 200, {"Content-Type": "application/json"}, body


def gbk_page(title: str, body_html: str) -> bytes:
    doc = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=gbk">'
        f"<title>{title}</title></head><body>{body_html}</body></html>"
    )
    return doc.encode("gbk")


class FakePirateSite:
    """A JieQi-style novel site in GBK: a home page with the search form
    (``/modules/article/search.php``, ``searchkey``), a search that redirects to the
    book's index when the title is known, an index with the chapter list and chapter
    pages (``/book/N/M.html``) with 下一章 / 目录 links. ``books``: title -> chapter
    texts; a chapter of ``split`` is served over two pages (``M.html`` with a 下一页
    link to ``M_2.html``, which links on to the next chapter). ``layout_changed`` makes
    the search answer a page that is no results page."""

    def __init__(self, books: dict[str, list[str]], *, split: tuple[int, ...] = ()) -> None:
        self.books = books
        self.split = set(split)  # chapters served over two pages: N.html, then N_2.html
        self.titles = list(books)
        self.layout_changed = False
        self.server = LocalServer(self._route)

    def __enter__(self) -> FakePirateSite:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)

    @property
    def base(self) -> str:
        return self.server.base

    def _html(self, title: str, body: str) -> Answer:
        return 200, {"Content-Type": "text/html; charset=gbk"}, gbk_page(title, body)

    def _route(self, path: str) -> Answer:
        parts = urlsplit(path)
        if parts.path == "/robots.txt":
            return 404, {}, b""
        if parts.path == "/":
            form = (
                '<form action="/modules/article/search.php" method="get">'
                '<input type="hidden" name="searchtype" value="articlename">'
                '<input type="text" name="searchkey"><input type="submit" value="搜索">'
                "</form>"
            )
            links = "".join(f'<a href="/book/{i}/">{t}</a>' for i, t in enumerate(self.titles, 1))
            return self._html("免费小说阅读网", form + links)
        if parts.path == "/modules/article/search.php":
            raw = b""
            for pair in parts.query.split("&"):
                key, _, value = pair.partition("=")
                if key == "searchkey":
                    raw = unquote_to_bytes(value)
            key = raw.decode("gbk", "replace")
            if self.layout_changed:
                return self._html("维护中", "<p>网站维护中，请稍后再来。</p>")
            for i, t in enumerate(self.titles, 1):
                if key and key in t:
                    return 302, {"Location": f"/book/{i}/"}, b""
            return self._html("搜索结果", "<p>搜索结果：没有找到相关小说</p>")
        segs = [s for s in parts.path.split("/") if s]
        if len(segs) >= 2 and segs[0] == "book" and segs[1].isdigit():
            i = int(segs[1])
            if not 1 <= i <= len(self.titles):
                return 404, {}, b"no such book"
            title = self.titles[i - 1]
            chapters = self.books[title]
            if len(segs) == 2:
                items = "".join(
                    f'<li><a href="/book/{i}/{n}.html">第{n}章</a></li>'
                    for n in range(1, len(chapters) + 1)
                )
                return self._html(f"{title}最新章节", f"<h1>{title}</h1><ul>{items}</ul>")
            name, _, part = segs[2].removesuffix(".html").partition("_")
            if name.isdigit() and 1 <= int(name) <= len(chapters) and part in ("", "2"):
                n = int(name)
                sentences = [p for p in chapters[n - 1].split("。") if p]
                half = len(sentences) // 2 if n in self.split else len(sentences)
                if part and n not in self.split:
                    return 404, {}, b"not found"
                shown = sentences[half:] if part else sentences[:half]
                paras = "".join(f"<p>{p}</p>" for p in shown)
                nav = f'<a href="/book/{i}/">目录</a>'
                if n in self.split and not part:
                    nav += f' <a href="/book/{i}/{n}_2.html">下一页</a>'
                elif n < len(chapters):
                    nav += f' <a href="/book/{i}/{n + 1}.html">下一章</a>'
                head = f"{title} 第{n}章" + (f" 第{part}页" if part else "")
                return self._html(head, f"<div id='content'>{paras}</div>{nav}")
        return 404, {}, b"not found"


def env_for(data_dir: Any, **extra: str) -> dict[str, str]:
    import os

    env = dict(os.environ)
    env.update(
        YINJI_DATA_DIR=str(data_dir),
        YINJI_ALLOW_PRIVATE_URLS="1",
        YINJI_SCREENSHOTS="off",
    )
    for k in ("YINJI_SEARCH_URL", "YINJI_GOOGLE_API_KEY", "YINJI_BRAVE_API_KEY"):
        env.pop(k, None)
    env.update(extra)
    return env
