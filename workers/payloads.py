"""Job payloads (JSON) to tracker records. What a valid item is, is decided by
``tracker.common.rules`` (the same rules as the web forms and the REST API). Ids are
deterministic so a repeated job writes the same rows again."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from tracker.common.rules import check_document_item, check_text_item
from tracker.documents.readers import BookReader, Document, DocumentError, read_path
from tracker.store import Suspect
from workers.spool import Spool, UploadError, UploadRef


def sha1_hex(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def suspect_id_for(text: str, url: str = "") -> str:
    """The id of a suspect given without one: sha1 of its URL (as the crawler names a
    crawled page, so a pasted page and the crawled page are one suspect), else
    ``text-`` + sha1 of its text."""
    return sha1_hex(url) if url else "text-" + sha1_hex(text)


def suspect_from_item(item: object, where: str = "") -> Suspect:
    """A text item (``tracker.common.rules.check_text_item``) as a suspect; ``ValueError``
    naming ``where`` when it is invalid."""
    clean = check_text_item(item, where)
    url = clean.get("url", "")
    return Suspect(
        id=clean.get("id") or suspect_id_for(clean["text"], url),
        text=clean["text"],
        title=clean.get("title", ""),
        url=url,
        source="text",
    )


def documents_from_items(items: list[object]) -> list[Document | DocumentError]:
    """Ingest items (``tracker.common.rules.check_document_item``) as documents; a bad item
    becomes a ``DocumentError`` naming it, and the rest go on."""
    out: list[Document | DocumentError] = []
    for i, item in enumerate(items):
        where = f"documents[{i}]"
        try:
            out.append(Document(**check_document_item(item, where)))
        except ValueError as exc:
            out.append(DocumentError(where, str(exc).removeprefix(f"{where}: ")))
    return out


def upload_documents(
    spool: Spool, ref: UploadRef, books: BookReader | None = None
) -> Iterator[Document | DocumentError]:
    """The documents of one upload (``workers.spool``): a file read by
    ``tracker.documents.readers.read_path`` (its type from the client's file name; a .jsonl
    line by line and a .zip member by member, within the archive's expansion budget;
    whole books by ``books``, ``workers.book_uploads``), or spooled ingest items.
    Nothing raises: a missing or changed file, or any failure of the reader, is a
    ``DocumentError`` naming the file, after the documents read before it."""
    name = str(ref.get("name") or "upload") if isinstance(ref, dict) else "upload"
    count = 0
    try:
        if ref.get("format") == "items":
            for i, item in enumerate(spool.iter_items(ref)):
                where = f"documents[{i}]"
                try:
                    doc = Document(**check_document_item(item, where))
                except ValueError as exc:
                    yield DocumentError(where, str(exc).removeprefix(f"{where}: "))
                    continue
                count += 1
                yield doc
            return
        for read in read_path(spool.verified_path(ref), name, books=books):
            if not isinstance(read, DocumentError):
                count += 1
            yield read
    except UploadError as exc:
        yield DocumentError(name, str(exc).removeprefix(f"{name}: "))
    except (MemoryError, RecursionError, ValueError, LookupError, OSError, TypeError) as exc:
        # The readers report bad input per item; this is the last line of defence so
        # that one hostile file never sinks the other files of the job.
        after = f" after {count} documents" if count else ""
        yield DocumentError(name, f"could not be read{after} ({type(exc).__name__}: {exc})"[:500])


def text_item(doc: Document, url: str = "") -> dict[str, str]:
    """A document as a check job's text item (``tracker.common.rules.check_text_item``)."""
    item: dict[str, str] = {"title": doc.title, "text": doc.text}
    if doc.id:
        item["id"] = doc.id
    url = url or str((doc.metadata or {}).get("url") or "")
    if url:
        item["url"] = url
    return item


def upload_suspects(spool: Spool, ref: UploadRef) -> Iterator[Suspect | DocumentError]:
    """The suspects of one upload. A file's documents become text items as the check
    form made them (id: the file's stem; title; the URL a .jsonl line gives); spooled
    items are text items. Bad ones are ``DocumentError`` values naming them."""
    name = str(ref.get("name") or "upload") if isinstance(ref, dict) else "upload"
    if isinstance(ref, dict) and ref.get("format") == "items":
        try:
            for i, item in enumerate(spool.iter_items(ref)):
                where = f"texts[{i}]"
                try:
                    yield suspect_from_item(item, where)
                except ValueError as exc:
                    yield DocumentError(where, str(exc).removeprefix(f"{where}: "))
        except (UploadError, ValueError, OSError, RecursionError, MemoryError) as exc:
            yield DocumentError(name, str(exc).removeprefix(f"{name}: "))
        return
    for doc in upload_documents(spool, ref):
        if isinstance(doc, DocumentError):
            yield doc
            continue
        where = doc.source or name
        try:
            yield suspect_from_item(text_item(doc), where)
        except ValueError as exc:
            yield DocumentError(where, str(exc).removeprefix(f"{where}: "))


def unique(values: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for v in values:
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out
