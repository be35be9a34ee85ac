"""The job API: what the CLI, the REST API and the web pages call to start background
work and to follow it. Everything in and out is JSON-shaped. This module gathers it;
each part lives in a module of its own: ``workers.submit`` (submitting),
``workers.status`` and ``workers.results`` (following), ``workers.health`` (can the
queue take work) and ``workers.inprocess`` (a worker in this process when there is
none).

A job is one or more Celery tasks under one id. Submitting writes a job record
(``<prefix>:job:<id>`` in the result backend's Redis, kept ``YINJI_RESULT_EXPIRES``
seconds) and sends the tasks; ``job_status`` reads the record and the tasks' states,
following fan-out tasks (``check_urls``, ``crawl_site``) down to their children, so the
progress of a URL job is the share of its URLs done, whichever workers did them.

``job_status(id)`` returns::

    {"id": str, "kind": "check|ingest|report|rebuild|recheck|discover"|None (not submitted here),
     "state": "PENDING|STARTED|PROGRESS|SUCCESS|FAILURE|RETRY",
     "progress": float 0..1, "done": int|None, "total": int|None,
     "result": JSON or None (set when the job has finished), "error": str|None}

Results by kind:

- check: ``{"results": [{"suspect_id", "title", "url", "matches": [{"mother_id",
  "title", "score", "coverage", "passages": [...]}], "text_sha256", "warnings": [...],
  "noise": [...]}], "skipped": [{"source", "url"?, "final_url"?, "reason"}],
  "errors": [{"source", "error"}]}`` (a result is ``CheckResult.to_json()`` with the
  title and URL). A URL that cannot be crawled (404, robots.txt, private address) or a
  file that cannot be read is an error entry, not a failed job; ``skipped`` holds
  near-duplicate pages and what the submitter passed over (an unsupported file, a bad
  URL line).
- ingest: ``{"ingested", "replaced", "characters", "seconds", "skipped": [{"source",
  "message"}], "errors": [{"source", "message"}], "warnings": [str], "books": [{"id",
  "title", "author", "chapters", "new", "replaced_chapters"}]}`` (``books``: the books
  made of whole-book files, ``workers.book_uploads``).

Uploaded files travel as references to ``<data dir>/uploads/`` (``workers.spool``),
and job items too large for a message (``INLINE_BYTES``) are spooled the same way: a
task message stays small whatever the size of the upload.
- report: ``{"match_id", "format", "size", "content_type", "filename"}``; the bytes come
  from ``report_content(job_id)``.
- rebuild: ``{"engine", "mothers", "seconds", "chunks", "refilled", "computed",
  "errors"}``: the mothers the load put in the index (and its seconds), and over the
  chunks (``workers.tasks.index``) the mothers whose fingerprints were found or made.
- recheck: ``{"rechecked", "results": [{"case_id", "before", "after", "checks": [...]}],
  "errors": [{"source", "error"}]}`` (``tracker.cases.recheck.RecheckResult``).

``job_status`` raises ``UnknownJob`` (a ``KeyError``) for an id that was never
submitted or has expired.
"""

from __future__ import annotations

from workers.app import get_celery
from workers.backend import release
from workers.health import durability_problem, missing_consumers, queue_health
from workers.inprocess import ensure_worker, stop_inprocess_worker, workers_answer
from workers.results import job_kind, job_summary
from workers.status import (
    JobStatus,
    UnknownJob,
    job_status,
    report_content,
)
from workers.submit import (
    RebuildRunning,
    check_chunks,
    submit_check,
    submit_discover,
    submit_ingest,
    submit_rebuild,
    submit_recheck,
    submit_report,
    submit_watch,
)

__all__ = [
    "JobStatus",
    "RebuildRunning",
    "UnknownJob",
    "check_chunks",
    "durability_problem",
    "ensure_worker",
    "get_celery",
    "job_kind",
    "job_status",
    "job_summary",
    "missing_consumers",
    "queue_health",
    "release",
    "report_content",
    "stop_inprocess_worker",
    "submit_check",
    "submit_discover",
    "submit_ingest",
    "submit_rebuild",
    "submit_recheck",
    "submit_report",
    "submit_watch",
    "workers_answer",
]
