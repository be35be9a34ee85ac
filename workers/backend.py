"""The result backend's Redis as the job API, the heartbeats and the tasks share it: its
client, the keys of job records and reports, the stored state of tasks, and letting go
of results just sent. Imports nothing of ``workers`` but ``workers.app``, so every
other module may use it (no import circle)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, TypedDict

from celery import Celery, states

from tracker.common.records import JSONValue
from workers.app import app_settings

if TYPE_CHECKING:
    from redis import Redis

log = logging.getLogger(__name__)


class TaskMeta(TypedDict, total=False):
    """What the result backend stores of a task (``status``: a Celery state or
    ``PROGRESS``; ``result``: its JSON result, progress meta or error)."""

    status: str
    result: JSONValue | BaseException


def backend_client(app: Celery) -> Redis[bytes]:
    """The redis-py client of ``app``'s result backend (a plain Redis server)."""
    client: Redis[bytes] = app.backend.client
    return client


def job_key(app: Celery, job_id: str) -> str:
    """The key of a job's record (``workers.submit``)."""
    return f"{app_settings(app).redis_prefix}:job:{job_id}"


def report_key(prefix: str, task_id: str) -> str:
    """Where a report task keeps the bytes of its report."""
    return f"{prefix}:report:{task_id}"


def task_metas(app: Celery, ids: list[str]) -> dict[str, TaskMeta]:
    """The backend's meta of each task (one round trip); PENDING when it has none."""
    backend = app.backend
    values = backend.mget([backend.get_key_for_task(t) for t in ids]) if ids else []
    out: dict[str, TaskMeta] = {}
    for task_id, value in zip(ids, values, strict=True):
        meta: TaskMeta = (
            backend.decode_result(value)
            if value is not None
            else {"status": states.PENDING, "result": None}
        )
        out[task_id] = meta
    return out


def release(sent: object) -> None:
    """Stop listening for the results of tasks just sent (``job_status`` reads them
    from the backend): Celery subscribes to each one's channel until its AsyncResult
    is collected, and one collected after Redis went away would try to unsubscribe
    then. Never raises."""
    for result in getattr(sent, "results", None) or [sent]:
        try:
            result.backend.remove_pending_result(result)
        except Exception as exc:
            log.debug("result %s not released: %s", getattr(result, "id", "?"), exc)
