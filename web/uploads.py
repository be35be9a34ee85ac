"""What the forms and the REST API read from a request: uploaded files, a pasted text,
a block of URLs. Shared by several blueprints, so it lives outside them.

Uploaded files never pass through memory whole: ``SpoolingRequest`` has werkzeug's
form parser write every file part straight into ``<data dir>/uploads/`` (hashing it
on the way, see ``workers.spool``), and the handlers pass the files' references to a
job. The worker reads and deletes them. A file the request did not hand to a job
(a refused upload, an error) is deleted when the request ends.
"""

from __future__ import annotations

import posixpath
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from flask import Flask, Request, current_app, flash, request
from werkzeug.datastructures import FileStorage

from tracker.common.ids import check_id
from tracker.common.rules import check_url, default_title
from tracker.documents.readers import SUPPORTED_SUFFIXES, Document
from tracker.text.textform import is_blank
from workers.payloads import text_item
from workers.spool import Spool, SpoolFile, UploadRef

from .i18n import translate as _

__all__ = [
    "FORM_FIELDS",
    "MAX_FILES",
    "MAX_URLS",
    "SpoolingRequest",
    "claim",
    "flash_skipped",
    "init_uploads",
    "new_id",
    "parse_urls",
    "pasted_document",
    "spooled_count",
    "spooled_uploads",
    "text_item",
]

MAX_FILES = 500  # files of one upload
FORM_FIELDS = 100  # room for the other fields of a form with MAX_FILES files
MAX_URLS = 1000  # URLs of one check
MAX_TITLE = 300
#: What the library's upload takes: the works' formats and .epub, which is always a book
#: (web.handlers.library reads it into chapters before the job).
LIBRARY_SUFFIXES = (*SUPPORTED_SUFFIXES[:-1], ".epub", SUPPORTED_SUFFIXES[-1])


def unsupported(suffixes: tuple[str, ...] = SUPPORTED_SUFFIXES) -> str:
    """The message for a file of a type an upload does not take (a translation key)."""
    return "unsupported file type (use " + ", ".join(suffixes) + ")"


UNSUPPORTED = unsupported()
SWEEP_EVERY = 3600.0  # seconds between two sweeps of forgotten uploads

_SPOOLED = "yinji.spooled"  # environ key: SpoolFile objects this request created
_CLAIMED = "yinji.claimed"  # environ key: tokens handed to a job
_last_sweep = 0.0
_sweep_lock = threading.Lock()


def spool() -> Spool:
    return Spool(current_app.extensions["yinji"].settings.data_dir)


class SpoolingRequest(Request):
    """A request whose uploaded files go to the data folder's upload spool."""

    def _get_file_stream(
        self,
        total_content_length: int | None,
        content_type: str | None,
        filename: str | None = None,
        content_length: int | None = None,
    ) -> Any:
        spooled = spool().create()
        self.environ.setdefault(_SPOOLED, []).append(spooled)
        return spooled


def init_uploads(app: Flask) -> None:
    app.request_class = SpoolingRequest

    @app.teardown_request
    def discard_unclaimed(exc: BaseException | None) -> None:
        created: list[SpoolFile] = request.environ.get(_SPOOLED) or []
        claimed: set[str] = request.environ.get(_CLAIMED) or set()
        for spooled in created:
            if not spooled.closed:
                spooled.close()
            if spooled.token not in claimed:
                spooled.path.unlink(missing_ok=True)


def spooled_count() -> int:
    """Files this request has received so far (also after a 413 cut it short)."""
    return len(request.environ.get(_SPOOLED) or [])


