"""The library store the book tests run on, embedded (sqlite) and MongoDB (a real
pymongo client over tests/support/mongo_wire.py, slow tier)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tracker.store import SqliteStore, Store


@pytest.fixture(params=["sqlite", pytest.param("mongo", marks=pytest.mark.slow)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        s: Store = SqliteStore(tmp_path / "data" / "yinji.sqlite3")
        yield s
        s.close()
        return
    pytest.importorskip("mongomock")
    import pymongo
    from mongo_wire import mongo_wire_server

    from tracker.store.mongo import MongoStore

    with mongo_wire_server() as server:
        client = pymongo.MongoClient(server.uri, tz_aware=True)
        s = MongoStore(client, db_name="yinji_books")
        yield s
        s.close()
        client.close()
