"""Job payloads (JSON) to tracker records. What a valid item is, is decided by
``tracker.rules`` (the same rules as the web forms and the REST API). Ids are
deterministic so a repeated job writes the same rows again."""

from __future__ import annotations

import hashlib
from typing import Any

from tracker.documents import Document, DocumentError
from tracker.rules import check_document_item, check_text_item
from tracker.store import Suspect


def sha1_hex(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def suspect_id_for(text: str, url: str = "") -> str:
    """The id of a suspect given without one: sha1 of its URL (as the crawler names a
    crawled page, so a pasted page and the crawled page are one suspect), else
    ``text-`` + sha1 of its text."""
    return sha1_hex(url) if url else "text-" + sha1_hex(text)


def suspect_from_item(item: Any, where: str = "") -> Suspect:
    """A text item (``tracker.rules.check_text_item``) as a suspect; ``ValueError``
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


def documents_from_items(items: list[Any]) -> list[Document | DocumentError]:
    """Ingest items (``tracker.rules.check_document_item``) as documents; a bad item
    becomes a ``DocumentError`` naming it, and the rest go on."""
    out: list[Document | DocumentError] = []
    for i, item in enumerate(items):
        where = f"documents[{i}]"
        try:
            out.append(Document(**check_document_item(item, where)))
        except ValueError as exc:
            out.append(DocumentError(where, str(exc).removeprefix(f"{where}: ")))
    return out


def unique(values: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for v in values:
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out
