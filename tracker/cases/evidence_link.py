"""Mirror the case workflow into the evidence log of ``tracker.evidence`` (issue 15).

Every case event that says what was done about a copy (state changes, notices
generated or sent, each re-crawl with the hash of the bytes served, URLs added to or
taken out of a case) becomes a ``case_state`` record of the suspect page it concerns,
and every verdict given through ``CaseService.apply_verdict`` a ``verdict`` record:
so the evidence bundle of a match carries what happened to it, under the log's signed
tree heads.

The case history itself (``case_events``, hash-chained) is always written first and
stays the workflow's record; the evidence log is opened lazily and, when it is missing
or cannot be opened (no key, unreadable key file), a warning is logged and the case
history alone records the change: a takedown must never be blocked by the log.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .model import Case, CaseEvent

if TYPE_CHECKING:
    from tracker.crawler.results import Page
    from tracker.plumbing.config import Settings

log = logging.getLogger(__name__)

_UNAVAILABLE = object()


def _state_of(ev: CaseEvent) -> str | None:
    """The ``case_state`` name an event is recorded under (None: not recorded)."""
    if ev.kind == "transition":
        return ev.to_state
    if ev.kind == "notice":
        return "notice_" + str(ev.data.get("action", "generated"))
    if ev.kind == "recheck":
        return f"recheck_{ev.data.get('outcome', 'unknown')}"
    if ev.kind in ("url_added", "url_removed"):
        return ev.kind
    return None


class EvidenceLink:
    """The evidence log beside ``settings``' library, opened on first use."""

    def __init__(self, settings: Settings | None) -> None:
        self.settings = settings
        self._log: Any = None

    def _open(self) -> Any | None:
        if self._log is _UNAVAILABLE or self.settings is None:
            return None
        if self._log is None:
            try:
                from tracker.evidence.log import EvidenceLog
            except ModuleNotFoundError as exc:
                if not (exc.name or "").startswith("tracker.evidence"):
                    log.warning("evidence log unavailable (%s): case history only", exc)
                self._log = _UNAVAILABLE
                return None
            try:
                self._log = EvidenceLog.from_settings(self.settings)
            except Exception as exc:  # a missing or bad key must not block a takedown
                log.warning("evidence log cannot be opened (%s): case history only", exc)
                self._log = _UNAVAILABLE
                return None
        return self._log

    def close(self) -> None:
        if self._log is not None and self._log is not _UNAVAILABLE:
            self._log.close()
        self._log = None

    def case_event(self, case: Case, ev: CaseEvent) -> str | None:
        """Record the event for each suspect page it concerns; returns the record
        indexes ("evidence:12,13") or None when nothing was recorded."""
        state = _state_of(ev)
        if state is None:
            return None
        url = ev.data.get("url")
        urls = [u for u in case.urls if u.url == url] if url else list(case.urls)
        if ev.kind == "url_removed" and not urls:  # the URL has just left the case
            urls_data = [(ev.data.get("suspect_id") or "", ev.data.get("mother_id") or case.work)]
        else:
            urls_data = [(u.suspect_id, u.mother_id or case.work) for u in urls]
        targets = [(s, m) for s, m in urls_data if s]
        evlog = self._open() if targets else None
        if evlog is None:
            return None
        detail = {
            "case_id": case.id,
            "domain": case.domain,
            "event_seq": ev.seq,
            "event_hash": ev.hash,
            "event_kind": ev.kind,
            "from_state": ev.from_state,
            "to_state": ev.to_state,
            "note": ev.note,
            "data": ev.data,
        }
        indexes = []
        for suspect_id, mother_id in targets:
            entry = evlog.record_case_state(
                suspect_id=suspect_id,
                mother_id=mother_id,
                state=state,
                detail=detail,
                by=ev.who,
                at=ev.at,
            )
            indexes.append(str(entry.index))
        return "evidence:" + ",".join(indexes)

    def capture(self, suspect_id: str, page: Page) -> str | None:
        """Record a re-crawled page (a ``tracker.crawler.Page``) as a capture of the
        suspect, as ``Page.to_capture`` makes it for any crawl: the bytes served,
        redirects, resolved IP, TLS certificate, headers, status, time, extracted text."""
        if not suspect_id:
            return None
        evlog = self._open()
        if evlog is None:
            return None
        from tracker.crawler.results import CRAWLER_VERSION

        # The crawler's own record of the fetch (redirects, IP, TLS, headers as sent,
        # whether the body was decoded): one rule for every capture, first crawl or not.
        capture = page.to_capture(
            evlog.blobs, suspect_id, crawler_version=f"{CRAWLER_VERSION} (case re-check)"
        )
        return f"evidence:{evlog.record_capture(capture).index}"

    def verdict(
        self, suspect_id: str, mother_id: str, verdict: str, note: str | None, by: str
    ) -> str | None:
        evlog = self._open()
        if evlog is None:
            return None
        entry = evlog.record_verdict(
            suspect_id=suspect_id, mother_id=mother_id, verdict=verdict, note=note, by=by
        )
        return f"evidence:{entry.index}"
