"""The alerts background tasks send, made from the library's matches: the new matches
of a check (``match.new``) and the daily digest (``tracker.cases.alerts``)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from tracker.common.records import MatchQuery, NotFound

if TYPE_CHECKING:
    from tracker.cases import CaseService
    from tracker.cases.alerts import Alerter, Delivery, Digest
    from tracker.library import Library


def new_match_ids(
    library: Library,
    suspect_ids: Iterable[str] | None,
    *,
    since: datetime,
    min_score: float,
    limit: int,
) -> list[str]:
    """The ids of the matches created since ``since`` of ``suspect_ids`` (None: of any
    suspect) scoring at least ``min_score``, the best first, at most ``limit``."""
    found: dict[str, float] = {}
    wanted: list[str | None] = [None] if suspect_ids is None else list(dict.fromkeys(suspect_ids))
    for suspect_id in wanted:
        if suspect_ids is not None and not suspect_id:
            continue
        query = MatchQuery(
            suspect_id=suspect_id, since=since, min_score=min_score, sort="-score", limit=limit
        )
        for m in library.store.query_matches(query):
            found[m.id] = m.score
    return sorted(found, key=lambda mid: -found[mid])[:limit]


def alert_new_matches(
    library: Library, alerter: Alerter, match_ids: Iterable[str]
) -> tuple[int, list[Delivery]]:
    """The ``match.new`` alert for those of ``match_ids`` still stored (each naming its
    book and chapter): how many there were, and the deliveries."""
    store = library.store
    matches = []
    for mid in dict.fromkeys(match_ids):
        try:
            matches.append(store.get_match(mid))
        except NotFound:  # deleted since the check: nothing to say about it
            continue
    return len(matches), alerter.new_matches(matches, store)


def digest(library: Library, cases: CaseService, hours: int) -> Digest:
    """The daily digest of the last ``hours`` (``tracker.cases.alerts.digest_data``)."""
    from tracker.cases.alerts import digest_data

    return digest_data(cases, library.store, hours=hours)
