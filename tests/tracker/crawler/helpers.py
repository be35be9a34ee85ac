"""Helpers of the crawler tests (not tests): our sentences in several charsets, a local
threaded HTTP server on 127.0.0.1 with virtual hosts and an arrival log, a fake DNS."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Our own sentences (simplified, traditional, and GB18030-only characters).
SIMPLIFIED = (
    "清晨的小镇还没有完全醒来，河边的石板路上只有几个早起的老人在散步。"
    "卖豆浆的摊主一边生火，一边和邻居聊着昨天下午突然来的那场大雨。"
    "我们这次出门，是为了找一家据说开了三十年的旧书店。"
)
TRADITIONAL = (
    "清晨的小鎮還沒有完全醒來，河邊的石板路上只有幾個早起的老人在散步。"
    "賣豆漿的攤主一邊生火，一邊和鄰居聊著昨天下午突然來的那場大雨。"
    "我們這次出門，是為了找一家據說開了三十年的舊書店。"
)
# 𠮷 (U+20BB7), 㐀 (U+3400) and 䶮 (U+4DAE) have no GBK code: four-byte GB18030 only.
GB18030_ONLY = "周末我们在𠮷野家吃了一碗牛肉饭，隔壁桌的学生正在讨论㐀和䶮这两个少见的字怎么读。"

TEXTS = {
    "utf-8": ("旧书店", SIMPLIFIED),
    "gbk": ("旧书店", SIMPLIFIED),
    "gb18030": ("牛肉饭", GB18030_ONLY + SIMPLIFIED),
    "big5": ("舊書店", TRADITIONAL),
}
EXPECTED_CODEC = {"utf-8": "utf-8", "gbk": "gb18030", "gb18030": "gb18030", "big5": "big5hkscs"}
# A plausible but wrong label per encoding (templates copied between sites keep them).
WRONG_META = {"utf-8": "gbk", "gbk": "utf-8", "gb18030": "big5", "big5": "gb2312"}


def article(title: str, body: str, meta: str = "") -> str:
    return f"<html><head>{meta}<title>{title}</title></head><body><p>{body}</p></body></html>"


@dataclass
class Hit:
    at: float
    host: str
    path: str
    headers: dict[str, str]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so the crawler's pool reuse is exercised
    server: LocalServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        site = self.server.site
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]")
        site.record(Hit(time.monotonic(), host, self.path, dict(self.headers.items())))
        route = site.find(host, self.path)
        if route is None:
            self.reply(404, b"not found")
        else:
            route(self)

    def reply(
        self,
        status: int = 200,
        body: bytes | str = b"",
        content_type: str | None = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
        raw_headers: list[bytes] | None = None,
    ) -> None:
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        for line in raw_headers or []:
            self._headers_buffer.append(line + b"\r\n")  # type: ignore[attr-defined]
        if not headers or "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Site:
    """Routes keyed by (virtual host or None, path) and the log of arrivals."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str | None, str], Callable[[Handler], None]] = {}
        self.hits: list[Hit] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()  # wakes slow handlers at teardown
        self.port = 0

    def reset(self) -> None:
        with self.lock:
            self.routes.clear()
            self.hits.clear()

    def record(self, hit: Hit) -> None:
        with self.lock:
            self.hits.append(hit)

    def find(self, host: str, path: str) -> Callable[[Handler], None] | None:
        with self.lock:
            return self.routes.get((host, path)) or self.routes.get((None, path))

    def route(self, path: str, host: str | None = None) -> Callable[[Any], Any]:
        def register(fn: Callable[[Handler], None]) -> Callable[[Handler], None]:
            with self.lock:
                self.routes[(host, path)] = fn
            return fn

        return register

    def page(self, path: str, body: bytes | str, content_type: str | None = "text/html", **kw: Any):
        self.route(path, kw.pop("host", None))(lambda h: h.reply(200, body, content_type, **kw))

    def arrivals(self, path: str, host: str | None = None) -> list[Hit]:
        with self.lock:
            return [h for h in self.hits if h.path == path and (host is None or h.host == host)]

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


class LocalServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, site: Site) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.site = site

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients hang up on purpose (size caps, timeouts): not a test failure


def fake_dns(mapping: dict[str, list[str]]) -> Callable[[str, int], list[str]]:
    def resolve(host: str, port: int) -> list[str]:
        if host not in mapping:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return mapping[host]

    return resolve


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
