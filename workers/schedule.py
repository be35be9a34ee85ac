"""The beat schedule: two daily runs, at times set by environment variables.

- ``YINJI_RECRAWL_AT`` (default ``03:00``): ``recrawl_watchlist`` re-crawls every active
  watch-list URL and site.
- ``YINJI_CHECK_MOTHERS_AT`` (default ``04:30``, after the re-crawl): ``check_new_mothers``
  checks the stored suspects again when works were ingested since its last run.

Times are in ``YINJI_TIMEZONE`` (default UTC). Run exactly one ``yinji beat``: two would
send every run twice (harmless, the tasks are idempotent per run, but wasted work).
"""

from __future__ import annotations

from typing import Any

from celery.schedules import crontab

from tracker.config import WorkerSettings


def beat_schedule(ws: WorkerSettings | None = None) -> dict[str, dict[str, Any]]:
    ws = ws or WorkerSettings.from_env()
    recrawl_h, recrawl_m = ws.recrawl_at
    check_h, check_m = ws.check_mothers_at
    return {
        "recrawl-watchlist": {
            "task": "yinji.crawl.recrawl_watchlist",
            "schedule": crontab(hour=recrawl_h, minute=recrawl_m),
        },
        "check-new-mothers": {
            "task": "yinji.check.check_new_mothers",
            "schedule": crontab(hour=check_h, minute=check_m),
        },
    }
