"""Ingest tasks (queue ``ingest``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from celery import Task, shared_task

from tracker.documents import Document, DocumentError
from workers.app import app_settings
from workers.payloads import documents_from_items, upload_documents
from workers.spool import Spool
from workers.tasks._base import NETWORK_ERRORS, TASK_OPTIONS, Progress, once, rt


@shared_task(name="yinji.ingest.ingest_batch", **TASK_OPTIONS)
def ingest_batch(self: Task, documents: list[dict[str, Any]], engine: str | None = None) -> dict:
    """Add or replace mothers (``{id, title?, text, metadata?}``) like ``yinji ingest``.

    Idempotent: a mother is stored by its id (a second run replaces it with itself and
    moves its index postings to the new version). Invalid items are reported in
    ``errors`` and skipped."""
    return once(self, lambda: _ingest(self, documents, engine))


def _ingest(task: Task, documents: list[dict[str, Any]], engine: str | None) -> dict:
    items = documents_from_items(list(documents))
    progress = Progress(task, total=len(items))
    progress.start()
    report = rt(task).library.ingest(items, engine=engine, batch_size=32, progress=progress)
    return {**report.to_dict(), "total": len(items)}


@shared_task(name="yinji.ingest.ingest_uploads", **TASK_OPTIONS)
def ingest_uploads(self: Task, uploads: list[dict[str, Any]], engine: str | None = None) -> dict:
    """Add or replace the mothers in uploaded files (``workers.spool`` references: the
    message carries no text). Each file is read by ``tracker.documents``; a file or
    item that cannot be read is an entry of ``errors`` and the others go on. The files
    are deleted when the task has finished (also when it failed for good)."""
    return with_uploads(self, uploads, lambda: _ingest_uploads(self, uploads, engine))


def with_uploads(task: Task, uploads: list[dict[str, Any]], work: Any) -> Any:
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


def _ingest_uploads(task: Task, uploads: list[dict[str, Any]], engine: str | None) -> dict:
    spool = Spool(app_settings(task.app).data_dir)
    progress = Progress(task, total=len(uploads))
    progress.start()

    def documents() -> Iterator[Document | DocumentError]:
        for i, ref in enumerate(uploads):
            yield from upload_documents(spool, ref)
            progress(i + 1)

    report = rt(task).library.ingest(documents(), engine=engine, batch_size=32)
    return {**report.to_dict(), "files": len(uploads), "total": len(uploads)}
