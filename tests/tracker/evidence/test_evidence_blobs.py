"""Content-addressed blobs: files under the data folder and GridFS (on mongomock)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from tracker.evidence.blobs import (
    BlobCorrupt,
    BlobError,
    BlobMissing,
    FileBlobStore,
    GridFSBlobStore,
    blob_ref,
    digest_of_ref,
)

from .conftest import mongo_db


@pytest.fixture(params=["files", "gridfs"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "files":
        return FileBlobStore.in_data_dir(tmp_path)
    return GridFSBlobStore(mongo_db())


def test_put_get_has(store: Any) -> None:
    data = "页面原文 as served".encode()
    digest = store.put(data)
    assert digest == hashlib.sha256(data).hexdigest()
    assert store.put(data) == digest  # idempotent
    assert store.has(digest)
    assert store.get(digest) == data
    assert store.put(b"") == hashlib.sha256(b"").hexdigest()
    assert store.get(hashlib.sha256(b"").hexdigest()) == b""


def test_missing_and_malformed_names(store: Any) -> None:
    with pytest.raises(BlobMissing, match="0" * 64):
        store.get("0" * 64)
    assert not store.has("0" * 64)
    for bad in ("../etc/passwd", "AB" * 32, "a" * 63):
        with pytest.raises(BlobError, match="not 64 lower-case hex digits"):
            store.get(bad)


def test_file_layout_is_atomic_and_read_only(tmp_path: Path) -> None:
    store = FileBlobStore.in_data_dir(tmp_path)
    digest = store.put(b"evidence")
    path = tmp_path / "evidence" / "blobs" / digest[:2] / digest[2:]
    assert path.read_bytes() == b"evidence"
    assert os.stat(path).st_mode & 0o222 == 0
    assert [p.name for p in path.parent.iterdir()] == [digest[2:]]  # no temp file left


def test_an_altered_file_is_refused_on_read(tmp_path: Path) -> None:
    store = FileBlobStore.in_data_dir(tmp_path)
    digest = store.put(b"the page as served")
    path = store.path(digest)
    os.chmod(path, 0o644)
    path.write_bytes(b"the page as edited")
    with pytest.raises(BlobCorrupt, match=f"blob {digest} .* it was altered"):
        store.get(digest)


def test_an_altered_gridfs_blob_is_refused_on_read() -> None:
    db = mongo_db()
    store = GridFSBlobStore(db)
    digest = store.put(b"the page as served")
    chunks = db[f"{store.bucket}.chunks"]
    chunks.update_one({"files_id": digest}, {"$set": {"data": b"the page as EDITED"}})
    with pytest.raises(BlobCorrupt, match=f"blob {digest} .* now hashes to .* it was altered"):
        store.get(digest)
    chunks.update_one({"files_id": digest}, {"$set": {"data": b"cut"}})
    with pytest.raises(BlobCorrupt, match=r"is damaged .* it was altered"):
        store.get(digest)


def test_refs() -> None:
    d = hashlib.sha256(b"x").hexdigest()
    assert digest_of_ref(blob_ref(d)) == d
    with pytest.raises(BlobError):
        digest_of_ref(d)
