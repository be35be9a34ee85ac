"""``BookService`` on a real library (sqlite store, the session's embedded Redis):
a parsed book ingested as chapter works, listed, resolved, renamed, deleted, grouped
from JSONL rows, checked (match objects name book and chapter), and a library stored
before books migrated keeping ids, verdicts and cases (issue #36)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from textgen import work

import tracker.books.files as book_files
from tracker.books.service import MIGRATED_META, BookIngest, BookService, summary_line
from tracker.books.types import ParsedBook, ParsedChapter
from tracker.common.records import NotFound
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings
from tracker.store import open_store

CHAPTERS = [work(3600 + i, 30) for i in range(3)]
HEADINGS = ["第一回 灵根孕育源流出", "第二回 悟彻菩提真妙理", "第三回 四海千山皆拱伏"]


@pytest.fixture()
def lib(tmp_path: Path, redis_client: object) -> Iterator[Library]:
    settings = Settings(data_dir=tmp_path, redis_prefix="t")
    library = Library(settings, open_store(settings), redis_client)  # type: ignore[arg-type]
    yield library
    library.store.close()


def parsed(n: int = 3, title: str = "西游记", source: str = "xiyouji.txt") -> ParsedBook:
    return ParsedBook(
        title=title,
        author="吴承恩",
        chapters=[ParsedChapter(i + 1, HEADINGS[i], CHAPTERS[i]) for i in range(n)],
        source=source,
        warnings=["headings out of order at 第二回 (kept the file's order)"],
    )


def test_a_parsed_book_becomes_chapter_works_and_a_record(lib: Library) -> None:
    svc = BookService(lib)
    report, made = svc.ingest_book(parsed())
    assert report.ingested == 3 and not report.errors
    assert summary_line(made) == "1 book, 3 chapters"
    assert any("xiyouji.txt: headings out of order" in w for w in report.warnings)
    book = svc.get("xiyouji")
    assert (book.title, book.author) == ("西游记", "吴承恩")
    assert [(c.index, c.title, c.work_id) for c in book.chapters] == [
        (1, HEADINGS[0], "xiyouji-0001"),
        (2, HEADINGS[1], "xiyouji-0002"),
        (3, HEADINGS[2], "xiyouji-0003"),
    ]
    assert book.chapters[0].characters == len(CHAPTERS[0])
    m = lib.store.get_mother("xiyouji-0002")
    assert m.title == f"《西游记》{HEADINGS[1]}"
    assert m.text == CHAPTERS[1]
    assert m.metadata == {
        "book_id": "xiyouji",
        "book_title": "西游记",
        "author": "吴承恩",
        "chapter": HEADINGS[1],
        "chapter_index": 2,
    }
    found = svc.book_of("xiyouji-0003")
    assert found is not None and found[0].id == "xiyouji" and found[1].index == 3
    assert svc.book_of("nothing") is None
    assert [b.id for b in svc.list_books()] == ["xiyouji"]
    with pytest.raises(NotFound, match="'nope'"):
        svc.get("nope")


def test_rename_keeps_chapters_current_and_delete_removes_their_works(lib: Library) -> None:
    svc = BookService(lib)
    svc.ingest_book(parsed())
    seq = lib.store.get_mother("xiyouji-0001").seq
    book = svc.rename("xiyouji", title="西游记（世德堂本）", author="（明）吴承恩")
    assert book.title == "西游记（世德堂本）"
    m = lib.store.get_mother("xiyouji-0001")
    assert m.metadata["book_title"] == "西游记（世德堂本）"
    assert m.metadata["author"] == "（明）吴承恩"
    assert m.title == f"《西游记（世德堂本）》{HEADINGS[0]}"
    assert m.seq == seq  # not re-ingested
    with pytest.raises(ValueError, match="xiyouji"):
        svc.rename("xiyouji", title="  ")
    done = svc.delete("xiyouji")
    assert done.works_deleted == 3 and not done.works_missing
    assert lib.store.count_mothers() == 0
    assert svc.find("xiyouji") is None
    with pytest.raises(NotFound):
        svc.delete("xiyouji")


def test_a_chapter_deleted_on_its_own_leaves_its_book(lib: Library) -> None:
    svc = BookService(lib)
    svc.ingest_book(parsed(2))
    assert lib.delete_mother("xiyouji-0001")  # yinji delete ID
    assert svc.get("xiyouji").work_ids() == ["xiyouji-0002"]
    assert lib.delete_mother("xiyouji-0002")
    assert svc.find("xiyouji") is None  # no chapter left: no book


def test_ingesting_a_book_again_replaces_it(lib: Library) -> None:
    svc = BookService(lib)
    svc.ingest_book(parsed(3))
    _report, made = svc.ingest_book(parsed(2))
    assert not made[0].new and made[0].replaced_chapters == 1
    assert svc.get("xiyouji").work_ids() == ["xiyouji-0001", "xiyouji-0002"]
    with pytest.raises(KeyError):
        lib.store.get_mother("xiyouji-0003")


def test_a_chapter_without_text_is_said_and_left_out(lib: Library) -> None:
    book = parsed(2)
    book.chapters.insert(1, ParsedChapter(2, "第二回 空", "  \n"))
    book.chapters[2].index = 3
    report, made = BookService(lib).ingest_book(book)
    assert any("chapter 2 '第二回 空' has no text" in w for w in report.warnings)
    assert [c.index for c in made[0].book.chapters] == [1, 3]


def test_check_json_names_book_and_chapter_with_the_current_title(lib: Library) -> None:
    svc = BookService(lib)
    svc.ingest_book(parsed())
    lib.ingest([Document(id="plain", text=work(9100, 30), title="散文")])
    res = next(lib.check([Document(id="s1", text=CHAPTERS[1][:900])], save=False))
    line = res.to_json()
    match = line["matches"][0]  # type: ignore[index]
    assert list(match)[:5] == ["mother_id", "title", "score", "coverage", "passages"]
    assert list(match)[5:] == ["regions", "book_id", "book_title", "chapter", "chapter_index"]
    assert match["mother_id"] == "xiyouji-0002"
    assert match["book_id"] == "xiyouji" and match["book_title"] == "西游记"
    assert match["chapter"] == HEADINGS[1] and match["chapter_index"] == 2
    # The book's title as it is now, from its record
    svc.books.put_book(replace(svc.get("xiyouji"), title="新"))
    res = next(lib.check([Document(id="s1", text=CHAPTERS[1][:900])], save=False))
    assert res.matches[0].book is not None and res.matches[0].book.book_title == "新"
    # Where the book was found (the web's book page): the saved check's match
    pirate = Document(id="s9", text=CHAPTERS[1][:900], metadata={"url": "http://p.example/2"})
    assert len(list(lib.check([pirate]))) == 1
    stats = svc.stats("xiyouji")
    assert stats.chapters_found == 1 and stats.sites == ["p.example"]
    by = stats.to_dict()["by_chapter"]
    assert [c["matches"] for c in by] == [0, 1, 0]  # type: ignore[index]
    # A work in no book: the four fields are null
    res = next(lib.check([Document(id="s2", text=work(9100, 30)[:900])], save=False))
    plain = res.to_json()["matches"][0]  # type: ignore[index]
    assert plain["mother_id"] == "plain"
    assert [plain[k] for k in ("book_id", "book_title", "chapter", "chapter_index")] == [None] * 4


def test_jsonl_rows_with_book_fields_group_into_books(lib: Library, tmp_path: Path) -> None:
    rows = [
        {"id": "sh-2", "title": "第二回", "text": CHAPTERS[1], "book": "shuihu",
         "book_title": "水浒传", "author": "施耐庵", "chapter_index": 2},
        {"id": "sh-1", "title": "第一回", "text": CHAPTERS[0], "book": "shuihu",
         "book_title": "水浒传", "chapter_index": 1},
        {"id": "lone", "text": CHAPTERS[2], "title": "散篇"},
        {"id": "hl-1", "text": work(7001, 20), "work": "honglou", "work_title": "红楼梦",
         "chapter": "第一回 甄士隐梦幻识通灵"},
    ]  # fmt: skip
    path = tmp_path / "books.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "utf-8")
    plan = BookIngest(BookService(lib))
    report = lib.ingest(plan.documents([path]))
    made = plan.finish(report)
    assert report.ingested == 4 and not report.errors
    assert summary_line(made) == "2 books, 3 chapters"
    svc = BookService(lib)
    sh = svc.get("shuihu")
    assert (sh.title, sh.author) == ("水浒传", "施耐庵")
    assert [(c.index, c.work_id, c.title) for c in sh.chapters] == [
        (1, "sh-1", "第一回"),
        (2, "sh-2", "第二回"),
    ]
    assert lib.store.get_mother("sh-1").metadata["book_id"] == "shuihu"
    hl = svc.get("honglou")
    assert hl.title == "红楼梦" and hl.chapters[0].title == "第一回 甄士隐梦幻识通灵"
    assert lib.store.get_mother("hl-1").title == "《红楼梦》第一回 甄士隐梦幻识通灵"
    assert "book_id" not in lib.store.get_mother("lone").metadata


def test_auto_mode_keeps_plain_texts_as_works_and_reads_books(
    lib: Library, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Auto mode: a text without two chapter headings is one work, never handed to the
    book reader; one with them is read as a book (the reader stood in for here:
    tracker.books.parse is tested on its own)."""
    calls: list[str] = []

    def reader(name: str, data: bytes) -> ParsedBook:
        calls.append(name)
        text = data.decode("utf-8")
        parts = [p for p in text.split("\n\n") if p.strip()]
        return ParsedBook(
            title="小书",
            chapters=[
                ParsedChapter(i + 1, p.split("\n", 1)[0], p.split("\n", 1)[1])
                for i, p in enumerate(parts)
            ],
            source=name,
        )

    monkeypatch.setattr(book_files, "book_from_file", reader)
    (tmp_path / "article.txt").write_text("一篇文章\n" + CHAPTERS[0], "utf-8")
    book_text = f"第一章 起\n{CHAPTERS[1]}\n\n第二章 承\n{CHAPTERS[2]}"
    (tmp_path / "novel.txt").write_text(book_text, "utf-8")
    plan = BookIngest(BookService(lib))
    report = lib.ingest(plan.documents([tmp_path / "article.txt", tmp_path / "novel.txt"]))
    made = plan.finish(report)
    assert calls == [str(tmp_path / "novel.txt")]
    assert lib.store.get_mother("article").title == "一篇文章"
    assert summary_line(made) == "1 book, 2 chapters"
    assert lib.store.get_mother("novel-0002").title == "《小书》第二章 承"
    # --as-works: the old behaviour, one file one work
    plan = BookIngest(BookService(lib), mode="works")
    lib.ingest(plan.documents([tmp_path / "novel.txt"]))
    assert lib.store.get_mother("novel").text.startswith("第一章 起")


