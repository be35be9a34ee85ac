"""Book records in both stores (issue #36): the ``books`` table of the library's
sqlite file and the ``books`` collection of its MongoDB database (a real pymongo
client over tests/support/mongo_wire.py); and the one store method books add,
``update_mother_metadata``, on both adapters."""

from __future__ import annotations

import pytest

from tracker.books.model import Book, BookChapter
from tracker.books.store import BookStore, MongoBookStore, SqliteBookStore, book_store_for
from tracker.common.records import Match, Mother, NotFound, Passage, Suspect
from tracker.store import Store


def _book(book_id: str = "xyj", title: str = "西游记", n: int = 3) -> Book:
    return Book(
        id=book_id,
        title=title,
        author="吴承恩",
        isbn="978-7-02-000000-0",
        chapters=[
            BookChapter(i, f"第{i}回 标题{i}", f"{book_id}-{i:04d}", 1000 + i, "第一卷")
            for i in range(1, n + 1)
        ],
    )


def test_book_records_round_trip(store: Store) -> None:
    books: BookStore = book_store_for(store)
    assert isinstance(books, SqliteBookStore | MongoBookStore)
    assert books.list_books() == []
    assert books.find_book("xyj") is None
    with pytest.raises(NotFound, match="xyj"):
        books.get_book("xyj")
    books.put_book(_book())
    books.put_book(_book("sgyy", "三国演义", 2))
    got = books.get_book("xyj")
    assert got.title == "西游记" and got.author == "吴承恩" and got.isbn.startswith("978")
    assert [c.work_id for c in got.chapters] == ["xyj-0001", "xyj-0002", "xyj-0003"]
    assert got.chapters[1].title == "第2回 标题2" and got.chapters[1].characters == 1002
    assert got.chapters[0].volume == "第一卷"
    assert [b.id for b in books.list_books()] == ["sgyy", "xyj"]  # by title: 三 before 西
    # Replace keeps one record per id
    renamed = _book(title="西游记（校注本）", n=1)
    books.put_book(renamed)
    assert books.get_book("xyj").title == "西游记（校注本）"
    assert len(books.get_book("xyj").chapters) == 1
    assert len(books.list_books()) == 2
    # A second store object on the same data sees them (same file / same database)
    assert book_store_for(store).get_book("sgyy").title == "三国演义"
    assert books.delete_book("xyj") is True
    assert books.delete_book("xyj") is False
    assert [b.id for b in books.list_books()] == ["sgyy"]


def test_update_mother_metadata_keeps_text_seq_fingerprints_and_matches(store: Store) -> None:
    stored = store.put_mother(
        Mother(id="w1", title="第一回", text="正文" * 50, metadata={"work": "xyj"}),
        fingerprints={"daguan": b"\x01\x02"},
    )
    store.put_suspect(Suspect(id="s1", text="正文" * 40))
    store.put_matches(
        "s1", [Match("s1", "w1", 0.9, 0.8, 0.5, [Passage(0, 40, 0, 40, 0.98)], mother_title="x")]
    )
    store.set_verdict("s1\x1fw1", "confirmed", "seen")
    meta = {"work": "xyj", "book_id": "xyj", "book_title": "西游记", "chapter_index": 1}
    assert store.update_mother_metadata("w1", meta, title="《西游记》第一回") is True
    after = store.get_mother("w1")
    assert after.metadata == meta and after.title == "《西游记》第一回"
    assert after.seq == stored.seq and after.text == "正文" * 50
    assert store.get_fingerprints(stored.seq, "daguan") == b"\x01\x02"
    match = store.get_match("s1\x1fw1")
    assert match.verdict == "confirmed" and match.note == "seen"
    # Without a title only the metadata changes
    assert store.update_mother_metadata("w1", {"book_id": "x"}) is True
    assert store.get_mother("w1").title == "《西游记》第一回"
    assert store.get_mother("w1").metadata == {"book_id": "x"}
    assert store.update_mother_metadata("nope", {"a": 1}) is False
