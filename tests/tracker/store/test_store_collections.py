"""The generic parts every backend writes once: a ``Collection`` of records and the
``KeyValues`` of settings give the same answers on sqlite and on MongoDB (a real pymongo
client over a local wire-protocol server on mongomock)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tracker.store import Mother, NotFound, Store, Suspect, User
from tracker.store.interfaces import Duplicate
from tracker.store.sqlite import SqliteStore

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


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
        s = MongoStore(client, db_name="collections_test")
        yield s
        s.close()
        client.close()


def _suspects(store: Store, n: int) -> None:
    for i in range(n):
        store.put_suspect(
            Suspect(
                id=f"s{i:02d}",
                text=f"第{i}段",
                title="盗版" if i % 2 else "转载",
                url=f"https://site{i % 3}.example/{i}",
                fetched_at=T0 + timedelta(minutes=i),
                raw=b"<html>" if i == 0 else None,
            )
        )


def test_a_collection_pages_counts_and_scans(store: Store) -> None:
    _suspects(store, 7)
    records = store.suspect_records
    newest = [s.id for s in records.page(limit=3)]
    assert newest == ["s06", "s05", "s04"]  # the suspects' listing order: newest first
    assert [s.id for s in records.page(offset=6, limit=3)] == ["s00"]
    assert records.page(limit=0) == [] and records.page(offset=-5, limit=1)[0].id == "s06"
    assert records.count() == 7 and records.count(search="盗版") == 3
    assert [s.id for s in records.page(search="SITE1.example")] == ["s04", "s01"]
    assert records.page(search="%") == [] and records.count(search="_") == 0  # not patterns
    # The scan: key order, in batches, from after a key; brief reads leave raw out.
    assert [s.id for s in records.scan(batch_size=2)] == [f"s{i:02d}" for i in range(7)]
    assert [s.id for s in records.scan(batch_size=2, after="s04")] == ["s05", "s06"]
    assert next(iter(records.scan(brief=True))).raw is None
    assert records.get("s00").raw == b"<html>"
    assert records.find_by(records.key_field, "s03") == records.get("s03")
    assert records.find_by(records.key_field, "nope") is None
    with pytest.raises(NotFound):
        records.get("nope")
    assert records.delete("s00") is True and records.delete("s00") is False
    assert records.count() == 6


def test_a_unique_field_other_than_the_key_is_refused_by_name(store: Store) -> None:
    users = store.user_records
    users.put(User("ann", "h1", "admin", api_token_hash="t" * 64, created_at=T0))
    with pytest.raises(Duplicate, match="users"):
        users.put(User("ben", "h2", "viewer", api_token_hash="t" * 64, created_at=T0))
    assert users.find_by("api_token_hash", "t" * 64) == users.get("ann")
    assert users.find_by(users.key_field, "ben") is None  # nothing of ben was written


def test_mothers_are_written_only_with_their_seq(store: Store) -> None:
    with pytest.raises(TypeError, match="mothers"):
        store.mother_records.put(Mother(id="m", title="t", text="正文"))
    stored = store.put_mother(Mother(id="m", title="t", text="正文" * 10, ingested_at=T0))
    brief = store.mother_records.page(brief=True)[0]
    assert brief.text == "" and brief.chars == 20 and brief.seq == stored.seq
    assert [m.id for m in store.mother_records.scan(after=stored.seq)] == []
    assert [m.id for m in store.mother_records.scan(after=0)] == ["m"]


def test_key_values_are_the_same_everywhere(store: Store) -> None:
    values = store.meta_values
    assert values.get("k") is None
    values.set("k", {"a": [1, "二"]})
    assert values.get("k") == {"a": [1, "二"]}
    assert values.init("k", 5) == {"a": [1, "二"]} and values.init("n", 5) == 5
    assert values.raise_to("r", 3) == 3 and values.raise_to("r", 2) == 3
    assert values.items("r") == {"r": 3}
    with pytest.raises(ValueError):
        values.set("bad", float("nan"))
    values.delete("k")
    assert values.get("k") is None and set(values.items("")) == {"n", "r"}
