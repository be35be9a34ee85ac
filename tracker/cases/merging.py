"""One case per book and site (issue #36): a case's book read from its works, and
cases of one book on one site merged into one with their history kept
(``BookMerging``, a part of ``tracker.cases.service.CaseService``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tracker.common.records import ChapterRef
from tracker.common.rules import normalize_domain, site_of

from .core import MERGE_SAMPLE, MERGE_WHO, MERGED_KEY, CaseCore, check_who
from .grouping import book_of, host_of, url_order
from .model import (
    ACTIVE_STATES,
    Case,
    CaseEvent,
    iso,
    now,
)

if TYPE_CHECKING:
    from tracker.store import Store


class BookMerging(CaseCore):
    """Cases grouped by book and site."""

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