# -- the migration -------------------------------------------------------------------------
def _legacy_library(lib: Library) -> None:
    """Chapters stored before books: work/work_title metadata, titles 《书》章."""
    docs = [
        Document(
            id=f"shuihu-0{n}",
            text=CHAPTERS[i],
            title=f"《水浒传》{h}",
            metadata={"work": "shuihu", "work_title": "水浒传"},
        )
        for i, (n, h) in enumerate([(5, "第五回 小霸王醉入销金帐"), (1, "第一回 张天师祈禳瘟疫")])
    ]
    docs.append(Document(id="essay", text=work(8200, 20), title="一篇散文"))
    lib.ingest(docs)


def test_migration_makes_books_keeping_ids_verdicts_and_cases(lib: Library) -> None:
    from tracker.cases.service import CaseService

    _legacy_library(lib)
    res = next(lib.check([Document(id="pirate", text=CHAPTERS[0][:900])], save=True))
    assert res.matches[0].mother_id == "shuihu-05"
    match_id = res.matches[0].id
    lib.store.set_verdict(match_id, "confirmed", "copied")
    seqs = {m.id: m.seq for m in lib.store.list_mothers(with_text=False)}
    with lib.open_case_store() as cases:
        case = CaseService(cases).open_case(
            work="shuihu", domain="pirate.example", who="t", work_title="水浒传"
        )

    svc = BookService(lib)
    books = svc.list_books()  # migrates lazily, once
    assert [b.id for b in books] == ["shuihu"]
    book = books[0]
    assert book.title == "水浒传"
    assert [(c.index, c.work_id, c.title) for c in book.chapters] == [
        (1, "shuihu-01", "第一回 张天师祈禳瘟疫"),
        (5, "shuihu-05", "第五回 小霸王醉入销金帐"),  # its place by its heading, as cases read it
    ]
    m = lib.store.get_mother("shuihu-05")
    assert m.title == "《水浒传》第五回 小霸王醉入销金帐"  # titles untouched
    assert m.metadata["work"] == "shuihu" and m.metadata["work_title"] == "水浒传"
    assert m.metadata["book_id"] == "shuihu" and m.metadata["chapter_index"] == 5
    assert {x.id: x.seq for x in lib.store.list_mothers(with_text=False)} == seqs
    assert lib.store.get_match(match_id).verdict == "confirmed"
    assert lib.store.get_match(match_id).note == "copied"
    with lib.open_case_store() as cases:
        assert cases.get_case(case.id).work == "shuihu"
    assert "book_id" not in lib.store.get_mother("essay").metadata
    assert lib.store.get_meta(MIGRATED_META) is not None

    again = BookService(lib).migrate_legacy()
    assert again.already
    forced = BookService(lib).migrate_legacy(force=True)
    assert (forced.books_created, forced.books_updated, forced.chapters_labelled) == (0, 0, 0)
    assert len(BookService(lib).get("shuihu").chapters) == 2


