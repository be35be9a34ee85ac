"""The core of the case workflow (``CaseCore``): reading cases, the one way a case
changes (``update``: its events appended to the hash-chained history and mirrored into
the evidence log), state moves, notes and opening a case; the names every part of the
service shares (``PageCopy``, ``case_id_for``, ``check_who``). ``CaseService``
(``tracker.cases.service``) adds filing and verdicts, ``merging`` the book cases,
``sender`` the rights holder's profile and the platforms."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tracker.common.records import JSONObject, Match
from tracker.common.rules import check_note, normalize_domain, site_of

from .grouping import host_of
from .model import (
    ACTIVE_STATES,
    Case,
    CaseError,
    CaseEvent,
    ConcurrentUpdate,
    check_state,
    check_transition,
    now,
)
from .store import CaseStore

if TYPE_CHECKING:
    from tracker.plumbing.config import Settings
    from tracker.store import Store


log = logging.getLogger(__name__)

PROFILE_KEY = "profile"
MERGED_KEY = "migrations.book_cases"  # set once every active case was grouped by book
MERGE_WHO = "system:merge"
MERGE_SAMPLE = 7  # mothers of a case read to tell its book
MAX_WHO = 200
MAX_ATTACHMENTS = 20


def check_who(who: object) -> str:
    if not isinstance(who, str) or not who.strip():
        raise CaseError(f"who must be a non-empty name, got {who!r}")
    if len(who) > MAX_WHO:
        raise CaseError(f"who longer than {MAX_WHO} characters")
    return who.strip()


def case_id_for(work: str, domain: str, generation: int = 1) -> str:
    """Deterministic ids: a redelivered task files into the same case, never a twin."""
    base = (
        "c" + hashlib.sha1(f"{work}\x1f{domain}".encode(), usedforsecurity=False).hexdigest()[:10]
    )
    return base if generation == 1 else f"{base}-{generation}"


@dataclass(frozen=True)
class PageCopy:
    """One fetched page (or a submitted text's URL) that copies a mother: what
    ``CaseService.file_pages`` files. A chapter a site splits over pages is one
    ``PageCopy`` per page, each with its own suspect (its own capture and figures)."""

    url: str
    suspect_id: str
    mother_id: str
    score: float = 0.0
    coverage: float = 0.0
    page: int = 0  # the page of the chapter on the site (1, 2, ...); 0: not known
    label: str = ""  # the page's own title
    fetched: bool = True  # False: a submitted text's URL, never fetched ("unverified")
    mother_title: str = ""
    match_id: str = ""


@dataclass
class VerdictResult:
    match: Match
    case: Case | None
    message: str

    def to_dict(self) -> JSONObject:
        return {
            "suspect_id": self.match.suspect_id,
            "mother_id": self.match.mother_id,
            "verdict": self.match.verdict,
            "note": self.match.note,
            "case_id": self.case.id if self.case else None,
            "case_state": self.case.state if self.case else None,
            "message": self.message,
        }


class CaseCore:
    """Cases over one ``CaseStore``: reading, the one way to change a case (``update``:
    its events appended and mirrored), state moves, opening; ``settings`` lets events
    reach the evidence log. ``tracker.cases.service.CaseService`` is the whole service."""

    def __init__(self, store: CaseStore, settings: Settings | None = None) -> None:
        from .evidence_link import EvidenceLink

        self.store = store
        self.settings = settings
        self.evidence = EvidenceLink(settings)
        self.listeners: list[Callable[[Case, CaseEvent], None]] = []

    def close(self) -> None:
        """Close the evidence log this service opened (the store is the caller's)."""
        self.evidence.close()

    # --- reading ----------------------------------------------------------------------
    def get(self, case_id: str) -> Case:
        return self.store.get_case(case_id)

    def list_cases(
        self, *, state: str | None = None, domain: str | None = None, work: str | None = None
    ) -> list[Case]:
        states = [check_state(state)] if state else None
        wanted = normalize_domain(domain) if domain else None
        if wanted is None or host_of(wanted) != wanted:
            return self.store.list_cases(states=states, domain=wanted, work=work)
        # A host names its sites on every port too (127.0.0.1 → 127.0.0.1:8001).
        return [
            c
            for c in self.store.list_cases(states=states, work=work)
            if c.domain == wanted or host_of(c.domain) == wanted
        ]

    def history(self, case_id: str) -> list[CaseEvent]:
        self.store.get_case(case_id)  # NotFound for an unknown id
        return self.store.list_events(case_id)

    def active_case(self, work: str, domain: str) -> Case | None:
        for cid in reversed(self.store.case_ids_for(work, domain)):
            case = self.store.get_case(cid)
            if case.state in ACTIVE_STATES:
                return case
        return None

    def active_cases_on(self, domain: str) -> list[Case]:
        """The cases of ``domain`` that are not closed."""
        return self.store.list_cases(states=list(ACTIVE_STATES), domain=normalize_domain(domain))

    def case_holding(self, url: str, domain: str | None = None) -> Case | None:
        """The active case that holds ``url`` (one URL, one open case: verdicts, book
        runs and the web file into it rather than open another). ``domain`` is the
        site (default: the URL's); cases stored with the host alone are looked at too."""
        domain = normalize_domain(domain) if domain else site_of(url)
        if not url or not domain:
            return None
        sites = dict.fromkeys([domain, host_of(domain)])
        for site in sites:
            for c in self.active_cases_on(site):
                if c.url(url) is not None:
                    return c
        return None

    def report_references(self, url: str) -> tuple[str | None, str | None]:
        """(case id, latest notice number) an evidence report of the page at ``url``
        names: the active case holding it and the reference of its latest notice."""
        case = self.case_holding(url) if url else None
        if case is None:
            return None, None
        notices = [
            e.data.get("reference")
            for e in self.store.list_events(case.id)
            if e.kind == "notice" and isinstance(e.data.get("reference"), str)
        ]
        return case.id, (notices[-1] if notices else None)

    def case_for_match(
        self, url: str, mother_id: str, domain: str, work_key: str | None = None
    ) -> Case | None:
        """Where a confirmed match of ``mother_id`` at ``url`` belongs when a case exists
        already: the active case holding the URL, else the active case of the book
        (``work_key``) or work on that site."""
        held = self.case_holding(url, domain)
        if held is not None:
            return held
        return self.active_case(work_key or mother_id, normalize_domain(domain))

    # --- writing ----------------------------------------------------------------------
    def _emit(self, case: Case, events: Sequence[CaseEvent]) -> None:
        for ev in events:
            try:
                ref = self.evidence.case_event(case, ev)
            except Exception as exc:  # the case history keeps the event regardless
                log.warning("evidence log refused event %s/%s: %s", case.id, ev.seq, exc)
            else:
                if ref:
                    ev.evidence_ref = ref
                    self.store.set_evidence_ref(case.id, ev.seq, ref)
            for listener in self.listeners:
                try:
                    listener(case, ev)
                except Exception as exc:  # an alert that fails must not undo the change
                    log.warning("case listener failed on %s: %s", case.id, exc)

    def update(self, case_id: str, change: Callable[[Case], list[CaseEvent]]) -> Case:
        """Apply ``change`` (which mutates the case and returns the events describing
        it) with optimistic concurrency: on a concurrent write, re-read and re-apply."""
        for _attempt in range(20):
            case = self.store.get_case(case_id)
            version = case.version
            events = change(case)
            if not events:
                return case
            case.updated_at = now()
            try:
                saved = self.store.update_case(case, version, events)
            except ConcurrentUpdate:
                continue
            self._emit(saved, events)
            return saved
        raise ConcurrentUpdate(f"case {case_id}: too many concurrent updates")

    def state_event(
        self, case: Case, to_state: str, who: str, note: str, data: JSONObject | None = None
    ) -> CaseEvent:
        """Move ``case`` (in memory) to ``to_state`` and return the event saying so;
        IllegalTransition when the state machine forbids it. For ``update`` callbacks."""
        check_transition(case.id, case.state, to_state)
        at = now()
        event = CaseEvent(
            case_id=case.id,
            kind="transition",
            who=who,
            note=note,
            from_state=case.state,
            to_state=to_state,
            data=data or {},
            at=at,
        )
        case.state = to_state
        case.state_changed_at = at
        if to_state == "notice_sent" and case.notice_sent_at is None:
            case.notice_sent_at = at
        if to_state == "removed":
            case.removed_at = at
        return event

    def transition(
        self,
        case_id: str,
        to_state: str,
        *,
        who: str,
        note: str = "",
        data: JSONObject | None = None,
    ) -> Case:
        """Move a case to ``to_state`` (IllegalTransition when the machine forbids it)."""
        who = check_who(who)
        note = check_note(note) or ""
        check_state(to_state)
        return self.update(case_id, lambda c: [self.state_event(c, to_state, who, note, data)])

    def mark_sent(
        self,
        case_id: str,
        *,
        who: str,
        note: str = "",
        data: JSONObject | None = None,
        matches: Store | None = None,
    ) -> Case:
        """The notice went out (sent by SMTP or by the user). From ``notice_sent`` it
        records another notice (a reminder) without changing the state. With
        ``matches`` (the library's store), a case without any confirmed URL is refused
        (``NoConfirmedURL``): no notice may name an unconfirmed match."""
        who = check_who(who)
        note = check_note(note) or ""
        if matches is not None:
            self.require_confirmed(matches, case_id)

        def change(case: Case) -> list[CaseEvent]:
            if case.state == "notice_sent":
                again, sent = "notice_sent", {"action": "sent", **(data or {})}
                return [CaseEvent(case.id, "notice", who, note, again, again, sent)]
            return [self.state_event(case, "notice_sent", who, note, {"notice": data or {}})]

        return self.update(case_id, change)

    def require_confirmed(self, matches: Store, case_id: str) -> list[str]:
        """The case's URLs whose match is confirmed; ``NoConfirmedURL`` when none."""
        from .facts import NoConfirmedURL, confirmed_match

        case = self.get(case_id)
        confirmed = [
            u.url
            for u in case.urls
            if confirmed_match(matches, u.suspect_id, u.mother_id or case.work) is not None
        ]
        if not confirmed:
            raise NoConfirmedURL(
                f"case {case.id}: no URL with a confirmed match, so no notice can have gone "
                "out for it (confirm the matches first: `yinji verdict SUSPECT_ID MOTHER_ID "
                "confirmed` or 确认 in the web app)"
            )
        return confirmed

    def add_note(self, case_id: str, note: str, *, who: str) -> Case:
        who = check_who(who)
        text = check_note(note)
        if not text:
            raise CaseError("note must not be empty")
        return self.update(case_id, lambda c: [CaseEvent(c.id, "note", who, text)])

    def record(
        self, case_id: str, kind: str, *, who: str, note: str = "", data: JSONObject
    ) -> Case:
        """Append an event without changing the case (a notice generated, ...)."""
        who = check_who(who)
        return self.update(case_id, lambda c: [CaseEvent(c.id, kind, who, note, data=data)])

    # --- filing matches -----------------------------------------------------------------
    def open_case(
        self,
        *,
        work: str,
        domain: str,
        who: str,
        work_title: str = "",
        kind: str = "page",
        note: str = "",
        metadata: JSONObject | None = None,
    ) -> Case:
        """The active case of (work, site), opened when there is none."""
        who = check_who(who)
        domain = normalize_domain(domain)
        if not work or not domain:
            raise CaseError("a case needs a work and a domain")
        for _attempt in range(20):
            found = self.active_case(work, domain)
            if found is not None:
                return found
            generation = len(self.store.case_ids_for(work, domain)) + 1
            case = Case(
                id=case_id_for(work, domain, generation),
                work=work,
                domain=domain,
                work_title=work_title,
                kind=kind,  # type: ignore[arg-type]
                metadata=metadata or {},
            )
            event = CaseEvent(case.id, "created", who, note, None, "open", {"kind": kind})
            if self.store.create_case(case, [event]):
                self._emit(case, [event])
                return case
        raise ConcurrentUpdate(f"could not open a case for {work!r} on {domain}")
