"""Content-addressed storage of evidence bytes: a blob's name is its SHA-256.

- ``FileBlobStore``: files under the data folder, ``evidence/blobs/ab/cdef…`` (the first
  two hex digits are a folder), written to a temporary file in the same folder and
  renamed into place, so a reader never sees half a blob; files are made read-only.
- ``GridFSBlobStore``: MongoDB GridFS (bucket ``evidence_blobs``), the file ``_id`` being
  the hex digest.

Both re-hash what they read and raise ``BlobCorrupt`` when the bytes no longer match
their name, so a blob changed on disk is never passed on as evidence. A reference to a
blob, as written in log records, is ``"sha256:<64 hex>"``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pymongo.database import Database

    from tracker.store.mongo_client import MongoDocument

_HEX = re.compile(r"[0-9a-f]{64}")
BLOB_DIR = Path("evidence") / "blobs"
GRIDFS_BUCKET = "evidence_blobs"


class BlobError(ValueError):
    """A blob name is malformed."""


class BlobMissing(KeyError):
    """No blob has this digest."""


class BlobCorrupt(ValueError):
    """A stored blob no longer hashes to its name: it was changed after it was stored."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def blob_ref(digest: str) -> str:
    return f"sha256:{check_digest(digest)}"


def digest_of_ref(ref: str) -> str:
    if not isinstance(ref, str) or not ref.startswith("sha256:"):
        raise BlobError(f"blob reference {ref!r} must look like sha256:<64 hex digits>")
    return check_digest(ref[len("sha256:") :])


def check_digest(digest: str) -> str:
    if not isinstance(digest, str) or not _HEX.fullmatch(digest):
        raise BlobError(f"blob name {digest!r} is not 64 lower-case hex digits")
    return digest


class BlobStore(Protocol):
    def put(self, data: bytes) -> str:
        """Store ``data`` (idempotent); return its SHA-256 hex digest."""
        ...

    def put_many(self, items: Sequence[bytes]) -> list[str]:
        """``put`` of each, durable together (a chunk's blobs: one round of syncs)."""
        ...

    def get(self, digest: str) -> bytes:
        """The bytes named ``digest``; ``BlobMissing`` or ``BlobCorrupt``."""
        ...

    def has(self, digest: str) -> bool: ...


def _checked(digest: str, data: bytes, where: str) -> bytes:
    actual = sha256_hex(data)
    if actual != digest:
        raise BlobCorrupt(f"blob {digest} at {where} now hashes to {actual}: it was altered")
    return data


class FileBlobStore:
    """Blobs as files under ``root`` (normally ``<data folder>/evidence/blobs``)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @classmethod
    def in_data_dir(cls, data_dir: str | os.PathLike[str]) -> FileBlobStore:
        return cls(Path(data_dir) / BLOB_DIR)

    def path(self, digest: str) -> Path:
        check_digest(digest)
        return self.root / digest[:2] / digest[2:]

    def put(self, data: bytes) -> str:
        return self.put_many([data])[0]

    def put_many(self, items: Sequence[bytes]) -> list[str]:
        """Each blob written to a temporary file, then all synced, then each renamed
        into place: a blob is under its name only once its bytes are on disk. Syncing
        after all are written lets the file system flush them together (25 blobs of a
        chunk: ~0.5 ms each instead of ~1-6 ms, measured on ext4)."""
        digests = [sha256_hex(data) for data in items]
        pending: dict[str, bytes] = {}
        for digest, data in zip(digests, items, strict=True):
            if not self.path(digest).exists():
                pending.setdefault(digest, data)
        written: list[tuple[Path, Path]] = []  # (temporary file, final path)
        try:
            for digest, data in pending.items():
                path = self.path(digest)
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
                with open(tmp, "xb") as fh:
                    written.append((tmp, path))
                    fh.write(data)
            for tmp, _ in written:
                fd = os.open(tmp, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            for tmp, path in written:
                os.chmod(tmp, 0o400)  # immutable, and private (tracker.plumbing.datadir)
                os.replace(tmp, path)
        finally:
            for tmp, _ in written:
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
        return digests

    def get(self, digest: str) -> bytes:
        path = self.path(digest)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise BlobMissing(f"no evidence blob {digest} (looked for {path})") from None
        return _checked(digest, data, str(path))

    def has(self, digest: str) -> bool:
        return self.path(digest).is_file()


class GridFSBlobStore:
    """Blobs in GridFS on a pymongo ``Database`` (or mongomock's, with its GridFS
    integration enabled)."""

    def __init__(self, db: Database[MongoDocument], bucket: str = GRIDFS_BUCKET) -> None:
        import gridfs

        self._errors = gridfs.errors
        self.fs = gridfs.GridFS(db, collection=bucket)
        self.bucket = bucket

    def put(self, data: bytes) -> str:
        digest = sha256_hex(data)
        if self.fs.exists(digest):
            return digest
        # A concurrent writer of the same bytes may win: same name, same bytes.
        with contextlib.suppress(self._errors.FileExists):
            self.fs.put(data, _id=digest, filename=digest)
        return digest

    def put_many(self, items: Sequence[bytes]) -> list[str]:
        return [self.put(data) for data in items]

    def get(self, digest: str) -> bytes:
        check_digest(digest)
        try:
            data = self.fs.get(digest).read()
        except self._errors.NoFile:
            raise BlobMissing(f"no evidence blob {digest} in GridFS {self.bucket}") from None
        except self._errors.CorruptGridFile as exc:
            raise BlobCorrupt(
                f"blob {digest} in GridFS {self.bucket} is damaged ({exc}): it was altered"
            ) from None
        return _checked(digest, data, f"GridFS {self.bucket}")

    def has(self, digest: str) -> bool:
        return bool(self.fs.exists(check_digest(digest)))


class BlobBatch:
    """A ``BlobStore`` whose puts wait for ``flush``, which stores them together
    (``put_many``): the blobs of a chunk's records, made durable before the records
    naming them are appended."""

    def __init__(self, store: BlobStore) -> None:
        self.store = store
        self.pending: dict[str, bytes] = {}

    def put(self, data: bytes) -> str:
        digest = sha256_hex(data)
        self.pending.setdefault(digest, data)
        return digest

    def put_many(self, items: Sequence[bytes]) -> list[str]:
        return [self.put(data) for data in items]

    def get(self, digest: str) -> bytes:
        found = self.pending.get(digest)
        return found if found is not None else self.store.get(digest)

    def has(self, digest: str) -> bool:
        return digest in self.pending or self.store.has(digest)

    def flush(self) -> None:
        if self.pending:
            self.store.put_many(list(self.pending.values()))
            self.pending.clear()
