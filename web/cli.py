"""``yinji serve``, ``yinji demo`` and ``yinji user`` (entry points of ``yinji.commands``)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import shlex
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

from tracker.indexes.redis_client import embedded_server_pid, stop_embedded_redis
from tracker.plumbing.config import SettingError, Settings, WebSettings, WorkerSettings

if TYPE_CHECKING:
    from flask import Flask

    from tracker.store import Store
    from workers.children import ChildWorkers

DEMO_DIR = Path(__file__).parent / "demo"
DEMO_USER = "demo"
DEMO_PASSWORD = "yinji-demo"
SERVER_NAME = "Yinji"  # the Server header: no software versions


def _settings(ctx: click.Context, *, broker: bool = True) -> Settings:
    """Settings of the parent group's ``--data-dir`` (exported as ``YINJI_DATA_DIR`` so
    that the workers this process starts, and their children, use the same folder)."""
    data_dir = (ctx.obj or {}).get("data_dir") if ctx.obj is not None else None
    if data_dir is not None:
        os.environ["YINJI_DATA_DIR"] = str(data_dir)
    try:
        # Every option of this process is read here, so that a bad one stops it at
        # once with its name instead of in the middle of starting the server.
        from workers.app import require_broker

        WebSettings.from_env()
        WorkerSettings.from_env()
        settings = Settings.from_env()
        if broker:  # serve and demo submit jobs: never Celery's silent default broker
            require_broker(settings)
        return settings
    except SettingError as exc:
        raise click.ClickException(str(exc)) from None


def _store(settings: Settings) -> Store:
    from tracker.store import open_store

    return open_store(settings)


# Waitress' worker threads: requests served at once. Most of a request's time is spent
# in sqlite, Redis and socket I/O, which release the GIL; beyond about 2 per core more
# threads only queue on the GIL (bench/bench_web_load.py measured 4, 8 and 16).
DEFAULT_THREADS = 8


_NON_ASCII = re.compile(rb"[\x80-\xff]")


def _utf8_request_line_channel() -> type:
    """Waitress' connection class, reading a request line with raw UTF-8 (``GET
    /matches?q=旧书店``, as curl sends it) as the percent-encoded line a browser sends;
    waitress alone answers "400 Bad URI" to it."""
    from waitress.channel import HTTPChannel
    from waitress.parser import HTTPRequestParser

    class Utf8RequestLineParser(HTTPRequestParser):
        def parse_header(self, header_plus: bytes) -> None:
            end = header_plus.find(b"\r\n")
            if end > 0 and _NON_ASCII.search(header_plus, 0, end):
                line = _NON_ASCII.sub(lambda m: b"%%%02X" % m.group()[0], header_plus[:end])
                header_plus = line + header_plus[end:]
            super().parse_header(header_plus)

    class Utf8RequestLineChannel(HTTPChannel):
        parser_class = Utf8RequestLineParser

    return Utf8RequestLineChannel


class HttpServer:
    """``yinji serve``'s production WSGI server: waitress (pure Python, no C extension,
    maintained by the Pylons project, used under Pyramid and Flask deployments; it
    runs on Windows and Linux alike, buffers request bodies over 512 kB to a temporary
    file instead of memory, and reads a request whole before a thread takes it, so a
    slow client never holds one of the ``threads``). The interface of the standard
    library's servers: ``serve_forever``, ``shutdown`` (from another thread),
    ``server_close``, ``server_port``."""

    def __init__(
        self, app: Flask, host: str, port: int, *, threads: int = DEFAULT_THREADS, max_body: int
    ) -> None:
        from waitress.server import create_server

        # "Task queue depth is N" for every request that waits for a thread: under load
        # a line per request on stderr, and a queue is what a busy server has.
        logging.getLogger("waitress.queue").setLevel(logging.ERROR)
        self._server: Any = create_server(
            app,
            host=host,
            port=port,
            threads=threads,
            ident=SERVER_NAME,  # the Server header: no software versions
            max_request_body_size=max_body,  # cut at the server, as the app would
            clear_untrusted_proxy_headers=True,
            channel_timeout=120,
        )
        self._server.channel_class = _utf8_request_line_channel()
        self.server_port = int(self._server.effective_port)
        self.threads = threads
        self._stop = False

    def serve_forever(self) -> None:
        from waitress import wasyncore

        adj = self._server.adj
        try:
            while not self._stop:
                wasyncore.loop(
                    timeout=0.5, use_poll=adj.asyncore_use_poll, map=self._server._map, count=1
                )
        finally:
            self._server.task_dispatcher.shutdown()

    def shutdown(self) -> None:
        self._stop = True

    def server_close(self) -> None:
        self._stop = True
        self._server.close()


def make_http_server(
    app: Flask, host: str, port: int, *, threads: int = DEFAULT_THREADS
) -> HttpServer:
    """The HTTP server ``yinji serve`` runs ``app`` on (port 0: any free one)."""
    limit = int(app.config.get("MAX_CONTENT_LENGTH") or 0) or 1024**3
    return HttpServer(app, host, port, threads=threads, max_body=limit + 1024 * 1024)


def _run_server(
    settings: Settings,
    host: str,
    port: int,
    *,
    start_worker: bool = True,
    threads: int = DEFAULT_THREADS,
) -> None:
    from web import create_app

    # With the embedded Redis, this process stops the server on exit only if it was
    # the one that started it (a running 'yinji worker' may have started it first).
    owns_redis = settings.embedded and embedded_server_pid(settings) is None
    app = create_app(settings)
    workers = ServeWorkers(settings) if start_worker else None
    server = make_http_server(app, host, port, threads=threads)
    click.echo(
        f"音迹 Yinji on http://{host}:{server.server_port}/  "
        f"(waitress, {threads} threads; Ctrl-C stops)",
        err=True,
    )
    # docker stop (SIGTERM) shuts down like Ctrl-C; SIGINT is set too because a
    # process started in the background by a shell inherits it ignored.
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    if workers is not None:
        # After the server listens: the web app answers at once (after a crash too),
        # and /healthz says which queues wait for a worker until they are up.
        workers.start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        # A second Ctrl-C must not interrupt the clean-up and leave Redis running.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        server.server_close()
        if workers is not None:
            workers.stop()  # before the embedded Redis server they use
        shutdown(app, settings, stop_redis=owns_redis)


class ServeWorkers:
    """The workers of ``yinji serve``, started on a thread of their own once the web
    server listens: the running ones when some answer a ping, else two worker
    processes (``workers.children``: checks, alerts) that the same thread then
    supervises until serve stops, else in-process consumers. The jobs run in worker
    processes of their own (a check on a thread of this process would hold the GIL the
    web threads need)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.children: ChildWorkers | None = None
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._start, name="yinji-serve-start", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _start(self) -> None:
        from workers import children as child_workers
        from workers import jobs

        try:
            if jobs.workers_answer(self.settings):
                click.echo("using the running worker(s)", err=True)
                return
            if hasattr(os, "geteuid") and os.geteuid() == 0:
                from workers.cli import ROOT_NOTE

                click.echo(f"yinji serve: {ROOT_NOTE}", err=True)
            children = child_workers.start(self.settings, cancel=self._cancel)
            if children is None:
                if not self._cancel.is_set() and jobs.ensure_worker(self.settings):
                    click.echo("started an in-process worker", err=True)
                return
            self.children = children
            if self._cancel.is_set():  # serve stopped meanwhile
                children.stop()
                return
            click.echo(
                "started 2 worker processes (checks; alerts), replaced when one stops",
                err=True,
            )
            problem = jobs.durability_problem()  # after the start: it is not delayed
            if problem:
                click.echo(f"warning: {problem}", err=True)
        except Exception:
            logging.getLogger(__name__).exception("the workers of yinji serve did not start")
            return
        # This thread forked them and must outlive them (Linux PR_SET_PDEATHSIG follows
        # the forking thread): it supervises them until serve stops.
        children.watch()

    def stop(self) -> None:
        """Stop what was started (a start still under way is cancelled first)."""
        self._cancel.set()
        children = self.children
        if children is not None:
            children.stop()
        if self._thread.is_alive():
            self._thread.join(30)


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def shutdown(app: Flask, settings: Settings, *, stop_redis: bool = True) -> None:
    """Stop what ``serve`` started: the in-process worker, the libraries, and (with
    ``stop_redis``: this process started it) the embedded Redis server."""
    from workers import jobs
    from workers.app import release_embedded, use_app
    from workers.runtime import close_all

    jobs.stop_inprocess_worker()
    close_all()
    app.extensions["yinji"].close()
    release_embedded(settings)
    use_app(None)
    if stop_redis:
        stop_embedded_redis(settings)