def test_migration_and_the_cases_reader_group_a_legacy_library_alike(lib: Library) -> None:
    """Every legacy form of a library stored before books: the cases' reader
    (``tracker.cases.grouping.book_of``, on the library not yet migrated) and the
    migration put the same works into the same books, chapters at the same places."""
    from tracker.cases.grouping import book_of

    rows = [
        (
            "shuihu-05",
            "《水浒传》第五回 小霸王醉入销金帐",
            {"work": "shuihu", "work_title": "水浒传"},
        ),
        ("shuihu-01", "第一回 张天师祈禳瘟疫", {"work": "shuihu"}),
        ("hlm-4", "第四回 薄命女偏逢薄命郎", {"book": "红楼梦"}),
        ("hlm-3", "第三回 托内兄如海荐西宾", {"book": "红楼梦", "chapter": 3}),
        ("wc-1", "第一章 雾起", {"work_title": "雾城旧梦"}),
        ("sg-1", "《三国演义》第一回 宴桃园豪杰三结义", {}),
        ("sg-2", "《三国演义》第二回 张翼德怒鞭督邮", {"author": "罗贯中"}),
        ("essay", "一篇散文", {}),
    ]
    lib.ingest(
        [
            Document(id=i, text=work(7000 + n, 12), title=t, metadata=meta)
            for n, (i, t, meta) in enumerate(rows)
        ]
    )

    def grouped(read: dict[str, tuple[str, int | None] | None]) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for work_id, found in read.items():
            if found is not None:
                out.setdefault(found[0], set()).add(work_id)
        return out

    before = {}
    for work_id, _title, _meta in rows:
        ref = book_of(lib.store, work_id)
        before[work_id] = (ref.book_id, ref.chapter_index) if ref is not None else None
    assert before["essay"] is None and before["sg-1"] == ("三国演义", 1)

    books = BookService(lib).list_books()  # migrates
    after: dict[str, tuple[str, int | None] | None] = dict.fromkeys(before)
    for book in books:
        for c in book.chapters:
            after[c.work_id] = (book.id, c.index)
    assert after == before
    assert grouped(after) == {
        "shuihu": {"shuihu-01", "shuihu-05"},
        "红楼梦": {"hlm-3", "hlm-4"},
        "雾城旧梦": {"wc-1"},
        "三国演义": {"sg-1", "sg-2"},
    }
    # migrated, the reader still says the same from the metadata the migration wrote
    assert {
        w: (r.book_id, r.chapter_index) if (r := book_of(lib.store, w)) else None for w in before
    } == before
    assert BookService(lib).get("三国演义").author == "罗贯中"


