"""The watch list and the monitored books, in the web admin (``/watch``) and the REST
API (``/api/v1/watch``, ``/api/v1/watch/books``).

An item added here is crawled once at once (a job running its daily task) and then
every day by ``yinji beat`` (``YINJI_RECRAWL_AT``); the page says when. A book's case
(``tracker.cases.books``) is found by its index URL.
"""

from __future__ import annotations

from datetime import datetime

from flask import Blueprint, Response, flash, jsonify, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from tracker.cases import Case
from tracker.cases.watching import WATCH_KINDS, next_daily_run
from tracker.common.records import JSONObject, WatchItem
from tracker.common.timefmt import iso_utc
from tracker.plumbing.config import WorkerSettings
from tracker.services.watch_list import WatchList
from workers import jobs

from ..apimodels.watch import UnwatchQuery, WatchAdded, WatchedBooks, WatchIn, WatchItems
from ..casework import cases
from ..core import bad_request, fail, library, role_required
from ..i18n import translate as _
from ..openapi import Reply, error, operation
from ..validation import body_as, query_as

bp = Blueprint("watch", __name__)


def watch_list() -> WatchList:
    return WatchList.of(library())


def _next_run() -> datetime:
    ws = WorkerSettings.from_env()
    return next_daily_run(ws.recrawl_at, ws.timezone)


def _book_cases() -> dict[str, Case]:
    """Index URL → the book's active (else latest) case."""
    out: dict[str, Case] = {}
    for c in cases().list_cases():
        book = c.metadata.get("book")
        if c.kind == "book" and isinstance(book, dict) and book.get("index_url"):
            url = str(book["index_url"])
            if url not in out or (out[url].state == "closed" and c.state != "closed"):
                out[url] = c
    return out


def _item_json(item: WatchItem, book_case: Case | None = None) -> JSONObject:
    return {
        "url": item.url,
        "kind": item.kind,
        "active": item.active,
        "added_at": iso_utc(item.added_at),
        "last_crawled_at": iso_utc(item.last_crawled_at) if item.last_crawled_at else None,
        "case_id": book_case.id if book_case is not None else None,
    }


def _book_json(url: str, case: Case, watched: bool) -> JSONObject:
    book = case.metadata.get("book") or {}
    chapters = book.get("chapters") or []
    return {
        "index_url": url,
        "title": book.get("title", ""),
        "case_id": case.id,
        "case_state": case.state,
        "domain": case.domain,
        "watched": watched,
        "checked_at": book.get("checked_at"),
        "pages_fetched": book.get("pages_fetched"),
        "truncated": bool(book.get("truncated")),
        "chapters": [
            {
                "n": ch.get("n"),
                "url": ch.get("url"),
                "title": ch.get("title", ""),
                "matches": len(ch.get("matches") or []),
                "error": ch.get("error", ""),
            }
            for ch in chapters
        ],
    }


def _add(url: object, kind: object) -> tuple[WatchItem, str]:
    """Put ``url`` on the watch list and submit its first crawl; (item, job id)."""
    with bad_request():
        item = watch_list().add(url, kind)
        job_id = jobs.submit_watch(item.url, item.kind)
    return item, job_id


# --- pages ------------------------------------------------------------------------------------
@bp.get("/watch")
def index() -> ResponseReturnValue:
    books = _book_cases()
    items = watch_list().items()
    watched = {i.url for i in items}
    return render_template(
        "watch.html",
        items=items,
        books=books,
        unwatched_books=[(u, c) for u, c in books.items() if u not in watched],
        next_run=_next_run(),
        kinds=WATCH_KINDS,
    )


@bp.post("/watch")
@role_required("analyst")
def add() -> ResponseReturnValue:
    item, job_id = _add((request.form.get("url") or "").strip(), request.form.get("kind") or "url")
    flash(_("Watching {url}: the first crawl runs now.", url=item.url), "info")
    return redirect(url_for("suspects.job", job_id=job_id, kind="watch"))


@bp.post("/watch/remove")
@role_required("analyst")
def remove() -> ResponseReturnValue:
    url = (request.form.get("url") or "").strip()
    if not watch_list().remove(url):
        fail(404, f"not on the watch list: {url}")
    flash(_("Removed from the watch list."), "info")
    return redirect(url_for("watch.index"))


# --- API --------------------------------------------------------------------------------------
@bp.get("/api/v1/watch")
@operation(
    "The watch list (re-crawled daily by `yinji beat` at YINJI_RECRAWL_AT) and the time "
    "of the next crawl",
    {200: Reply("The watch list", WatchItems)},
)
def api_list() -> ResponseReturnValue:
    books = _book_cases()
    items = watch_list().items()
    return jsonify(
        {
            "items": [_item_json(i, books.get(i.url)) for i in items],
            "next_crawl_at": iso_utc(_next_run()),
        }
    )


@bp.post("/api/v1/watch")
@operation(
    "Watch a URL, a site or a pirate book (analyst); its first crawl runs at once as a job",
    {
        202: Reply("Watched; the first crawl is queued (poll status_url)", WatchAdded),
        400: error(
            "Bad URL or kind (a private address is refused unless YINJI_ALLOW_PRIVATE_URLS=1)"
        ),
    },
    body=WatchIn,
)
@role_required("analyst")
def api_add() -> ResponseReturnValue:
    body = body_as(WatchIn)
    item, job_id = _add(body.url, body.kind)
    status_url = url_for("api.job", job_id=job_id)
    response = jsonify(
        {
            **_item_json(item),
            "job_id": job_id,
            "status_url": status_url,
            "next_crawl_at": iso_utc(_next_run()),
        }
    )
    response.status_code = 202
    response.headers["Location"] = status_url
    return response


@bp.delete("/api/v1/watch")
@operation(
    "Stop watching a URL (analyst)",
    {204: Reply("Removed"), 404: error("Not on the watch list")},
    query=UnwatchQuery,
)
@role_required("analyst")
def api_remove() -> Response:
    url = query_as(UnwatchQuery).url
    if not watch_list().remove(url):
        fail(404, f"not on the watch list: {url}")
    return Response(status=204)


@bp.get("/api/v1/watch/books")
@operation(
    "Monitored pirate books: each book case with its chapters",
    {200: Reply("Books", WatchedBooks)},
)
def api_books() -> ResponseReturnValue:
    watched = watch_list().urls("book")
    return jsonify({"books": [_book_json(u, c, u in watched) for u, c in _book_cases().items()]})
