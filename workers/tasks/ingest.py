"""Ingest tasks (queue ``ingest``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from celery import Task, shared_task

from tracker.common.records import JSONObject, JSONValue
from tracker.documents.readers import Document, DocumentError
from tracker.library import Library
from tracker.services.lookups import stored_as_given
from workers.app import app_settings
from workers.book_uploads import BookMode, UploadBooks, made_json
from workers.book_uploads import book_mode as book_mode_of
from workers.payloads import documents_from_items
from workers.spool import Spool, UploadRef
from workers.tasks._base import NETWORK_ERRORS, TASK_OPTIONS, Progress, once, retry_races, rt

T = TypeVar("T")


@shared_task(name="yinji.ingest.ingest_batch", **TASK_OPTIONS)
def ingest_batch(self: Task, documents: list[JSONObject], engine: str | None = None) -> JSONObject:
    """Add or replace mothers (``{id, title?, text, metadata?}``) like ``yinji ingest``.

    Idempotent: a mother is stored by its id (a second run replaces it with itself and
    moves its index postings to the new version). Invalid items are reported in
    ``errors`` and skipped."""
    return once(self, lambda: _ingest(self, documents, engine))


def _ingest(task: Task, documents: list[JSONObject], engine: str | None) -> JSONObject:
    items = documents_from_items(list(documents))
    progress = Progress(task, total=len(items))
    progress.start()
    library = rt(task).library
    try:
        report = retry_races(
            lambda: library.ingest(items, engine=engine, batch_size=32, progress=progress),
            f"ingest {task.request.id}",
        )
    except NETWORK_ERRORS:
        raise  # retried by the task: the service may come back
    except Exception as exc:
        # Failed for good (a race retried to the end, a store error): say per item what
        # was really stored, rather than one error for the whole chunk.
        return {**stored_report(library, items, exc), "total": len(items)}
    return {**report.to_dict(), "total": len(items)}


def stored_report(
    library: Library, items: list[Document | DocumentError], exc: BaseException
) -> JSONObject:
    """What an ingest that failed with ``exc`` left in the library, per item: a
    document whose stored text is the one given counts as ingested (its index entries
    may be missing: the next check repairs them), any other is an error naming it."""
    ingested = characters = 0
    errors: list[JSONValue] = []
    for item in items:
        if isinstance(item, DocumentError):
            errors.append({"source": item.source, "message": item.message})
        elif stored_as_given(library, item.id, item.text):
            ingested += 1
            characters += len(item.text)
        else:
            errors.append({"source": item.id, "message": f"not stored: {exc}"})
    return {
        "ingested": ingested,
        "replaced": 0,
        "characters": characters,
        "errors": errors,
        "warnings": [f"the ingest stopped early ({exc}); the counts are what was stored"],
    }


@shared_task(name="yinji.ingest.ingest_uploads", **TASK_OPTIONS)
def ingest_uploads(
    self: Task, uploads: list[UploadRef], engine: str | None = None, book_mode: str = "works"
) -> JSONObject:
    """Add or replace the mothers in uploaded files (``workers.spool`` references: the
    message carries no text). Each file is read by ``tracker.documents.readers``, whole books
    by the book rule of ``book_mode`` (``workers.book_uploads``: ``auto``, ``book`` or
    ``works``, as ``yinji ingest``, ``--book`` and ``--as-works``); the result's
    ``books`` lists the books made. A file or item that cannot be read is an entry of
    ``errors`` and the others go on. The files are deleted when the task has finished
    (also when it failed for good)."""
    mode = book_mode_of(book_mode)
    return with_uploads(self, uploads, lambda: _ingest_uploads(self, uploads, engine, mode))


def with_uploads(task: Task, uploads: list[UploadRef], work: Callable[[], T]) -> T:
    """``once(task, work)``, then delete the uploads. A network error keeps them: the
    task is retried and needs them again."""
    spool = Spool(app_settings(task.app).data_dir)
    try:
        result = once(task, work)
    except NETWORK_ERRORS:
        raise
    except BaseException:
        spool.delete(uploads)
        raise
    spool.delete(uploads)
    return result


def _ingest_uploads(
    task: Task, uploads: list[UploadRef], engine: str | None, mode: BookMode
) -> dict[str, Any]:
    spool = Spool(app_settings(task.app).data_dir)
    progress = Progress(task, total=len(uploads))
    progress.start()
    library = rt(task).library
    books = UploadBooks(library, mode)

    def documents() -> Iterator[Document | DocumentError]:
        for i, ref in enumerate(uploads):
            yield from books.documents(spool, ref)
            progress(i + 1)

    report = library.ingest(documents(), engine=engine, batch_size=32)
    made = [made_json(m) for m in books.finish(report)]
    return {**report.to_dict(), "books": made, "files": len(uploads), "total": len(uploads)}
