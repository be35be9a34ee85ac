"""Ingest tasks (queue ``ingest``)."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task

from workers.payloads import documents_from_items
from workers.tasks._base import TASK_OPTIONS, Progress, once, rt


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
