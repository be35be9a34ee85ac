"""Uploads spooled to disk: what the web app receives goes to ``<data dir>/uploads/``
and the task messages carry a reference to it, never the bytes.

A reference is a small JSON object::

    {"upload": "up-<32 hex>", "sha256": "<64 hex>", "size": int, "name": "novel.zip",
     "format": "file" | "items"}

- ``file``: a file as the user sent it; ``name`` (the client's file name, a label
  only, never a path) gives its type to ``tracker.documents.readers.read_bytes``.
- ``items``: JSON Lines of job items (``tracker.common.rules.check_document_item`` or
  ``check_text_item`` objects) that were too large to send inline in a message.

The web process writes a file while the request body streams in (hashing it on the
way), so a large upload is never held whole in memory and never goes through the
broker (Redis refuses values over 512 MiB; a big message used to break the
connection). The worker that runs the job opens the file by its token, checks its
SHA-256 and size, and deletes it when the job is done. Every process of one
installation (web, workers) must therefore share the data folder; files left behind
by a crash are removed by ``sweep`` after ``MAX_AGE`` seconds.

MongoDB GridFS is not used: one mechanism for the embedded and the production setup,
and no upload passes through the database that holds the library.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, TypedDict

from tracker.common.records import JSONValue

UPLOAD_DIR = "uploads"
TOKEN_RE = re.compile(r"^up-[0-9a-f]{32}$")
FORMATS = ("file", "items")
MAX_AGE = 7 * 24 * 3600  # seconds a forgotten upload is kept (the longest a job lives)
CHUNK = 1024 * 1024


class UploadRef(TypedDict):
    """A reference to a spooled upload (the module doc)."""

    upload: str
    sha256: str
    size: int
    name: str
    format: str


class UploadError(ValueError):
    """A reference that is malformed, or whose file is missing or changed."""


class SpoolFile:
    """A new upload file being written: hashes what is written, so the reference is
    ready when the last byte is (no second pass over a large file).

    Quacks like the binary file werkzeug's form parser writes a file part into."""

    def __init__(self, path: Path, token: str) -> None:
        self.path = path
        self.token = token
        self.size = 0
        self._hash = hashlib.sha256()
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        self._fh: BinaryIO = os.fdopen(fd, "wb+")

    # --- the file interface the form parser and FileStorage use ---------------------
    def write(self, data: bytes) -> int:
        self._hash.update(data)
        self.size += len(data)
        return self._fh.write(data)

    def read(self, size: int = -1) -> bytes:
        return self._fh.read(size)

    def readline(self, size: int = -1) -> bytes:
        return self._fh.readline(size)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._fh.seek(offset, whence)

    def tell(self) -> int:
        return self._fh.tell()

    def flush(self) -> None:
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()

    @property
    def closed(self) -> bool:
        return self._fh.closed

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._fh)

    # --- the reference --------------------------------------------------------------
    def ref(self, name: str, fmt: str = "file") -> UploadRef:
        """The reference a task message carries (closes the file: it is complete)."""
        if fmt not in FORMATS:
            raise ValueError(f"upload format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
        return {
            "upload": self.token,
            "sha256": self._hash.hexdigest(),
            "size": self.size,
            "name": name,
            "format": fmt,
        }


class Spool:
    """The upload folder of one data folder."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.root = Path(data_dir) / UPLOAD_DIR

    def create(self) -> SpoolFile:
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        token = "up-" + secrets.token_hex(16)
        return SpoolFile(self.root / token, token)

    def write_items(self, items: Iterable[JSONValue], name: str) -> UploadRef:
        """Job items as a JSON Lines upload; returns its reference."""
        spooled = self.create()
        try:
            for item in items:
                line = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
                spooled.write(line.encode("utf-8") + b"\n")
            return spooled.ref(name, "items")
        except BaseException:
            spooled.close()
            spooled.path.unlink(missing_ok=True)
            raise

    def path(self, ref: object) -> Path:
        """The file of a reference (``UploadError`` when the reference is malformed).
        Only a token is accepted, never a path: a message cannot name another file."""
        token = ref.get("upload") if isinstance(ref, dict) else None
        if not isinstance(token, str):
            raise UploadError(f"not an upload reference: {str(ref)[:80]!r}")
        if not TOKEN_RE.match(token):
            raise UploadError(f"not an upload token: {token[:80]!r}")
        return self.root / token

    def verified_path(self, ref: UploadRef) -> Path:
        """The upload's file after checking its size and SHA-256 (``UploadError``)."""
        self.open(ref).close()
        return self.path(ref)

    def open(self, ref: UploadRef) -> BinaryIO:
        """The upload's file, open for reading, after checking its size and SHA-256."""
        path = self.path(ref)
        name = str(ref.get("name") or ref["upload"])
        try:
            fh = open(path, "rb")  # noqa: SIM115 -- returned to the caller
        except FileNotFoundError:
            raise UploadError(
                f"{name}: the uploaded file is gone from {self.root} (already processed, "
                "removed, or the worker does not share the web app's data folder)"
            ) from None
        digest = hashlib.sha256()
        size = 0
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
        if size != ref.get("size") or digest.hexdigest() != ref.get("sha256"):
            fh.close()
            raise UploadError(f"{name}: the uploaded file changed after it was received")
        fh.seek(0)
        return fh

    def iter_items(self, ref: UploadRef) -> Iterator[JSONValue]:
        """The items of an ``items`` upload, one per line."""
        with self.open(ref) as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)

    def delete(self, refs: Iterable[object]) -> None:
        """Remove the files of ``refs`` (missing files and bad references are ignored:
        a redelivered task deletes again)."""
        for ref in refs:
            try:
                self.path(ref).unlink(missing_ok=True)
            except (UploadError, OSError):
                continue

    def discard(self, token: str) -> None:
        if TOKEN_RE.match(token):
            (self.root / token).unlink(missing_ok=True)

    def tokens(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if TOKEN_RE.match(p.name))

    def sweep(self, max_age: float = MAX_AGE, now: float | None = None) -> int:
        """Remove uploads older than ``max_age`` seconds (left by a crash or a job that
        failed for good); the number removed."""
        if not self.root.is_dir():
            return 0
        now = time.time() if now is None else now
        removed = 0
        for path in self.root.iterdir():
            if not TOKEN_RE.match(path.name):
                continue
            try:
                if now - path.stat().st_mtime > max_age:
                    path.unlink()
                    removed += 1
            except FileNotFoundError:
                continue
        return removed