def test_migration_of_a_whole_book_stored_as_one_work(lib: Library) -> None:
    """Needs the chapter reader of tracker.books.parse (the bookparse branch)."""
    pytest.importorskip("tracker.books.parse")
    text = "\n".join(f"{h}\n{work(5200 + i, 60)}" for i, h in enumerate(HEADINGS))
    lib.ingest([Document(id="xyj-all", text=text, title="《西游记》")])
    report = BookService(lib).migrate_legacy()
    assert report.whole_books == ["xyj-all"]
    book = BookService(lib).get("xyj-all")
    assert book.title == "西游记" and book.work_ids() == ["xyj-all"]


@pytest.mark.slow  # starts the MongoDB wire stand-in
def test_books_on_mongodb(tmp_path: Path, redis_client: object) -> None:
    """The same service on a MongoDB store (a real pymongo client over
    tests/support/mongo_wire.py): ingest, rename, migrate, delete."""
    pytest.importorskip("mongomock")
    import pymongo
    from mongo_wire import mongo_wire_server

    from tracker.store.mongo import MongoStore

    with mongo_wire_server() as server:
        client = pymongo.MongoClient(server.uri, tz_aware=True)
        store = MongoStore(client, db_name="yinji_books")
        settings = Settings(data_dir=tmp_path, redis_prefix="tm")
        lib = Library(settings, store, redis_client)  # type: ignore[arg-type]
        try:
            _legacy_library(lib)
            svc = BookService(lib)
            svc.ingest_book(parsed())
            assert [b.id for b in svc.list_books()] == ["shuihu", "xiyouji"]  # migrated too
            assert lib.store.get_mother("shuihu-01").metadata["chapter_index"] == 1
            svc.rename("xiyouji", title="西游")
            assert lib.store.get_mother("xiyouji-0003").title == f"《西游》{HEADINGS[2]}"
            res = next(lib.check([Document(id="s", text=CHAPTERS[2][:900])], save=False))
            assert res.to_json()["matches"][0]["book_title"] == "西游"  # type: ignore[index]
            assert svc.delete("xiyouji").works_deleted == 3
            assert [b.id for b in BookService(lib).list_books()] == ["shuihu"]
        finally:
            store.close()
            client.close()