ADMIN_FILE = "initial-admin.txt"  # the first admin's credentials, in the data folder


def _bootstrap_admin(settings: Settings) -> Path | None:
    """A fresh installation has no user: make an admin with a random password, so that
    ``yinji serve`` alone gives a system one can sign in to. The password and API token
    go to ``<data dir>/initial-admin.txt`` (mode 600, created only by this process),
    never to the log (``docker compose logs`` shows the log to anyone who can read it);
    only the file's path is printed. Returns that path, or None when users exist."""
    from web import accounts

    store = _store(settings)
    try:
        if store.list_users():
            return None
        password = secrets.token_urlsafe(12)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        path = settings.data_dir / ADMIN_FILE
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a stale file from an earlier installation of this folder
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        token = accounts.create_user(store, "admin", "admin", password)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(
                "# Yinji: the first admin, created by 'yinji serve' on an empty user table.\n"
                "# Sign in, change the password on the account page, then delete this file.\n"
                f"username: admin\npassword: {password}\napi_token: {token}\n"
            )
    finally:
        store.close()
    click.echo(
        f"no users yet: created user 'admin'; its password and API token are in {path} "
        "(readable by this user only; delete it after signing in)",
        err=True,
    )
    return path


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=int, help="Port to listen on.")
@click.option(
    "--no-worker",
    is_flag=True,
    help="Do not start an in-process worker (run 'yinji worker' separately).",
)
@click.option(
    "--threads",
    default=DEFAULT_THREADS,
    show_default=True,
    type=click.IntRange(1, 256),
    help="Requests served at once (waitress worker threads).",
)
@click.pass_context
def serve(ctx: click.Context, host: str, port: int, no_worker: bool, threads: int) -> None:
    """Run the web app (dashboard, REST API) on waitress, a production WSGI server, with
    a worker unless one is running."""
    settings = _settings(ctx)
    _bootstrap_admin(settings)
    _run_server(settings, host, port, start_worker=not no_worker, threads=threads)


