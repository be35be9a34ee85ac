"""The orphan reaper as a beat task (``workers.heartbeat``): every worker runs it too,
from its heartbeat thread; the beat's run covers installations whose workers all
consume only some queues."""

from __future__ import annotations

from celery import Task, shared_task

from workers.heartbeat import reap_orphans as reap


@shared_task(name="yinji.workers.reap_orphans", bind=True, acks_late=False, ignore_result=True)
def reap_orphans(self: Task) -> dict[str, list[str] | bool]:
    """Re-queue (or fail, with the reason) the tasks of workers without a heartbeat."""
    return reap(self.app).to_dict()
