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

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tracker.common.records import (
    ChapterRef,
    JSONObject,
    Match,
    MatchQuery,
    NotFound,
    Suspect,
    match_id,
)
from tracker.common.rules import check_note, check_verdict, site_of

from .grouping import book_of, url_order
from .model import (
    STATES,
    Case,
    CaseError,
    CaseEvent,
    CaseURL,
)

if TYPE_CHECKING:
    from tracker.store import Store


from .core import (
    MAX_WHO,
    MERGE_WHO,
    MERGED_KEY,
    PROFILE_KEY,
    CaseCore,
    PageCopy,
    VerdictResult,
    case_id_for,
    check_who,
)
from .merging import BookMerging
from .sender import SenderSetup

__all__ = [
    "MAX_WHO",
    "MERGED_KEY",
    "MERGE_WHO",
    "PROFILE_KEY",
    "CaseCore",
    "CaseService",
    "PageCopy",
    "VerdictResult",
    "case_id_for",
    "check_who",
    "summary_counts",
]

log = logging.getLogger(__name__)


class CaseService(BookMerging, SenderSetup):
    """Cases over one ``CaseStore``: the core (``tracker.cases.core``), filing matches
    and pages into the case of their book and site, verdicts, book cases merged
    (``merging``), the profile and platforms (``sender``)."""

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


def summary_counts(cases: Iterable[Case]) -> dict[str, int]:
    counts = dict.fromkeys(STATES, 0)
    for c in cases:
        counts[c.state] += 1
    return counts
