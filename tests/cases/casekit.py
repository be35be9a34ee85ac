"""Helpers of the case tests (not a test module): stores filled with a few matches."""

from __future__ import annotations

from pathlib import Path

from tracker.records import Match, Mother, Passage, Suspect
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
