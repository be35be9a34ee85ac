"""The demo's story (``yinji demo``): its works imported first, each suspect text
received on its day, checked five minutes later, and the verdicts given now through the
case workflow. The texts and their days come from the caller (``web/demo``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from tracker.cases import CaseService
from tracker.common.records import NotFound, Suspect
from tracker.documents.readers import Document
from tracker.library import Library


@dataclass(frozen=True)
class DemoSuspect:
    """One suspect page of the demo: its text, where it was, ``days_ago`` it was
    received, and the verdict (and note) its matches get."""

    id: str
    text: str
    title: str
    url: str
    days_ago: int = 0
    verdict: str | None = None
    note: str = ""


@dataclass(frozen=True)
class DemoLoaded:
    works: int
    suspects: int
    matches: int


def tell_demo_story(
    library: Library,
    cases: CaseService,
    works: list[Document],
    suspects: list[DemoSuspect],
    *,
    now: datetime,
    who: str,
) -> DemoLoaded:
    """Import ``works`` (back-dated two days before the oldest suspect), store and
    check each suspect with the story's times, and give their matches their verdict
    as ``who``. Idempotent: run again, it finds what it stored."""
    imported_at = now - timedelta(days=max((s.days_ago for s in suspects), default=0) + 2)
    store = library.store
    report = library.ingest(works)
    # Back-date the import: the store keeps the time given; the index is derived from
    # the store again after it.
    for doc in works:
        mother = store.get_mother(doc.id)
        if mother.ingested_at > imported_at:
            store.put_mother(replace(mother, ingested_at=imported_at))
    library.rebuild_index()
    found = 0
    for item in suspects:
        received = now - timedelta(days=item.days_ago, hours=len(item.text) % 7)
        checked = received + timedelta(minutes=5)
        suspect = Suspect(
            id=item.id,
            text=item.text,
            title=item.title,
            url=item.url,
            fetched_at=received,  # for a text handed in: when it was received
            source="demo",
        )
        # Checked without saving, then stored with the story's times: the analytics
        # page shows matches over several days, each after its work was imported.
        result = library.check_suspect(suspect, save=False)
        suspect.checked_at = checked
        for m in result.matches:
            m.created_at = checked
        store.put_suspect(suspect)
        store.put_matches(suspect.id, result.matches)
        found += len(result.matches)
        for m in result.matches:
            try:
                stored = store.get_match(m.id)
            except NotFound:
                continue
            if item.verdict and stored.verdict != item.verdict:
                cases.apply_verdict(
                    store, m.suspect_id, m.mother_id, item.verdict, who=who, note=item.note
                )
    return DemoLoaded(works=report.ingested, suspects=len(suspects), matches=found)
