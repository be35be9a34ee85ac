"""The simulated web's HTTP server, in its own process: every host name of
``world.HOSTS`` on one 127.0.0.1 port (told apart by the Host header; the crawler's
resolver maps every ``*.sim`` name to 127.0.0.1), the fake search engine on
``127.0.0.1`` itself (``GET /search?q=&format=json``, SearXNG's JSON), and a log of
every request as it arrived (``GET /__log`` and ``/__reset`` on 127.0.0.1): the
measurements of politeness and traps are taken here, at the server."""

from __future__ import annotations

import json
import multiprocessing as mp
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


def _serve(port_box: Any, ready: Any, seed: int) -> None:
    from bench.simweb.world import World

    world = World.build(seed)
    engine = world.search_index()
    log: list[tuple[float, str, str, bool, int]] = []
    sids: dict[tuple[str, str], str] = {}  # (host, path) -> the first session id it had

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            now = time.monotonic()
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0].lower()
            if host == "127.0.0.1":
                parts = urlsplit(self.path)
                if parts.path == "/search":
                    q = parse_qs(parts.query).get("q", [""])[0]
                    hits = engine.search(q, port_box.value)
                    body = json.dumps({"query": q, "results": hits}, ensure_ascii=False)
                    self._send(200, {"Content-Type": "application/json"}, body.encode())
                    return
                if parts.path == "/__log":
                    self._send(200, {"Content-Type": "application/json"}, json.dumps(log).encode())
                    return
                if parts.path == "/__reset":
                    log.clear()
                    sids.clear()
                    self._send(200, {}, b"ok")
                    return
                self._send(404, {}, b"")
                return
            status, headers, body, trap = world.page(host, self.path)
            parts = urlsplit(self.path)
            sid = parse_qs(parts.query).get("sid")
            if sid:  # the same page under another session id: a session trap
                first = sids.setdefault((host, parts.path), sid[0])
                trap = trap or first != sid[0]
            log.append((now, host, self.path, trap, status))
            self._send(status, headers, body)

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 256

    httpd = Server(("127.0.0.1", 0), Handler)
    port_box.value = httpd.server_address[1]
    ready.set()
    httpd.serve_forever()


class SimWeb:
    """Start/stop the server process; read its log."""

    def __init__(self, seed: int = 7) -> None:
        self.seed = seed

    def __enter__(self) -> SimWeb:
        ctx = mp.get_context("spawn")
        self.port_box = ctx.Value("i", 0)
        ready = ctx.Event()
        self.proc = ctx.Process(target=_serve, args=(self.port_box, ready, self.seed), daemon=True)
        self.proc.start()
        if not ready.wait(180):
            raise RuntimeError("the simulated web did not start in 180 s")
        self.port = int(self.port_box.value)
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.join(10)

    def _get(self, path: str) -> bytes:
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=60) as r:
            return bytes(r.read())

    def log(self) -> list[tuple[float, str, str, bool, int]]:
        return [tuple(x) for x in json.loads(self._get("/__log"))]  # type: ignore[misc]

    def reset(self) -> None:
        self._get("/__reset")
