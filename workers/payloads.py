"""Job payloads (JSON) to tracker records, with the validation the job API and the
tasks share. Ids are deterministic so a repeated job writes the same rows again."""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import urlsplit

from tracker.documents import Document, DocumentError
from tracker.store import Suspect

MAX_URL_LENGTH = 4096


def sha1_hex(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def suspect_id_for(text: str, url: str = "") -> str:
    """The id of a suspect given without one: sha1 of its URL (as the crawler names a
    crawled page, so a pasted page and the crawled page are one suspect), else
    ``text-`` + sha1 of its text."""
    return sha1_hex(url) if url else "text-" + sha1_hex(text)


def text_item_error(item: Any) -> str | None:
    """Why a ``{id?, title?, text, url?}`` item is invalid, or None."""
    if not isinstance(item, dict):
        return "expected an object with 'text'"
    text = item.get("text")
    if not isinstance(text, str) or not text.strip():
        return "'text' must be a non-empty string"
    for key in ("id", "title", "url"):
        value = item.get(key)
        if value is not None and not isinstance(value, str | int):
            return f"'{key}' must be a string"
    if item.get("id") is not None and not str(item["id"]).strip():
        return "'id' must not be empty"
    return None


def suspect_from_item(item: dict[str, Any]) -> Suspect:
    text = item["text"]
    url = str(item.get("url") or "").strip()
    suspect_id = str(item.get("id") or "").strip() or suspect_id_for(text, url)
    return Suspect(
        id=suspect_id,
        text=text,
        title=str(item.get("title") or ""),
        url=url,
        source="text",
    )


def document_error(item: Any) -> str | None:
    """Why an ingest item ``{id, title?, text, metadata?}`` is invalid, or None."""
    if not isinstance(item, dict):
        return "expected an object with 'id' and 'text'"
    doc_id = item.get("id")
    if not isinstance(doc_id, str | int) or isinstance(doc_id, bool) or not str(doc_id).strip():
        return "'id' must be a non-empty string"
    text = item.get("text")
    if not isinstance(text, str) or not text.strip():
        return "'text' must be a non-empty string"
    if item.get("title") is not None and not isinstance(item["title"], str):
        return "'title' must be a string"
    if item.get("metadata") is not None and not isinstance(item["metadata"], dict):
        return "'metadata' must be an object"
    return None


def documents_from_items(items: list[Any]) -> list[Document | DocumentError]:
    out: list[Document | DocumentError] = []
    for i, item in enumerate(items):
        problem = document_error(item)
        source = f"documents[{i}]"
        if problem:
            out.append(DocumentError(source, problem))
            continue
        # Keys besides id/title/text/metadata are kept as metadata, as the .jsonl reader does.
        metadata = dict(item.get("metadata") or {})
        metadata.update(
            {k: v for k, v in item.items() if k not in ("id", "title", "text", "metadata")}
        )
        text = item["text"]
        out.append(
            Document(
                id=str(item["id"]).strip(),
                text=text,
                title=item.get("title") or text.strip().splitlines()[0][:80],
                source=str(item.get("source") or source),
                metadata=metadata,
            )
        )
    return out


def url_error(url: Any) -> str | None:
    """Why ``url`` cannot be crawled at all (the crawler's SSRF guard checks the rest)."""
    if not isinstance(url, str) or not url.strip():
        return "expected a non-empty URL string"
    if len(url) > MAX_URL_LENGTH:
        return f"URL longer than {MAX_URL_LENGTH} characters"
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:
        return f"invalid URL ({exc})"
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return "only http:// and https:// URLs with a host can be crawled"
    return None


def unique(values: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for v in values:
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out
