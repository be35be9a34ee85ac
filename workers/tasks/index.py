"""Index tasks (queue ``index``)."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task

from workers.tasks._base import TASK_OPTIONS, Progress, once, rt


@shared_task(name="yinji.index.rebuild_index", **TASK_OPTIONS)
def rebuild_index(self: Task, engine: str | None = None) -> dict[str, Any]:
    """Recreate an engine's index from the store (``yinji index rebuild``). Idempotent by
    nature: the index is cleared and rebuilt from the store, the source of truth."""
    return once(self, lambda: _rebuild(self, engine))


def _rebuild(task: Task, engine: str | None) -> dict[str, Any]:
    library = rt(task).library
    progress = Progress(task, total=library.store.count_mothers())
    progress.start()
    info = library.rebuild_index(engine, progress=progress)
    return {
        "engine": info.engine,
        "mothers": info.mothers,
        "seconds": round(info.seconds, 3),
        "total": info.mothers,
    }


@shared_task(name="yinji.index.refresh_snapshots", **TASK_OPTIONS)
def refresh_snapshots(self: Task) -> list[dict[str, Any]]:
    """A fresh local copy of each index that changed and is big enough
    (``Library.refresh_snapshots``; the beat sends it every ``YINJI_SNAPSHOT_MINUTES``)."""
    return rt(self).library.refresh_snapshots()