# --- demo -----------------------------------------------------------------------------------
DEMO_PROFILE = {
    "name": "音迹示例出版社 Yinji Demo Press",
    "contact": "版权部 Rights department",
    "email": "rights@demo-press.example",
    "phone": "+86 10 0000 0000",
    "address": "示例市示例路 1 号 1 Example Road, Example City",
}


def load_demo(settings: Settings) -> dict[str, int]:
    """Load the sample library and suspects of ``web/demo`` (original texts written for
    Yinji), check the suspects and give two matches their verdict, so that every page
    has something to show. Idempotent.

    The demo tells a story of the last two weeks, and its recorded times follow the
    order of events, as a report checks them: the works were imported first (two days
    before the oldest suspect), each suspect text was received on its day (``days_ago``;
    the demo's texts were written for it, never fetched: their source is ``demo``, and
    reports say "submitted text, not fetched"), checked five minutes later (the match's
    ``created_at``), and the verdicts are given now, through the case workflow
    (``tracker.cases``), which files the confirmed page into a takedown case."""
    from tracker.documents.readers import Document, read_bytes
    from tracker.library import Library
    from tracker.services.case_service import close_case_service, open_case_service
    from tracker.services.demo import DemoSuspect, tell_demo_story
    from tracker.store import utcnow
    from web import accounts

    lines = (DEMO_DIR / "suspects.jsonl").read_text(encoding="utf-8").splitlines()
    suspects = [
        DemoSuspect(
            id=item["id"],
            text=item["text"],
            title=item["title"],
            url=item["url"],
            days_ago=int(item.get("days_ago", 0)),
            verdict=item.get("verdict") or None,
            note=item.get("note", ""),
        )
        for item in (json.loads(line) for line in lines if line.strip())
    ]
    works = [
        d
        for d in read_bytes((DEMO_DIR / "mothers.jsonl").read_bytes(), "mothers.jsonl")
        if isinstance(d, Document)
    ]
    lib = Library.open(settings)
    cases = open_case_service(settings)
    try:
        told = tell_demo_story(lib, cases, works, suspects, now=utcnow(), who=f"web:{DEMO_USER}")
        if cases.profile().missing():
            cases.set_profile(**DEMO_PROFILE)
    finally:
        close_case_service(cases)
        lib.close()
    store = _store(settings)
    try:
        if store.get_user(DEMO_USER) is None:
            accounts.create_user(store, DEMO_USER, "admin", DEMO_PASSWORD)
    finally:
        store.close()
    return {"works": told.works, "suspects": told.suspects, "matches": told.matches}


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--no-serve", is_flag=True, help="Only load the demo data.")
@click.pass_context
def demo(ctx: click.Context, host: str, port: int, no_serve: bool) -> None:
    """Load a small sample library and suspect pages, then serve the app."""
    settings = _settings(ctx)
    info = load_demo(settings)
    click.echo(
        f"demo loaded into {settings.data_dir}: {info['works']} works, "
        f"{info['suspects']} suspects, {info['matches']} matches",
        err=True,
    )
    if no_serve:
        # Nothing listens: say how to serve it, not an address that does not answer.
        given = ctx.obj.get("data_dir") if ctx.obj else None
        folder = f" --data-dir {shlex.quote(str(settings.data_dir))}" if given else ""
        click.echo(
            f"start it with 'yinji{folder} serve', then sign in as '{DEMO_USER}' with "
            f"password '{DEMO_PASSWORD}'"
        )
        return
    click.echo(
        f"open http://{host}:{port}/ and sign in as '{DEMO_USER}' with password '{DEMO_PASSWORD}'"
    )
    _run_server(settings, host, port)


