"""What the forms and the REST API read from a request: uploaded files, a pasted text,
a block of URLs. Shared by several blueprints, so it lives outside them."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from werkzeug.datastructures import FileStorage

from tracker.documents import Document, DocumentError, read_bytes
from tracker.rules import check_url, default_title

MAX_FILES = 500  # files of one upload
MAX_URLS = 1000  # URLs of one check
MAX_TITLE = 300
MAX_ID = 200


def new_id(prefix: str) -> str:
    return f"{prefix}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def read_uploads(files: list[FileStorage]) -> tuple[list[Document], list[DocumentError]]:
    """Documents in uploaded files. Zips go through ``tracker.documents``, which refuses
    absolute or ``..`` member paths, nested zips and zip bombs; bad files are errors."""
    docs: list[Document] = []
    errors: list[DocumentError] = []
    for storage in files[:MAX_FILES]:
        # The client's file name is only a label and an id (never a path on disk).
        name = (storage.filename or "upload").replace("\\", "/").rsplit("/", 1)[-1] or "upload"
        data = storage.read()
        if not data:
            errors.append(DocumentError(name, "empty file"))
            continue
        for item in read_bytes(data, name):
            if isinstance(item, DocumentError):
                errors.append(item)
            else:
                docs.append(item)
    if len(files) > MAX_FILES:
        errors.append(
            DocumentError("upload", f"more than {MAX_FILES} files: the rest were ignored")
        )
    return docs, errors


def pasted_document(form: Any, prefix: str | None) -> Document | None:
    """The pasted text of a form; without an id given, one made from ``prefix`` and the
    time (``prefix=None``: left empty, the worker names it by its content)."""
    text = (form.get("text") or "").strip()
    if not text:
        return None
    title = (form.get("title") or "").strip()[:MAX_TITLE]
    doc_id = (form.get("doc_id") or "").strip()[:MAX_ID] or (new_id(prefix) if prefix else "")
    return Document(id=doc_id, text=text, title=title or default_title(text), source="paste")


def parse_urls(block: str) -> tuple[list[str], list[str]]:
    """URLs of a text area (one a line; blank lines and # comments skipped), each
    checked by ``tracker.rules.check_url``: (distinct URLs, problems)."""
    urls: list[str] = []
    errors: list[str] = []
    seen: set[str] = set()
    for line in block.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            url = check_url(line)
        except ValueError as exc:
            errors.append(str(exc))
            continue
        if url not in seen:
            seen.add(url)
            urls.append(url)
    return urls, errors


def text_item(doc: Document, url: str = "") -> dict[str, Any]:
    """A document as a check job's text item (``tracker.rules.check_text_item``)."""
    item: dict[str, Any] = {"title": doc.title, "text": doc.text}
    if doc.id:
        item["id"] = doc.id
    url = url or str((doc.metadata or {}).get("url") or "")
    if url:
        item["url"] = url
    return item
