"""Local pirate sites built to the rule shapes of real Legado sources, on 127.0.0.1:

- ``GbkPostSite``: a JieQi-style site searched by POST with the key in GBK, results,
  contents and chapters in GBK HTML read by bare-CSS rules; the contents over two pages
  and a chapter over two pages (``2.html`` + ``2_2.html``), an ad line in every chapter;
- ``JsonApiSite``: a JSON API (search, contents, chapter) read by JSONPath.

``legado_file()`` is the Legado file people would share for them (plus a third source
whose search needs JavaScript). Nothing reaches a public service."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote_to_bytes, urlsplit

AD = "本站广告：请收藏本站最新网址"


class _Server:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, bytes]] = []  # (method, path, body)

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
        raise NotImplementedError

    def __enter__(self) -> Any:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _do(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                server.requests.append((method, self.path, body))
                status, ctype, out = server.answer(method, self.path, body)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def do_GET(self) -> None:
                self._do("GET")

            def do_POST(self) -> None:
                self._do("POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class GbkPostSite(_Server):
    """``books``: title → (author, [chapter texts]); chapter 2 spans two pages."""

    def __init__(self, books: dict[str, tuple[str, list[str]]]) -> None:
        super().__init__()
        self.books = books
        self.titles = list(books)

    def _html(self, body: str) -> tuple[int, str, bytes]:
        page = (
            "<html><head><meta http-equiv='Content-Type' content='text/html; charset=gbk'>"
            f"</head><body>{body}</body></html>"
        )
        return 200, "text/html; charset=gbk", page.encode("gbk")

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
        parts = urlsplit(path)
        if parts.path == "/modules/article/search.php" and method == "POST":
            fields = dict(p.split("=", 1) for p in body.decode("ascii").split("&") if "=" in p)
            key = unquote_to_bytes(fields.get("searchkey", "")).decode("gbk", "replace")
            items = "".join(
                f"<div class='item'><h3><a href='/book/{i}/'>{t}</a></h3>"
                f"<span class='author'>{self.books[t][0]}</span></div>"
                for i, t in enumerate(self.titles)
                if key and key in t
            )
            return self._html(f"<div class='results'>{items}</div>")
        bits = parts.path.strip("/").split("/")
        if len(bits) >= 2 and bits[0] == "book" and bits[1].isdigit():
            i = int(bits[1])
            if i >= len(self.titles):
                return 404, "text/plain", b"no such book"
            title = self.titles[i]
            chapters = self.books[title][1]
            half = (len(chapters) + 1) // 2
            if len(bits) == 2 or bits[2] in ("", "index_2.html"):
                second = len(bits) == 3 and bits[2] == "index_2.html"
                numbers = range(half + 1, len(chapters) + 1) if second else range(1, half + 1)
                links = "".join(
                    f"<dd><a href='/book/{i}/{n}.html'>第{n}章</a></dd>" for n in numbers
                )
                nav = "" if second else f"<a href='/book/{i}/index_2.html'>下一页</a>"
                return self._html(f"<h1>{title}</h1><div id='list'><dl>{links}</dl></div>{nav}")
            page = bits[2].removesuffix(".html")
            n_str, _, part = page.partition("_")
            if not n_str.isdigit() or not 1 <= int(n_str) <= len(chapters):
                return 404, "text/plain", b"no such chapter"
            n = int(n_str)
            text = chapters[n - 1]
            nav = ""
            if n == 2:  # over two pages
                cut = len(text) // 2
                text = text[cut:] if part == "2" else text[:cut]
                if part != "2":
                    nav = f"<a id='next' href='/book/{i}/2_2.html'>下一页</a>"
            paras = "".join(f"<p>{s}。</p>" for s in text.split("。") if s)
            return self._html(
                f"<h1>第{n}章</h1><div id='content'>{paras}<p>{AD}</p></div>{nav}"
                f"<a href='/book/{i}/'>目录</a>"
            )
        return 404, "text/plain", b"not found"


class JsonApiSite(_Server):
    """A JSON API: ``/api/search?kw=``, ``/api/toc?id=``, ``/api/chapter?id=``."""

    def __init__(self, books: dict[str, tuple[str, list[str]]]) -> None:
        super().__init__()
        self.books = books
        self.titles = list(books)

    def _json(self, data: object) -> tuple[int, str, bytes]:
        return 200, "application/json", json.dumps(data, ensure_ascii=False).encode()

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, str, bytes]:
        parts = urlsplit(path)
        q = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if parts.path == "/api/search":
            kw = q.get("kw", "")
            hits = [
                {"book_name": t, "author": self.books[t][0], "book_id": i}
                for i, t in enumerate(self.titles)
                if kw and kw in t
            ]
            return self._json({"code": 0, "data": {"list": hits}})
        if parts.path == "/api/toc":
            i = int(q.get("id", "-1"))
            if not 0 <= i < len(self.titles):
                return 404, "application/json", b'{"code": 404}'
            chapters = self.books[self.titles[i]][1]
            items = [{"title": f"第{n}章", "cid": f"{i}-{n}"} for n in range(1, len(chapters) + 1)]
            return self._json({"code": 0, "data": {"chapters": items}})
        if parts.path == "/api/chapter":
            book, _, n = q.get("id", "").partition("-")
            try:
                text = self.books[self.titles[int(book)]][1][int(n) - 1]
            except (ValueError, IndexError):
                return 404, "application/json", b'{"code": 404}'
            return self._json({"code": 0, "data": {"content": text.replace("。", "。<br>")}})
        return 404, "application/json", b'{"code": 404}'


def gbk_source(base: str, name: str = "GBK 笔趣阁") -> dict[str, Any]:
    return {
        "bookSourceName": name,
        "bookSourceUrl": base,
        "bookSourceType": 0,
        "searchUrl": '/modules/article/search.php,{"method": "POST", '
        '"body": "searchkey={{key}}", "charset": "gbk"}',
        "ruleSearch": {
            "bookList": ".results .item",
            "name": "h3 a@text",
            "author": ".author@text",
            "bookUrl": "h3 a@href",
        },
        "ruleBookInfo": {"name": "h1@text"},
        "ruleToc": {
            "chapterList": "#list dd a",
            "chapterName": "text",
            "chapterUrl": "href",
            "nextTocUrl": "text.下一页@href",
        },
        "ruleContent": {
            "content": "#content@html",
            "nextContentUrl": "#next@href",
            "replaceRegex": "##本站广告.*",
        },
        "exploreUrl": "@js:java.ajax('x')",
    }


def json_source(base: str, name: str = "JSON 小说 API") -> dict[str, Any]:
    return {
        "bookSourceName": name,
        "bookSourceUrl": base,
        "bookSourceType": 0,
        "searchUrl": "/api/search?kw={{key}}&page={{page}}",
        "ruleSearch": {
            "bookList": "$.data.list[*]",
            "name": "$.book_name",
            "author": "$.author",
            "bookUrl": "/api/toc?id={{$.book_id}}",
        },
        "ruleToc": {
            "chapterList": "$.data.chapters[*]",
            "chapterName": "$.title",
            "chapterUrl": "/api/chapter?id={{$.cid}}",
        },
        "ruleContent": {"content": "$.data.content"},
    }


def js_source(base: str = "http://js-only.example") -> dict[str, Any]:
    return {
        "bookSourceName": "要脚本的站",
        "bookSourceUrl": base,
        "bookSourceType": 0,
        "searchUrl": "@js:let u = source.getKey() + '/s?q=' + key; u",
        "ruleSearch": {"bookList": ".list li", "name": "a@text", "bookUrl": "a@href"},
        "ruleToc": {"chapterList": "#list a", "chapterName": "text", "chapterUrl": "href"},
        "ruleContent": {"content": "#content@html"},
    }


def legado_file(gbk_base: str, json_base: str) -> str:
    """The three sources as a shared file would hold them: a BOM, a comment, a
    trailing comma."""
    body = json.dumps(
        [gbk_source(gbk_base), json_source(json_base), js_source()], ensure_ascii=False, indent=1
    )
    return "\ufeff// 书源 shared by readers\n" + body[:-1].rstrip() + ",\n]"