# --- users ----------------------------------------------------------------------------------
@click.group()
def user() -> None:
    """Users of the web app and the API."""


@user.command("add")
@click.argument("username")
@click.option(
    "--role", type=click.Choice(["admin", "analyst", "viewer"]), default="viewer", show_default=True
)
@click.option("--password", default=None, help="Asked for when not given (recommended).")
@click.pass_context
def user_add(ctx: click.Context, username: str, role: str, password: str | None) -> None:
    """Add a user; prints their API token (shown only once)."""
    from web import accounts

    if password is None:
        # Without a terminal getpass warns (GetPassWarning) and echoes: read the piped
        # lines plainly, and say what to do when there are none (< /dev/null).
        terminal = sys.stdin.isatty()
        try:
            password = click.prompt(
                "Password", hide_input=terminal, confirmation_prompt=True, err=True
            )
        except click.Abort:
            if terminal:
                raise
            raise click.UsageError(
                "no password given and no terminal to ask for it: use --password"
            ) from None
    store = _store(_settings(ctx, broker=False))
    try:
        token = accounts.create_user(store, username, role, password)
    except accounts.AccountError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        store.close()
    click.echo(f"user {username!r} added with role {role}", err=True)
    click.echo(f"API token (shown once): {token}", err=True)
    if not sys.stdout.isatty():
        click.echo(token)


@user.command("list")
@click.pass_context
def user_list(ctx: click.Context) -> None:
    """Users, their roles, and whether they have an API token."""
    store = _store(_settings(ctx, broker=False))
    try:
        users = store.list_users()
    finally:
        store.close()
    if not users:
        click.echo("no users (add one with: yinji user add NAME --role admin)", err=True)
    for u in users:
        token = "token" if u.api_token_hash else "no token"
        click.echo(f"{u.username}\t{u.role}\t{token}\t{u.created_at:%Y-%m-%d}")


@user.command("token")
@click.argument("username")
@click.pass_context
def user_token(ctx: click.Context, username: str) -> None:
    """Give a user a new API token (the old one stops working); prints it once."""
    from web import accounts

    store = _store(_settings(ctx, broker=False))
    try:
        token = accounts.reset_token(store, username)
    except accounts.AccountError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        store.close()
    click.echo(token)


@user.command("password")
@click.argument("username")
@click.option("--password", default=None, help="Asked for when not given.")
@click.pass_context
def user_password(ctx: click.Context, username: str, password: str | None) -> None:
    """Set a user's password."""
    from web import accounts

    if password is None:
        password = click.prompt("New password", hide_input=True, confirmation_prompt=True)
    store = _store(_settings(ctx, broker=False))
    try:
        accounts.set_password(store, username, password)
    except accounts.AccountError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        store.close()
    click.echo(f"password of {username!r} changed", err=True)


@user.command("delete")
@click.argument("username")
@click.pass_context
def user_delete(ctx: click.Context, username: str) -> None:
    """Delete a user."""
    store = _store(_settings(ctx, broker=False))
    try:
        if store.get_user(username) is None:
            raise click.ClickException(f"no user {username!r}")
        store.delete_user(username)
    finally:
        store.close()
    click.echo(f"user {username!r} deleted", err=True)
