"""The case workflow: every change the CLI, the web routes and the Celery tasks make to
cases goes through ``CaseService`` (commands stay thin).

- ``apply_verdict`` sets a match's verdict in the library's store and files a confirmed
  match into the case of its work and domain (opening one when needed); withdrawing a
  confirmation takes the URL out of an open case again.
- ``sync`` files every confirmed match that has no case yet (matches confirmed through
  a path that did not call ``apply_verdict``).
- ``transition`` / ``mark_sent`` move a case through the state machine of
  ``tracker.cases.model``; illegal moves raise ``IllegalTransition``.
- Each change is appended to the case's hash-chained history and mirrored into the
  evidence log of ``tracker.evidence`` (see ``tracker.cases.evidence_link``); verdicts
  given here are ``verdict`` records of that log.
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tracker.records import ChapterRef, JSONObject, Match, MatchQuery, NotFound, Suspect, match_id
from tracker.rules import check_note, check_verdict, normalize_domain, site_of

from .grouping import book_of, host_of, url_order
from .model import (
    ACTIVE_STATES,
    STATES,
    Attachment,
    Case,
    CaseError,
    CaseEvent,
    CaseURL,
    ConcurrentUpdate,
    Profile,
    check_state,
    check_transition,
    iso,
    now,
)
from .store import CaseStore

if TYPE_CHECKING:
    from tracker.config import Settings
    from tracker.store import Store

    from .platforms import Platform

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


class CaseService:
    """Cases over one ``CaseStore``; ``settings`` lets events reach the evidence log."""

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

    def file_match(
        self, match: Match, *, who: str, note: str = "", matches: Store | None = None
    ) -> Case | None:
        """Put a confirmed match's URL into the case of its book (or work) on its site;
        None when the match has no URL (a pasted text has no page to take down). With
        ``matches`` (the library's store) the mother's book, chapter and the page's
        number and origin are read from the records; a submitted text's URL enters the
        case ``unverified`` (Yinji never fetched it).

        A suspect whose text was assembled from a chapter's pages (discovery's Legado
        stage: ``metadata.pages``, the first page's URL its own) files one URL per page,
        each page numbered; the figures are the chapter's, which notices state as
        "pages 1–N together" (``tracker.cases.facts``), and each page is re-checked
        on its own (``tracker.cases.recheck``)."""
        if not match.suspect_url:
            return None
        suspect = _suspect_of(matches, match.suspect_id)
        urls = _pages_of(suspect, match.suspect_url)
        pages = [
            PageCopy(
                url=url,
                suspect_id=match.suspect_id,
                mother_id=match.mother_id,
                score=match.score,
                coverage=match.coverage,
                page=n if len(urls) > 1 else _page_of(suspect),
                label=suspect.title if suspect is not None else "",
                fetched=_fetched(suspect),
                mother_title=match.mother_title,
                match_id=match.id,
            )
            for n, url in enumerate(urls, 1)
        ]
        filed = self.file_pages(pages, who=who, note=note, matches=matches)
        return filed[0] if filed else None

    def file_pages(
        self,
        pages: Sequence[PageCopy],
        *,
        who: str,
        note: str = "",
        matches: Store | None = None,
        kind: str | None = None,
        loose_key: str | None = None,
    ) -> list[Case]:
        """File pages that copy the library, each its own URL: every page joins the
        case of its mother's book (``tracker.cases.grouping.book_of``; a mother
        outside any book: its own work, or ``loose_key`` when given: a book run keeps
        the pirate book's pages of works in no book together) on its site (host and
        port), opened when there is none; per-chapter cases of that book on that site
        are merged into it first (``merge_book``). A URL an open case already holds
        stays there (one URL, one open case). The case's URLs are kept in chapter
        order, then page order. Returns the cases holding the pages (each once, in the
        order of ``pages``).

        This is the one way pages reach cases: verdicts (``file_match``), a book run
        (``tracker.cases.books.monitor_book``) and discovery, which gives one
        ``PageCopy`` per page it fetched (a chapter over two pages: two)."""
        who = check_who(who)
        groups: dict[tuple[str, str], list[tuple[PageCopy, ChapterRef | None]]] = {}
        for page in pages:
            site = site_of(page.url)
            if not site:
                continue
            book = book_of(matches, page.mother_id)
            key = book.book_id if book is not None else (loose_key or page.mother_id)
            groups.setdefault((key, site), []).append((page, book))
        out: list[Case] = []
        for (key, site), members in groups.items():
            book = next((b for _, b in members if b is not None), None)
            case = self._case_for_pages(key, site, book, members, who, note, matches, kind)
            holding = [self.case_holding(p.url, site) for p, _ in members]
            for c in [*holding, case]:  # the case of each page: this one or an earlier one
                if c is not None and all(x.id != c.id for x in out):
                    out.append(c)
        return out

    def _case_for_pages(
        self,
        key: str,
        site: str,
        book: ChapterRef | None,
        members: list[tuple[PageCopy, ChapterRef | None]],
        who: str,
        note: str,
        matches: Store | None,
        kind: str | None,
    ) -> Case | None:
        title = (
            book.book_title
            if book is not None
            else next((p.mother_title for p, _ in members if p.mother_id == key), "")
            or members[0][0].mother_title
        )
        case = self.merge_book(key, site, matches=matches) if book is not None else None
        todo: list[tuple[PageCopy, ChapterRef | None]] = []
        for page, ref in members:
            held = self.case_holding(page.url, site)
            if held is not None and held.work != key:
                continue  # another work's open case holds the URL: it stays there
            if held is not None and case is None:
                case = held
            todo.append((page, ref))
        if not todo:
            return case
        if case is None:
            case = self.active_case(key, site)
        if case is None:
            meta: JSONObject = {}
            if book is not None and book.author:
                meta["author"] = book.author
            case = self.open_case(
                work=key,
                domain=site,
                who=who,
                work_title=title,
                kind=kind or ("book" if book is not None else "page"),
                metadata=meta,
            )

        def change(c: Case) -> list[CaseEvent]:
            events: list[CaseEvent] = []
            if not c.work_title and title:
                c.work_title = title
            if book is not None:
                c.kind = "book"
                if book.book_title and c.work_title != book.book_title:
                    c.work_title = book.book_title  # the book's current title (renamed)
                if book.author:
                    c.metadata["author"] = book.author
            for page, ref in todo:
                if page.mother_id not in c.mother_ids:
                    c.mother_ids.append(page.mother_id)
                if c.url(page.url) is not None:
                    continue
                url = CaseURL(
                    url=page.url,
                    suspect_id=page.suspect_id,
                    mother_id=page.mother_id,
                    score=page.score,
                    coverage=page.coverage,
                    status="online" if page.fetched else "unverified",
                    label=page.label,
                    chapter=ref.chapter if ref is not None else "",
                    chapter_index=ref.chapter_index if ref is not None else None,
                    page=page.page,
                )
                c.urls.append(url)
                events.append(_url_event(c, page, who, note))
            c.urls.sort(key=url_order)
            return events

        return self.update(case.id, change)

    # --- one case per book and site -----------------------------------------------------
    def book_key_of(self, case: Case, matches: Store | None, cache: dict[str, str]) -> str:
        """The book the case's mothers belong to (most of a sample of them: a book
        case's chapters share one), else the case's own work key (a case of works in
        no book keeps its key)."""
        if matches is None:
            return case.work
        ids = case.mother_ids or [case.work]
        step = max(1, len(ids) // MERGE_SAMPLE)
        keys: Counter[str] = Counter()
        for mid in ids[::step][:MERGE_SAMPLE]:
            if mid not in cache:
                ref = book_of(matches, mid)
                cache[mid] = ref.book_id if ref is not None else ""
            if cache[mid]:
                keys[cache[mid]] += 1
        return keys.most_common(1)[0][0] if keys else case.work

    @staticmethod
    def site_of_case(case: Case) -> str:
        """The site of most of the case's URLs (a case stored before sites had ports
        names the host only), else its domain."""
        sites = Counter(s for u in case.urls if (s := site_of(u.url)))
        return sites.most_common(1)[0][0] if sites else case.domain

    @staticmethod
    def _book_named(key: str, cases: Sequence[Case], matches: Store | None) -> ChapterRef | None:
        """The book ``key`` as a sample of the cases' mothers states it (title, author)."""
        for c in cases:
            ids = c.mother_ids
            for mid in ids[:: max(1, len(ids) // MERGE_SAMPLE)][:MERGE_SAMPLE]:
                ref = book_of(matches, mid)
                if ref is not None and ref.book_id == key:
                    return ref
        return None

    def merge_book(
        self, key: str, site: str, *, matches: Store | None, who: str = MERGE_WHO
    ) -> Case | None:
        """The one active case of the book (or work) ``key`` on ``site`` after every
        other active case of it there was merged into it; None when there is none.

        The case kept is the one already keyed to ``key`` (else the first with a notice
        sent, else the oldest); it takes ``key``, ``site`` and the book's title. Each
        other case's URLs (with their re-check status), works and history move into it
        (every event carried over as a ``merged`` event holding the original, hash
        included, then one ``merged`` event naming the case), and the other case is
        closed with ``metadata.merged_into`` pointing at the kept case."""
        who = check_who(who)
        site = normalize_domain(site)
        candidates = {c.id: c for c in self.active_cases_on(site)}
        host = host_of(site)
        if host != site:  # cases stored before sites had ports: the host alone
            for c in self.active_cases_on(host):
                if self.site_of_case(c) == site:
                    candidates[c.id] = c
        cache: dict[str, str] = {}
        members = [
            c
            for c in candidates.values()
            if c.work == key or self.book_key_of(c, matches, cache) == key
        ]
        if not members:
            return None
        members.sort(key=lambda c: (c.work != key, c.notice_sent_at is None, c.created_at, c.id))
        target, others = members[0], members[1:]
        book = self._book_named(key, members, matches)
        stale = target.work != key or target.domain != site
        if book is not None:
            stale = stale or target.work_title != book.book_title or target.kind != "book"
        fills = _chapter_fills([target, *others], matches) if book is not None else {}
        stale = stale or any(target.url(url) is not None for url in fills)
        if not others and not stale:
            return target
        carried = {o.id: self.store.list_events(o.id) for o in others}

        def change(c: Case) -> list[CaseEvent]:
            events: list[CaseEvent] = []
            done = [str(x) for x in c.metadata.get("merged_from") or []]
            if c.work != key or c.domain != site:
                events.append(
                    CaseEvent(
                        c.id,
                        "note",
                        who,
                        f"重新归组 / regrouped: {c.work} @ {c.domain} → {key} @ {site}",
                        data={"regrouped": {"work": [c.work, key], "domain": [c.domain, site]}},
                    )
                )
                c.work, c.domain = key, site
            if book is not None:
                c.kind = "book"
                c.work_title = book.book_title
                if book.author:
                    c.metadata["author"] = book.author
            for o in others:
                if o.id in done:
                    continue
                for ev in carried[o.id]:
                    events.append(
                        CaseEvent(
                            c.id,
                            "merged",
                            ev.who,
                            ev.note,
                            ev.from_state,
                            ev.to_state,
                            data={"from_case": o.id, "event": ev.to_dict()},
                        )
                    )
                moved = [u for u in o.urls if c.url(u.url) is None]
                c.urls.extend(moved)
                c.mother_ids.extend(m for m in o.mother_ids if m not in c.mother_ids)
                for name in ("platform", "book", "author"):
                    if name in o.metadata and name not in c.metadata:
                        c.metadata[name] = o.metadata[name]
                if o.notice_sent_at is not None and (
                    c.notice_sent_at is None or o.notice_sent_at < c.notice_sent_at
                ):
                    c.notice_sent_at = o.notice_sent_at
                done.append(o.id)
                events.append(
                    CaseEvent(
                        c.id,
                        "merged",
                        who,
                        f"案件 {o.id} 并入本案 / case {o.id} merged into this case",
                        data={
                            "merged_case": o.id,
                            "work": o.work,
                            "state": o.state,
                            "urls": [u.url for u in moved],
                            "events": len(carried[o.id]),
                        },
                    )
                )
            for u in c.urls:
                if u.url in fills and u.chapter_index is None and not u.chapter:
                    u.chapter, u.chapter_index = fills[u.url]
            if done:
                c.metadata["merged_from"] = done
            c.urls.sort(key=url_order)
            if not events and stale:
                events.append(
                    CaseEvent(c.id, "note", who, "按书籍整理 / grouped by book", data={"book": key})
                )
            return events

        kept = self.update(target.id, change)

        def close(c: Case) -> list[CaseEvent]:
            if c.state == "closed":
                return []
            c.metadata["merged_into"] = kept.id
            note = f"并入案件 {kept.id} / merged into case {kept.id}"
            return [self.state_event(c, "closed", who, note, {"merged_into": kept.id})]

        for o in others:
            self.update(o.id, close)
        return kept

    def merge_book_cases(self, matches: Store, *, who: str = MERGE_WHO) -> list[Case]:
        """Group every active case by book and site (the migration of cases opened per
        chapter, run once by ``sync`` and by ``yinji case merge-books``): returns the
        cases kept that changed."""
        cache: dict[str, str] = {}
        groups: dict[tuple[str, str], list[Case]] = {}
        for c in self.store.list_cases(states=list(ACTIVE_STATES)):
            key = self.book_key_of(c, matches, cache)
            groups.setdefault((key, self.site_of_case(c)), []).append(c)
        out = []
        for (key, site), members in groups.items():
            before = {c.id: c.version for c in members}
            kept = self.merge_book(key, site, matches=matches, who=who)
            if kept is not None and (len(members) > 1 or before.get(kept.id) != kept.version):
                out.append(kept)
        self.store.set_meta(MERGED_KEY, {"at": iso(now()), "kept": [c.id for c in out]})
        return out

    def unfile_match(self, match: Match, *, who: str, note: str = "") -> Case | None:
        """A confirmation withdrawn: drop the URL from the active case that holds it
        while no notice has gone out; an open case left without URLs is closed."""
        domain = site_of(match.suspect_url)
        if not match.suspect_url or not domain:
            return None
        case = self.case_holding(match.suspect_url, domain)
        if case is None:
            return None
        # Every page the match's suspect was read from (a chapter over pages).
        urls = {
            u.url
            for u in case.urls
            if u.suspect_id == match.suspect_id and u.mother_id == match.mother_id
        }
        urls.add(match.suspect_url)
        if case.state != "open":
            # A notice named this URL: the history must say so; a person decides.
            self.record(
                case.id,
                "note",
                who=who,
                note=note or "verdict withdrawn after a notice was sent",
                data={"url": match.suspect_url, "verdict": match.verdict},
            )
            return self.get(case.id)

        def change(c: Case) -> list[CaseEvent]:
            gone = [u.url for u in c.urls if u.url in urls]
            if not gone:
                return []
            c.urls = [u for u in c.urls if u.url not in urls]
            events = [
                CaseEvent(
                    c.id, "url_removed", who, note, data={"url": url, "verdict": match.verdict}
                )
                for url in gone
            ]
            if not c.urls:
                events.append(
                    self.state_event(
                        c, "closed", who, "案件中已无确认的网址 / no confirmed URL left in the case"
                    )
                )
            return events

        return self.update(case.id, change)

    def apply_verdict(
        self,
        matches: Store,
        suspect_id: str,
        mother_id: str,
        verdict: str,
        *,
        who: str,
        note: str | None = None,
    ) -> VerdictResult:
        """Set the verdict of the match (suspect, mother) in the library's store and
        keep the cases in step. NotFound for an unknown match."""
        verdict = check_verdict(verdict)
        note = check_note(note)
        who = check_who(who)
        mid = match_id(suspect_id, mother_id)
        before = matches.get_match(mid)  # NotFound for an unknown pair
        match = matches.set_verdict(mid, verdict, note)
        try:
            self.evidence.verdict(suspect_id, mother_id, verdict, note, who)
        except Exception as exc:
            log.warning("evidence log refused the verdict on %s: %s", mid, exc)
        case: Case | None = None
        if verdict == "confirmed":
            case = self.file_match(match, who=who, note=note or "", matches=matches)
            message = (
                f"confirmed; case {case.id} ({case.state})"
                if case
                else "confirmed; the suspect has no URL, so no case was opened"
            )
        else:
            if before.verdict == "confirmed":
                case = self.unfile_match(match, who=who, note=note or "")
            message = f"{verdict}" + (f"; case {case.id} ({case.state})" if case else "")
        return VerdictResult(match, case, message)

    def sync(self, matches: Store, *, who: str = "system:sync", page: int = 500) -> int:
        """File every confirmed match with a URL that no case holds yet; returns how
        many URLs were added. The first run also groups the cases opened before, one
        per chapter, into one case per book and site (``merge_book_cases``)."""
        if self.store.get_meta(MERGED_KEY) is None:
            self.merge_book_cases(matches, who=MERGE_WHO)
        added = 0
        held = {u.url for c in self.store.list_cases() for u in c.urls}  # one URL, one case
        offset = 0
        while True:
            batch = matches.query_matches(
                MatchQuery(verdict="confirmed", sort="created_at", offset=offset, limit=page)
            )
            for m in batch:
                filed = m.suspect_url and m.suspect_url not in held
                if filed and self.file_match(m, who=who, matches=matches):
                    held.add(m.suspect_url)
                    added += 1
            if len(batch) < page:
                return added
            offset += page

    # --- platforms -------------------------------------------------------------------------
    def platforms(self) -> list[Platform]:
        """The platform registry (``tracker.cases.platforms``) with the data folder's
        ``platforms.json`` applied."""
        from .platforms import load_platforms

        return load_platforms(self.settings.data_dir if self.settings else None)

    def platform_of(self, case: Case) -> Platform | None:
        """The case's platform: the one chosen for it (``metadata.platform``), else the
        registry's platform serving its domain; None when the registry has none."""
        from .platforms import platform_for

        known = self.platforms()
        chosen = case.metadata.get("platform")
        if isinstance(chosen, str):
            found = next((p for p in known if p.id == chosen), None)
            if found is not None:
                return found
        return platform_for(host_of(case.domain), known)

    def set_platform(self, case_id: str, platform_id: str | None, *, who: str) -> Case:
        """Choose the case's platform by registry id (None or "": back to the domain's)."""
        who = check_who(who)
        if platform_id:
            ids = [p.id for p in self.platforms()]
            if platform_id not in ids:
                raise CaseError(
                    f"unknown platform {platform_id!r}; the registry has: {', '.join(ids)}"
                )

        def change(c: Case) -> list[CaseEvent]:
            if (c.metadata.get("platform") or None) == (platform_id or None):
                return []
            if platform_id:
                c.metadata["platform"] = platform_id
            else:
                c.metadata.pop("platform", None)
            note = f"platform: {platform_id or 'by domain'}"
            return [CaseEvent(c.id, "note", who, note, data={"platform": platform_id or None})]

        return self.update(case_id, change)

    # --- the rights holder ----------------------------------------------------------------
    def profile(self) -> Profile:
        return Profile.from_dict(self.store.get_meta(PROFILE_KEY))

    def set_profile(self, *, who: str = "", **fields: str | None) -> Profile:
        """Change the given fields (None: keep) of the rights-holder profile."""
        allowed = {"name", "contact", "email", "phone", "address"}
        unknown = set(fields) - allowed
        if unknown:
            raise CaseError(f"unknown profile field(s): {', '.join(sorted(unknown))}")
        profile = self.profile()
        for key, value in fields.items():
            if value is None:
                continue
            if not isinstance(value, str) or len(value) > 2000:
                raise CaseError(f"profile {key} must be text of at most 2000 characters")
            if key == "email" and value.strip() and "@" not in value:
                raise CaseError(f"profile email is not an e-mail address: {value!r}")
            setattr(profile, key, value.strip())
        profile.updated_at = now()
        self.store.set_meta(PROFILE_KEY, profile.to_dict())
        return profile

    def add_attachment(self, name: str, data: bytes, content_type: str | None = None) -> Profile:
        """Add (or replace, by file name) a proof-of-ownership file."""
        name = name.replace("\\", "/").rsplit("/", 1)[-1].strip()
        if not name or any(ord(ch) < 0x20 for ch in name):
            raise CaseError(f"attachment needs a plain file name, got {name!r}")
        if not data:
            raise CaseError(f"attachment {name} is empty")
        profile = self.profile()
        others = [a for a in profile.attachments if a.name != name]
        if len(others) >= MAX_ATTACHMENTS:
            raise CaseError(f"at most {MAX_ATTACHMENTS} attachments")
        try:
            key = self.store.put_blob(data)
        except ValueError as exc:
            raise CaseError(f"attachment {name}: {exc}") from None
        ctype = content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
        profile.attachments = [*others, Attachment(name, key, len(data), ctype)]
        profile.updated_at = now()
        self.store.set_meta(PROFILE_KEY, profile.to_dict())
        return profile

    def remove_attachment(self, name: str) -> Profile:
        profile = self.profile()
        kept = [a for a in profile.attachments if a.name != name]
        if len(kept) == len(profile.attachments):
            raise CaseError(f"no attachment named {name!r}")
        profile.attachments = kept
        profile.updated_at = now()
        self.store.set_meta(PROFILE_KEY, profile.to_dict())
        return profile

    def attachment_files(self, profile: Profile | None = None) -> list[tuple[str, bytes, str]]:
        """(file name, bytes, content type) of each proof-of-ownership file."""
        out = []
        for a in (profile or self.profile()).attachments:
            try:
                out.append((a.name, self.store.get_blob(a.sha256), a.content_type))
            except NotFound:
                log.warning("attachment %s (%s) is missing from the blob store", a.name, a.sha256)
        return out

    # --- batches --------------------------------------------------------------------------
    def batch(self, case_ids: Iterable[str]) -> list[Case]:
        """The cases of one notice: at least one, all on one domain (one platform)."""
        cases = [self.get(cid) for cid in dict.fromkeys(case_ids)]
        if not cases:
            raise CaseError("name at least one case")
        domains = sorted({c.domain for c in cases})
        if len(domains) > 1:
            raise CaseError(
                f"a notice goes to one platform; these cases are on {', '.join(domains)}"
            )
        closed = [c.id for c in cases if c.state == "closed"]
        if closed:
            raise CaseError(f"closed case(s) cannot be noticed: {', '.join(closed)}")
        return cases


def _suspect_of(matches: Store | None, suspect_id: str) -> Suspect | None:
    if matches is None or not suspect_id:
        return None
    try:
        return matches.get_suspect(suspect_id)
    except (NotFound, KeyError):
        return None


def _page_of(suspect: Suspect | None) -> int:
    """The page of its chapter a suspect was (a book run or discovery records
    ``page``); 0 when not recorded."""
    value = (suspect.metadata or {}).get("page") if suspect is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _pages_of(suspect: Suspect | None, url: str) -> list[str]:
    """The URLs of the pages a suspect's text was read from, when it was assembled
    from several (``metadata.pages``, the first being the suspect's own URL); else
    ``[url]``."""
    pages = (suspect.metadata or {}).get("pages") if suspect is not None else None
    if not isinstance(pages, list) or len(pages) < 2 or pages[0] != url:
        return [url]
    return list(dict.fromkeys(str(p) for p in pages if isinstance(p, str) and p))


def _fetched(suspect: Suspect | None) -> bool:
    """Whether Yinji fetched the suspect's page (False: a text handed in with a URL)."""
    if suspect is None:
        return True  # unknown: as the match says, a page
    from tracker.reports.data import FETCHED_SOURCES

    meta = suspect.metadata or {}
    return suspect.source in FETCHED_SOURCES or bool(suspect.raw) or "final_url" in meta


def _url_event(c: Case, page: PageCopy, who: str, note: str) -> CaseEvent:
    data: JSONObject = {"url": page.url, "suspect_id": page.suspect_id}
    data["mother_id"] = page.mother_id
    if page.match_id:
        data["match_id"] = page.match_id
    if page.page:
        data["page"] = page.page
    if not page.fetched:
        data["unverified"] = True
    return CaseEvent(c.id, "url_added", who, note, data=data)


def _chapter_fills(
    cases: Sequence[Case], matches: Store | None
) -> dict[str, tuple[str, int | None]]:
    """URL → (chapter, chapter index) for each URL of ``cases`` that names no chapter
    yet while its mother's book does (cases filed before books)."""
    out: dict[str, tuple[str, int | None]] = {}
    for case in cases:
        for u in case.urls:
            if u.chapter_index is None and not u.chapter:
                ref = book_of(matches, u.mother_id or case.work)
                if ref is not None and (ref.chapter or ref.chapter_index is not None):
                    out[u.url] = (ref.chapter, ref.chapter_index)
    return out


def summary_counts(cases: Iterable[Case]) -> dict[str, int]:
    counts = dict.fromkeys(STATES, 0)
    for c in cases:
        counts[c.state] += 1
    return counts