def test_a_book_read_early_is_the_book_read_in_turn_unless_the_file_changed(
    lib: Library, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``EarlyReads`` (what ``yinji ingest`` reads while the library opens): its book is
    the one ``BookIngest`` would read itself, used only for the same bytes; a file
    changed after the early read is read again."""
    calls: list[str] = []
    real = book_files.book_from_file

    def counted(name: str, data: bytes) -> ParsedBook:
        calls.append(name)
        return real(name, data)

    monkeypatch.setattr(book_files, "book_from_file", counted)
    path = tmp_path / "novel.txt"
    path.write_text(f"第一章 起\n{CHAPTERS[0]}\n第二章 承\n{CHAPTERS[1]}", "utf-8")
    early = book_files.EarlyReads([path], "auto")
    plan = BookIngest(BookService(lib), early=early)
    first = [d for d in plan.documents([path]) if isinstance(d, Document)]
    assert calls == [str(path)]  # read once, early
    alone = BookIngest(BookService(lib))
    again = [d for d in alone.documents([path]) if isinstance(d, Document)]
    assert [(d.id, d.title, d.text, d.metadata) for d in first] == [
        (d.id, d.title, d.text, d.metadata) for d in again
    ]
    calls.clear()
    early = book_files.EarlyReads([path], "auto")
    early.wait()  # the early read done, then the file changes
    path.write_text(f"第一章 起\n{CHAPTERS[2]}\n第二章 承\n{CHAPTERS[1]}", "utf-8")
    changed = [
        d
        for d in BookIngest(BookService(lib), early=early).documents([path])
        if isinstance(d, Document)
    ]
    assert changed[0].text.startswith(CHAPTERS[2][:20])
    assert calls == [str(path), str(path)]  # the early read, then the file as it is now
