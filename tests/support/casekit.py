"""Helpers of the case tests (not a test module): stores filled with a few matches."""

from __future__ import annotations

from pathlib import Path

from tracker.common.records import Match, Mother, Passage, Suspect
from tracker.store import SqliteStore


def add_match(
    store: SqliteStore,
    suspect_id: str,
    mother_id: str,
    url: str,
    *,
    title: str = "",
    score: float = 0.9,
) -> Match:
    """A mother, a crawled suspect at ``url`` and their (pending) match."""
    try:
        store.get_mother(mother_id)
    except KeyError:
        store.put_mother(Mother(id=mother_id, title=title or f"作品{mother_id}", text="正文" * 50))
    raw = f"<html><body>{url}</body></html>".encode()
    store.put_suspect(Suspect(id=suspect_id, text="正文" * 40, url=url, source="crawl", raw=raw))
    match = Match(
        suspect_id=suspect_id,
        mother_id=mother_id,
        score=score,
        coverage=0.8,
        mother_coverage=0.5,
        passages=[Passage(0, 40, 0, 40, 0.98)],
        mother_title=title or f"作品{mother_id}",
        suspect_url=url,
    )
    store.put_matches(suspect_id, [match])
    return store.get_match(match.id)


def library_store(data_dir: Path) -> SqliteStore:
    """The document store a ``Settings(data_dir=...)`` opens."""
    return SqliteStore(data_dir / "yinji.sqlite3")


class SmtpSink:
    """An aiosmtpd server on 127.0.0.1 that keeps what it receives (a context manager);
    with ``auth`` it asks for that (user, password) (AUTH allowed without TLS: loopback)."""

    def __init__(self, auth: tuple[str, str] | None = None) -> None:
        self.messages: list[dict[str, object]] = []
        self.auth = auth
        self.logins: list[str] = []

    def __enter__(self) -> SmtpSink:
        import socket

        from aiosmtpd.controller import Controller
        from aiosmtpd.smtp import AuthResult

        sink = self

        class Handler:
            async def handle_DATA(self, server, session, envelope):
                sink.messages.append(
                    {
                        "from": envelope.mail_from,
                        "to": list(envelope.rcpt_tos),
                        "data": envelope.original_content or envelope.content,
                    }
                )
                return "250 OK"

        def authenticator(server, session, envelope, mechanism, data):
            ok = (data.login.decode(), data.password.decode()) == sink.auth
            if ok:
                sink.logins.append(data.login.decode())
            return AuthResult(success=ok, handled=False)

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        kwargs: dict[str, object] = {}
        if self.auth is not None:
            kwargs = {"authenticator": authenticator, "auth_require_tls": False}
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port, **kwargs)
        self.controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.controller.stop()


class PageServer:
    """A local HTTP server (127.0.0.1, a free port) serving ``pages``: path → (status,
    body bytes, content type); the test changes ``pages`` while it runs. ``hosts``
    maps a Host header to its own pages dict (two sites on one server). Every request
    is kept in ``requests`` as (host, path). POSTs go to ``on_post``."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[int, bytes, str]] = {}
        self.hosts: dict[str, dict[str, tuple[int, bytes, str]]] = {}
        self.requests: list[tuple[str, str]] = []
        self.posts: list[dict[str, object]] = []
        self.post_statuses: list[int] = []  # answers to the next POSTs (then 200)

    def __enter__(self) -> PageServer:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
                server.requests.append((host, self.path))
                pages = server.hosts.get(host, server.pages)
                status, body, ctype = pages.get(self.path, (404, b"not found", "text/plain"))
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                server.posts.append({"headers": dict(self.headers), "body": body})
                status = server.post_statuses.pop(0) if server.post_statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def html(title: str, body: str, *, encoding: str = "utf-8", extra: str = "") -> bytes:
    """A page whose main text is ``body`` (paragraphs per line)."""
    paras = "".join(f"<p>{line}</p>" for line in body.splitlines() if line.strip())
    doc = (
        f'<html><head><meta charset="{encoding}"><title>{title}</title></head>'
        f"<body><h1>{title}</h1><div id='content'>{paras}</div>{extra}</body></html>"
    )
    return doc.encode(encoding)
