"""Evidence reports (queue ``reports``)."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task

from tracker.common.records import JSONObject
from workers.app import app_settings, worker_settings
from workers.backend import backend_client, report_key
from workers.payloads import sha1_hex
from workers.tasks._base import TASK_OPTIONS, Progress, once, rt

CONTENT_TYPES = {
    "json": "application/json; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "pdf": "application/pdf",
}


@shared_task(name="yinji.reports.build_report", **TASK_OPTIONS)
def build_report(self: Task, match_id: str, fmt: str) -> JSONObject:
    """Build the evidence report of a match (``tracker.reports.build_report``).

    The bytes go to the result backend's Redis under ``<prefix>:report:<task id>`` for
    ``YINJI_RESULT_EXPIRES`` seconds (``workers.jobs.report_content`` reads them); the
    task's JSON result describes them."""
    return once(self, lambda: _build(self, match_id, fmt))


def _build(task: Task, match_id: str, fmt: str) -> dict[str, Any]:
    # Imported here: the module is the web side's, and only this task needs it.
    from tracker.reports import build_report as render

    progress = Progress(task, total=1)
    progress.start()
    try:
        library = rt(task).library
        try:  # the capture's fetch time and the check's, as the web's report has them
            log = library.evidence_log()
        except Exception:  # no log (a read-only folder, a key that cannot be read)
            log = None
        data = render(library, match_id, fmt, evidence=log)
    except KeyError:
        # Unknown match: permanent, say so plainly (NotFound is a KeyError).
        raise ValueError(f"unknown match {match_id!r}") from None
    settings = app_settings(task.app)
    backend_client(task.app).set(
        report_key(settings.redis_prefix, task.request.id),
        data,
        ex=worker_settings(task.app).result_expires,
    )
    return {
        "match_id": match_id,
        "format": fmt,
        "size": len(data),
        "content_type": CONTENT_TYPES.get(fmt, "application/octet-stream"),
        "filename": f"yinji-report-{sha1_hex(match_id)[:12]}.{fmt}",
        "total": 1,
    }
