"""The beat schedule: four daily runs and two periodic ones, set by environment variables.

- ``YINJI_RECRAWL_AT`` (default ``03:00``): ``recrawl_watchlist`` re-crawls every active
  watch-list URL, site and book.
- ``YINJI_CHECK_MOTHERS_AT`` (default ``04:30``, after the re-crawl): ``check_new_mothers``
  checks the stored suspects again when works were ingested since its last run.
- ``YINJI_CASE_RECHECK_AT`` (default ``05:30``): ``recheck_cases`` re-crawls the URLs of
  every case with a notice sent, still online or removed (did the page go, did it come
  back?), moves the cases and sends the ``case.removed`` alerts.
- ``YINJI_DIGEST_AT`` (default ``07:00``, after the re-check): ``daily_digest`` sends the
  digest of the last 24 hours (new matches, cases by state, removals).
- At 02:15: ``audit_log`` recomputes the whole evidence log and sends the
  ``evidence.audit_failed`` alert when it disagrees with itself.

- ``YINJI_DISCOVER_AT`` (default ``02:00``): ``discover_daily`` runs discovery
  (``workers/tasks/discover.py``, ``docs/DISCOVERY.md``) within its budgets.

And one periodic run:

- ``YINJI_EVIDENCE_HEAD_MINUTES`` (default ``60``, 1 to 1440): ``publish_tree_head``
  signs a tree head of the evidence log when it has grown, timestamps it when
  ``YINJI_TSA_URL`` is set, and retries the timestamps still pending.
- ``YINJI_SNAPSHOT_MINUTES`` (default ``10``; ``0``: never): ``refresh_snapshots`` takes
  a new local copy of an index that changed since its last one (or has none while the
  library holds at least ``YINJI_SNAPSHOT_MIN_CHARS`` characters of text), so checks
  look it up locally again.

Times are in ``YINJI_TIMEZONE`` (default UTC). Run exactly one ``yinji beat``: two would
send every run twice (harmless, the tasks are idempotent per run, but wasted work).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from celery.schedules import crontab

from tracker.plumbing.config import WorkerSettings, env_int, env_time

#: Seconds between two reaper passes of a worker (``workers.heartbeat``); the beat sends
#: ``yinji.workers.reap_orphans`` every two of them.
REAP_INTERVAL = 10.0


@dataclass(frozen=True)
class CaseSchedule:
    """The daily times of the takedown runs (read with ``tracker.plumbing.config``'s strict
    parser: a value that is not ``HH:MM`` stops the process naming the variable)."""

    recheck_at: tuple[int, int] = (5, 30)
    digest_at: tuple[int, int] = (7, 0)

    @classmethod
    def from_env(cls) -> CaseSchedule:
        return cls(
            recheck_at=env_time("YINJI_CASE_RECHECK_AT", (5, 30)),
            digest_at=env_time("YINJI_DIGEST_AT", (7, 0)),
        )


@dataclass(frozen=True)
class EvidenceSchedule:
    """How often the evidence log's tree head is published (``tracker.plumbing.config``'s strict
    parser: a value that is not a whole number of minutes from 1 to 1440 stops the
    process naming the variable)."""

    head_minutes: int = 60

    @classmethod
    def from_env(cls) -> EvidenceSchedule:
        return cls(head_minutes=env_int("YINJI_EVIDENCE_HEAD_MINUTES", 60, minimum=1, maximum=1440))


def beat_schedule(
    ws: WorkerSettings | None = None,
    cs: CaseSchedule | None = None,
    es: EvidenceSchedule | None = None,
) -> dict[str, dict[str, object]]:
    ws = ws or WorkerSettings.from_env()
    cs = cs or CaseSchedule.from_env()
    es = es or EvidenceSchedule.from_env()
    recrawl_h, recrawl_m = ws.recrawl_at
    check_h, check_m = ws.check_mothers_at
    schedule: dict[str, dict[str, object]] = {
        "recrawl-watchlist": {
            "task": "yinji.crawl.recrawl_watchlist",
            "schedule": crontab(hour=recrawl_h, minute=recrawl_m),
        },
        "check-new-mothers": {
            "task": "yinji.check.check_new_mothers",
            "schedule": crontab(hour=check_h, minute=check_m),
        },
        "recheck-cases": {
            "task": "yinji.cases.recheck_cases",
            "schedule": crontab(hour=cs.recheck_at[0], minute=cs.recheck_at[1]),
        },
        "daily-digest": {
            "task": "yinji.cases.daily_digest",
            "schedule": crontab(hour=cs.digest_at[0], minute=cs.digest_at[1]),
        },
        "evidence-tree-head": {
            "task": "yinji.evidence.publish_tree_head",
            "schedule": timedelta(minutes=es.head_minutes),
        },
        "evidence-audit": {  # recompute the whole log, alert when it disagrees
            "task": "yinji.evidence.audit_log",
            "schedule": crontab(hour=2, minute=15),
        },
    }
    # Orphaned tasks (their worker died) re-queued or failed within a minute, whatever
    # the visibility timeout (workers.heartbeat; every worker also runs it).
    schedule["reap-orphans"] = {
        "task": "yinji.workers.reap_orphans",
        "schedule": timedelta(seconds=REAP_INTERVAL * 2),
        "options": {"expires": REAP_INTERVAL * 2},  # no pile-up while no worker runs
    }
    discover_h, discover_m = env_time("YINJI_DISCOVER_AT", (2, 0))
    schedule["discover-daily"] = {
        "task": "yinji.crawl.discover_daily",
        "schedule": crontab(hour=discover_h, minute=discover_m),
    }
    if ws.snapshot_minutes:
        schedule["refresh-snapshots"] = {
            "task": "yinji.index.refresh_snapshots",
            "schedule": timedelta(minutes=ws.snapshot_minutes),
        }
    return schedule