def new_id(prefix: str) -> str:
    return f"{prefix}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def _file_name(storage: FileStorage) -> str:
    # The client's file name is only a label and an id (never a path on disk).
    name = (storage.filename or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    return "".join(c for c in name if c.isprintable())[:255]


def spooled_uploads(
    files: list[FileStorage], suffixes: tuple[str, ...] = SUPPORTED_SUFFIXES
) -> tuple[list[UploadRef], list[dict[str, str]]]:
    """The uploaded files as job references (``workers.spool``) and the files passed
    over (``{"source", "message"}``: empty, of an unsupported type, over the count).
    A file input left empty ("no file chosen") is no file at all. Reading the files
    (zips, encodings, hostile content) is the job's work, per file."""
    _sweep()
    refs: list[UploadRef] = []
    skipped: list[dict[str, str]] = []
    kept = 0
    for storage in files:
        name = _file_name(storage)
        stream = _spooled(storage)
        if not name and stream.size == 0:
            continue  # the browser sends an empty part for an empty file input
        name = name or "upload"
        if kept >= MAX_FILES:
            skipped.append({"source": name, "message": f"more than {MAX_FILES} files at once"})
            continue
        if stream.size == 0:
            skipped.append({"source": name, "message": "empty file"})
            continue
        if posixpath.splitext(name.lower())[1] not in suffixes:
            skipped.append({"source": name, "message": unsupported(suffixes)})
            continue
        kept += 1
        refs.append(stream.ref(name))
    return refs, skipped


def claim(refs: Sequence[Mapping[str, object]]) -> None:
    """Keep these uploads after the request: a job has them now (it deletes them)."""
    request.environ.setdefault(_CLAIMED, set()).update(r["upload"] for r in refs)


def flash_skipped(skipped: list[dict[str, str]], shown: int = 20) -> None:
    """One message per item passed over (the job's result lists them all too)."""
    for item in skipped[:shown]:
        flash(
            _(
                "Skipped {source}: {message}",
                source=_("URL") if item["source"] == "URL" else item["source"],
                message=_(item["message"]),
            ),
            "error",
        )
    if len(skipped) > shown:
        flash(_("… and {n} more skipped files.", n=len(skipped) - shown), "error")


def _spooled(storage: FileStorage) -> SpoolFile:
    """The spool file of an uploaded file: the one ``SpoolingRequest`` wrote it to, or
    a copy (a ``FileStorage`` made some other way)."""
    stream: Any = storage.stream
    if isinstance(stream, SpoolFile):
        return stream
    return _copy_to_spool(storage)


def _copy_to_spool(storage: FileStorage) -> SpoolFile:
    spooled = spool().create()
    request.environ.setdefault(_SPOOLED, []).append(spooled)
    while chunk := storage.stream.read(1024 * 1024):
        spooled.write(chunk)
    return spooled


def _sweep() -> None:
    """Now and then, remove uploads a crash left behind (``workers.spool.MAX_AGE``)."""
    global _last_sweep
    now = time.monotonic()
    with _sweep_lock:
        if _last_sweep and now - _last_sweep < SWEEP_EVERY:
            return
        _last_sweep = now
    try:
        spool().sweep()
    except OSError:
        current_app.logger.warning("could not sweep the upload folder", exc_info=True)


def pasted_document(form: Mapping[str, str], prefix: str | None) -> Document | None:
    """The pasted text of a form; without an id given, one made from ``prefix`` and the
    time (``prefix=None``: left empty, the worker names it by its content). An id given
    follows ``tracker.common.ids.check_id``: ``ValueError`` naming the problem otherwise."""
    text = (form.get("text") or "").strip()
    if is_blank(text):  # zero-width characters only: nothing pasted
        return None
    title = (form.get("title") or "").strip()[:MAX_TITLE]
    given = (form.get("doc_id") or "").strip()
    # The one id rule (tracker.common.ids): a bad id is refused by name, never cut or cleaned.
    doc_id = check_id(given, "ID") if given else (new_id(prefix) if prefix else "")
    return Document(id=doc_id, text=text, title=title or default_title(text), source="paste")


def parse_urls(block: str) -> tuple[list[str], list[str]]:
    """URLs of a text area (one a line; blank lines and # comments skipped), each
    checked by ``tracker.common.rules.check_url``: (distinct URLs, problems)."""
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
