"""What the daily re-checks take up: the suspects, checked again when works were
ingested since the last run (the run's time kept in the store's meta), and the takedown
cases whose state asks for a re-crawl (``tracker.cases.model.RECHECK_STATES``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from tracker.cases.model import RECHECK_STATES
from tracker.common.timefmt import iso_utc, parse_utc

if TYPE_CHECKING:
    from tracker.cases import CaseService
    from tracker.library import Library

#: Store meta: when the daily check of suspects against new works last started.
LAST_RUN_META = "workers:check_new_mothers:last_run"


@dataclass(frozen=True)
class NewMothers:
    """Works ingested since ``since`` (None: since the beginning), how many."""

    since: datetime | None
    count: int


def new_mothers(library: Library, since: str | None = None) -> NewMothers:
    """The works ingested since ``since`` (an ISO time), else since the last run
    (``mark_checked``); every work on the first run."""
    store = library.store
    raw = since if since is not None else store.get_meta(LAST_RUN_META)
    since_dt = parse_utc(raw) if isinstance(raw, str) and raw else None
    count = len(store.mothers_since(since_dt)) if since_dt else store.count_mothers()
    return NewMothers(since_dt, count)


def mark_checked(library: Library, started: datetime) -> None:
    """The daily check of suspects started at ``started`` (works ingested during the
    run count next time)."""
    library.store.set_meta(LAST_RUN_META, iso_utc(started))


def due_case_ids(cases: CaseService) -> list[str]:
    """The cases whose state asks for a re-check (notice sent, documents, still
    online, removed), as the daily re-check takes them."""
    return [c.id for c in cases.store.list_cases(states=list(RECHECK_STATES))]
