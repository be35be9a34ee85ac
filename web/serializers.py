"""The JSON shapes of the REST API and of the job payloads the web app sends: one
module, so a record looks the same in every answer."""

from __future__ import annotations

from tracker.books.model import Book
from tracker.cases import Case, CaseEvent
from tracker.cases.platforms import Platform
from tracker.common.records import JSONObject
from tracker.common.timefmt import iso_utc
from tracker.documents.readers import Document
from tracker.services.results import NO_BOOK
from tracker.store import Match, Mother

from .ids import encode_id


# --- JSON shapes ------------------------------------------------------------------------
def match_json(m: Match, *, passages: bool = True) -> JSONObject:
    out: JSONObject = {
        "id": m.id,
        "ref": encode_id(m.id),
        "suspect_id": m.suspect_id,
        "mother_id": m.mother_id,
        "mother_title": m.mother_title,
        "suspect_title": m.suspect_title,
        "suspect_url": m.suspect_url,
        "domain": m.domain,
        "score": m.score,
        "coverage": m.coverage,
        "mother_coverage": m.mother_coverage,
        "engine": m.engine,
        "verdict": m.verdict,
        "note": m.note,
        "created_at": iso_utc(m.created_at),
        "updated_at": iso_utc(m.updated_at),
    }
    if passages:
        out["passages"] = [p.to_dict() for p in m.passages]
        out["regions"] = [r.to_dict() for r in m.regions]
    else:
        out["passage_count"] = len(m.passages)
    # The book the work is a chapter of (``web.books.named`` sets it), as in
    # ``check --json``: null fields for a work in no book.
    out.update(m.book.to_dict() if m.book is not None else NO_BOOK)
    return out


def book_json(book: Book, *, chapters: bool = True) -> JSONObject:
    """A book in the shape of ``yinji book show --json`` (``chapters``: the list of
    ``{index, title, work_id, characters}``) or, without ``chapters``, of ``book list
    --json`` (``chapters``: their number); the model writes its time as every time of
    the API (``tracker.common.timefmt.iso_utc``)."""
    return book.to_dict() if chapters else book.summary()


def mother_json(m: Mother, *, text: bool = False) -> JSONObject:
    """A work; its text only with ``text`` (listings leave it out)."""
    out: JSONObject = {
        "id": m.id,
        "title": m.title,
        "source": m.source,
        "characters": m.chars,
        "ingested_at": iso_utc(m.ingested_at),
        "metadata": m.metadata,
    }
    if text:
        out["text"] = m.text
    return out


def document_dict(doc: Document) -> JSONObject:
    """A document as an ingest job item (``tracker.common.rules.check_document_item``)."""
    return {
        "id": doc.id,
        "title": doc.title,
        "text": doc.text,
        "source": doc.source,
        "metadata": doc.metadata,
    }


def case_json(case: Case) -> JSONObject:
    """A takedown case: exactly the shape of ``yinji case list --json``
    (``tracker.cases.Case.to_dict``: id, state, kind, work, work_title, mother_ids,
    domain, urls, url_details, times, metadata, version)."""
    return case.to_dict()


def case_detail_json(
    case: Case, events: list[CaseEvent], platform: Platform | None = None
) -> JSONObject:
    """A case with its platform (``tracker.cases.platforms.Platform`` or None) and its
    history, as ``yinji case show --json`` prints it."""
    from tracker.cases.model import verify_chain

    out: JSONObject = case.to_dict()
    out["platform"] = platform.to_dict() if platform is not None else None
    out["history"] = [e.to_dict() for e in events]
    out["history_problems"] = verify_chain(events)
    return out
