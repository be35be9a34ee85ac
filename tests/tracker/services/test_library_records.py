"""``tracker.services.records.LibraryRecords``: the web app's one door to a library's
records reads and writes the store it was given, and offers nothing more."""

from __future__ import annotations

from pathlib import Path

import pytest
from casekit import add_match

from tracker.books.store import SqliteBookStore
from tracker.common.records import MatchQuery, NotFound, User
from tracker.services.records import LibraryRecords
from tracker.store import SqliteStore


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    s = SqliteStore(tmp_path / "yinji.sqlite3")
    add_match(s, "s1", "m1", "https://a.example/1", title="长夜")
    add_match(s, "s2", "m1", "https://b.example/2", title="长夜")
    add_match(s, "s3", "m2", "https://a.example/3", title="春水")
    return s


def test_matches_works_and_suspects_are_read_from_the_store(store: SqliteStore) -> None:
    records = LibraryRecords(store)
    q = MatchQuery(mother_id="m1")
    assert records.count_matches(q) == 2
    assert {m.suspect_id for m in records.query_matches(q)} == {"s1", "s2"}
    first = records.query_matches(q)[0]
    assert records.get_match(first.id) == store.get_match(first.id)
    assert records.match_stats(MatchQuery(limit=0))["by_verdict"]["pending"] == 3
    with pytest.raises(NotFound):
        records.get_match("nothing")

    assert records.get_work("m2").title == "春水"
    assert records.count_works() == 2 and records.count_works(search="长夜") == 1
    brief = records.list_works(with_text=False)
    assert [w.id for w in brief] == [w.id for w in store.list_mothers()]
    assert all(w.text == "" and w.chars == 100 for w in brief)

    assert records.get_suspect("s3").url == "https://a.example/3"
    assert records.count_suspects() == 3 and records.count_suspects(search="b.example") == 1
    assert len(records.list_suspects(offset=1, limit=5)) == 2


def test_users_are_written_through_the_narrow_user_store(store: SqliteStore) -> None:
    records = LibraryRecords(store)
    records.users.put_user(User(username="ana", password_hash="x", role="analyst"))
    assert records.get_user("ana") is not None
    assert [u.username for u in records.list_users()] == ["ana"]
    records.delete_user("ana")
    assert records.get_user("ana") is None and store.get_user("ana") is None


def test_the_books_read_the_same_store(store: SqliteStore) -> None:
    records = LibraryRecords(store)
    assert isinstance(records.book_store(), SqliteBookStore)


def test_it_offers_records_not_the_store(store: SqliteStore) -> None:
    public = {name for name in dir(LibraryRecords(store)) if not name.startswith("_")}
    assert "store" not in public and "redis" not in public and "indexes" not in public
