"""One place opens a library's backends (``tracker.plumbing.backends``): with MongoDB one client,
made by one timeout rule, serves the store, the cases and the evidence log; without, the
data folder's files are the ones ``DataFiles`` names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textgen import work

from tracker.cases import open_case_store
from tracker.documents.readers import Document
from tracker.evidence import EvidenceLog
from tracker.library import Library
from tracker.plumbing.backends import open_backends
from tracker.plumbing.config import Settings
from tracker.store import Suspect, open_store
from tracker.store.files import DataFiles
from tracker.store.mongo_client import MONGO_TIMEOUT_MS


@pytest.fixture()
def fake_mongo(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[tuple[str, dict[str, Any]]]]:
    """``pymongo.MongoClient`` replaced by one mongomock client; the calls recorded."""
    mongomock = pytest.importorskip("mongomock")
    gridfs_mock = pytest.importorskip("mongomock.gridfs")
    import pymongo

    gridfs_mock.enable_gridfs_integration()
    client = mongomock.MongoClient()
    calls: list[tuple[str, dict[str, Any]]] = []

    def make(uri: str, **kwargs: Any) -> Any:
        calls.append((uri, kwargs))
        return client

    monkeypatch.setattr(pymongo, "MongoClient", make)
    return client, calls


@pytest.fixture()
def wire_mongo(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[Any, list[tuple[str, dict[str, Any]]]]]:
    """``pymongo.MongoClient`` replaced by one real client of ``tests/mongo_wire.py`` (a
    wire-protocol server on mongomock): a library's bulk writes are encoded as for a
    mongod (mongomock's own ``bulk_write`` refuses pymongo >= 4.10's operations); the
    calls recorded."""
    pytest.importorskip("mongomock")
    import pymongo
    from mongo_wire import mongo_wire_server

    calls: list[tuple[str, dict[str, Any]]] = []
    with mongo_wire_server() as server:
        client: Any = pymongo.MongoClient(server.uri, tz_aware=True)

        def make(uri: str, **kwargs: Any) -> Any:
            calls.append((uri, kwargs))
            return client

        monkeypatch.setattr(pymongo, "MongoClient", make)
        try:
            yield client, calls
        finally:
            type(client).close(client)  # the real close (the test stubs the instance's)


@pytest.mark.slow
def test_a_library_on_mongodb_uses_one_client(
    wire_mongo: tuple[Any, list[tuple[str, dict[str, Any]]]],
    tmp_path: Path,
    redis_client: object,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client, calls = wire_mongo
    closed: list[bool] = []
    monkeypatch.setattr(client, "close", lambda: closed.append(True))
    monkeypatch.delenv("YINJI_TSA_URL", raising=False)
    settings = Settings(
        data_dir=tmp_path / "data",
        mongo_uri="mongodb://db.test:27017",
        mongo_db="one",
        # Not embedded: closing the library leaves the test session's Redis alone.
        redis_url="redis://127.0.0.1:1/0",
    )
    backends = open_backends(settings)
    lib = Library(settings, backends.store(), redis_client, backends=backends)
    text = work(3, 60)
    lib.ingest([Document(id="w", text=text)])
    checked = lib.check_submitted(Suspect(id="s", text=text[100:900]))
    assert [m.mother_id for m in checked.matches] == ["w"]
    cases = lib.open_case_store()
    assert cases.cases.database.client is client  # type: ignore[attr-defined]
    cases.close()
    lib.close()
    # One client, opened with the one timeout rule, closed once after everything.
    assert calls == [
        ("mongodb://db.test:27017", {"tz_aware": True, "serverSelectionTimeoutMS": 10_000})
    ]
    assert closed == [True]
    db = client["one"]
    assert db["mothers"].count_documents({}) == 1
    kinds = [doc["kind"] for doc in db["evidence_leaves"].find()]
    assert kinds == ["submission", "check"]


def _store(settings: Settings) -> Any:
    return open_store(settings)


def _cases(settings: Settings) -> Any:
    return open_case_store(settings)


def _evidence(settings: Settings) -> Any:
    return EvidenceLog.from_settings(settings)


@pytest.mark.parametrize("opener", [_store, _cases, _evidence], ids=["store", "cases", "evidence"])
@pytest.mark.parametrize(
    ("uri", "timeout"),
    [
        ("mongodb://db.test:27017", {"serverSelectionTimeoutMS": MONGO_TIMEOUT_MS}),
        ("mongodb://db.test:27017/?serverSelectionTimeoutMS=300", {}),
    ],
)
def test_every_opener_alone_follows_the_one_timeout_rule(
    fake_mongo: tuple[Any, list[tuple[str, dict[str, Any]]]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    opener: Any,
    uri: str,
    timeout: dict[str, int],
) -> None:
    _, calls = fake_mongo
    monkeypatch.delenv("YINJI_TSA_URL", raising=False)
    opened = opener(Settings(data_dir=tmp_path / "d", mongo_uri=uri, mongo_db="t"))
    opened.close()
    assert calls == [(uri, {"tz_aware": True, **timeout})]


def test_the_data_folder_files_are_named_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("YINJI_TSA_URL", raising=False)
    data = tmp_path / "new" / "data"
    settings = Settings(data_dir=data)
    backends = open_backends(settings)
    assert backends.mongo is None
    for opened in (backends.store(), backends.case_store(), backends.evidence_log()):
        opened.close()
    backends.close()
    files = DataFiles(data)
    assert settings.sqlite_path == files.store == data / "yinji.sqlite3"
    assert {p.name for p in data.iterdir() if p.suffix == ".sqlite3"} == {
        "yinji.sqlite3",
        "cases.sqlite3",
        "evidence.sqlite3",
    }
    assert files.cases.exists() and files.case_blobs == data / "cases" / "blobs"
