"""Takedown tasks (queue ``cases``): removal checks of noticed cases, the daily digest
and the new-match alerts. Each calls ``tracker.cases`` (docs/TAKEDOWN.md); the business
rules stay there.

- ``recheck_cases(case_ids=None)``: re-crawl the URLs of the given cases, or (daily, on
  the beat schedule) of every case in a state that asks for it (notice sent, still
  online, removed), with the worker's crawler and library; a case that moves to
  ``removed`` sends the ``case.removed`` alert.
- ``daily_digest(hours=24)``: the digest of the last ``hours`` (``digest_data``),
  delivered by the configured alert channels.
- ``alert_new_matches(match_ids)``: the ``match.new`` alert for matches a check task
  has just stored. Check tasks call ``alert_new_matches_since`` after storing their
  results; it sends this task only when an alert channel is configured and a new match
  reaches ``YINJI_ALERT_MIN_SCORE``, so a check never waits on a slow webhook.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from celery import Task, shared_task

from tracker.common.records import JSONObject, NotFound
from tracker.services import alerting
from tracker.services.rechecks import due_case_ids
from workers.backend import release
from workers.tasks._base import TASK_OPTIONS, Progress, child_id, once, rt

log = logging.getLogger(__name__)

MAX_ALERTED = 500  # matches one new-match alert lists (the best first)


ALERT_TIMEOUT = 5.0  # seconds to connect to, and to read from, an alert receiver


def _alerter() -> Any:
    """The alerter of the environment (``YINJI_ALERT_*``, ``YINJI_SMTP_URL``), with short
    network timeouts (``ALERT_TIMEOUT``): its tasks run on the ``alerts`` queue, and a
    receiver that never answers must not hold a worker for long. A bad value raises
    ``SettingError`` naming the variable."""
    from tracker.cases.alerts import Alerter
    from tracker.cases.settings import CaseSettings

    return Alerter(CaseSettings.from_env(), timeout=ALERT_TIMEOUT)


# --- removal checks ----------------------------------------------------------------------
@shared_task(name="yinji.cases.recheck_cases", **TASK_OPTIONS)
def recheck_cases(self: Task, case_ids: list[str] | None = None) -> JSONObject:
    """Re-crawl the URLs of ``case_ids`` (default: every case whose state asks for a
    re-check) and move each case by what the pages show (``tracker.cases.recheck``).
    Result: ``{"rechecked", "results": [RecheckResult.to_dict()], "errors": [{"source",
    "error"}]}``; an unknown case id is an entry of ``errors``."""
    return once(self, lambda: _recheck(self, case_ids))


def _recheck(task: Task, case_ids: list[str] | None) -> dict[str, Any]:
    from tracker.cases.recheck import recheck_cases as recheck

    runtime = rt(task)
    svc = runtime.cases
    alerter = _alerter()
    ids = list(dict.fromkeys(case_ids)) if case_ids is not None else due_case_ids(svc)
    progress = Progress(task, total=len(ids))
    progress.start()
    results: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    for i, case_id in enumerate(ids):
        try:
            # One case at a time through the one re-check function, so that progress
            # shows and one unknown id does not stop the others.
            [result] = recheck(
                svc,
                crawler=runtime.crawler,
                library=runtime.library,
                case_ids=[case_id],
                on_removed=alerter.case_removed,
            )
        except NotFound:
            errors.append({"source": case_id, "error": f"no case {case_id!r}"})
        else:
            results.append(result.to_dict())
        progress(i + 1)
    moved = sum(1 for r in results if r["before"] != r["after"])
    log.info("re-checked %d case(s), %d changed state", len(results), moved)
    return {"rechecked": len(results), "results": results, "errors": errors, "total": len(ids)}


# --- the daily digest --------------------------------------------------------------------
@shared_task(name="yinji.cases.daily_digest", **TASK_OPTIONS)
def daily_digest(self: Task, hours: int = 24) -> JSONObject:
    """Build the digest of the last ``hours`` and deliver it on every configured alert
    channel (none configured: it is only the task's result). Result: ``{"digest",
    "deliveries": [{"channel", "event", "ok", "attempts", "error"}]}``."""
    return once(self, lambda: _digest(self, hours))


def _digest(task: Task, hours: int) -> dict[str, Any]:
    runtime = rt(task)
    progress = Progress(task, total=1)
    progress.start()
    digest = alerting.digest(runtime.library, runtime.cases, max(1, int(hours)))
    deliveries = _alerter().daily_digest(digest)
    return {"digest": digest, "deliveries": [d.to_dict() for d in deliveries], "total": 1}


# --- new-match alerts --------------------------------------------------------------------
@shared_task(name="yinji.cases.alert_new_matches", **TASK_OPTIONS)
def alert_new_matches(self: Task, match_ids: list[str]) -> JSONObject:
    """Send the ``match.new`` alert for these stored matches (those still stored and at
    or above ``YINJI_ALERT_MIN_SCORE``)."""
    return once(self, lambda: _alert(self, match_ids))


def _alert(task: Task, match_ids: list[str]) -> dict[str, Any]:
    count, deliveries = alerting.alert_new_matches(rt(task).library, _alerter(), match_ids)
    return {
        "matches": count,
        "deliveries": [d.to_dict() for d in deliveries],
        "total": 1,
    }


def alert_new_matches_since(
    task: Task, since: datetime, suspect_ids: Iterable[str] | None = None
) -> list[str]:
    """After a check task stored its results: the matches created since ``since`` (the
    task's start) of ``suspect_ids`` (None: of any suspect), at or above the alert
    threshold, go to one ``alert_new_matches`` task. A re-check that finds a match
    again keeps the match's first ``created_at``, so only new matches alert. Returns
    the ids sent (none when no alert channel is configured).

    A bad alert setting is logged and no alert is sent: the check's results are stored
    and must not be failed by it (``yinji worker`` refuses to start with one anyway)."""
    from tracker.plumbing.config import SettingError

    try:
        alerter = _alerter()
    except SettingError as exc:
        log.error("new-match alert not sent: %s", exc)
        return []
    if not alerter.enabled:
        return []
    ids = alerting.new_match_ids(
        rt(task).library,
        suspect_ids,
        since=since,
        min_score=alerter.settings.alert_min_score,
        limit=MAX_ALERTED,
    )
    if not ids:
        return []
    parent = task.request.id
    # Derived from the check task's id: a redelivered check sends the same alert task,
    # which its own guard then finds done.
    task_id = child_id(parent, "alert:new-matches") if parent else None
    release(
        task.app.send_task(
            "yinji.cases.alert_new_matches", args=[ids], task_id=task_id, add_to_parent=False
        )
    )
    return ids
