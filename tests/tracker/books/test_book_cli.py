"""``yinji ingest`` of books and ``yinji book list|show|rename|delete|migrate`` through
the real command (click's runner, in process), and what ``check`` then says: the
``--json`` match fields and the table naming 《书名》 and chapter (issue #36).

The book reader of ``tracker.books.parse`` is stood in for in most tests (it is tested
on its own, on the bookparse side); the last test uses the real one on a GBK pirate
download when it is there."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from clikit import yinji_here
from textgen import work

import tracker.books.files as book_files
import tracker.books.service as book_service
from tracker.books.types import BookFileError, ParsedBook, ParsedChapter
from tracker.documents.readers import Document
from tracker.library import Library
from tracker.plumbing.config import Settings

pytestmark = pytest.mark.slow  # each command starts the library's embedded Redis

CHAPTERS = [work(4400 + i, 30) for i in range(3)]
HEADINGS = ["第一回 灵根孕育源流出", "第二回 悟彻菩提真妙理", "第三回 四海千山皆拱伏"]


def _reader(name: str, data: bytes) -> ParsedBook:
    """A stand-in for tracker.books.parse.read_book: chapters separated by blank lines,
    each starting with its heading line; 《书名》 on the first line."""
    text = data.decode("utf-8")
    head, _, body = text.partition("\n")
    if "BROKEN" in head:
        raise BookFileError(f"{name}: broken spine (chapter 2 missing)")
    parts = [p.partition("\n") for p in body.split("\n\n") if p.strip()]
    chapters = [ParsedChapter(i + 1, p[0], p[2]) for i, p in enumerate(parts) if p[2]]
    warnings = []
    if len(chapters) < 2:
        chapters = [ParsedChapter(1, "", body)]
        warnings = ["no chapter headings: one chapter"]
    return ParsedBook(
        title=head.strip("《》"), author="吴承恩", chapters=chapters, source=name, warnings=warnings
    )


def _files_reader(name: str, files: list[tuple[str, bytes]]) -> ParsedBook:
    chapters = []
    for i, (_fname, data) in enumerate(files, 1):
        heading, _, text = data.decode("utf-8").partition("\n")
        chapters.append(ParsedChapter(i, heading, text))
    return ParsedBook(title=Path(name).name, chapters=chapters, source=name)


@pytest.fixture(autouse=True)
def _stand_in_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(book_files, "book_from_file", _reader)
    monkeypatch.setattr(book_service, "book_from_chapter_files", _files_reader)


def _book_file(path: Path, title: str = "西游记", n: int = 3) -> Path:
    body = "\n\n".join(f"{HEADINGS[i]}\n{CHAPTERS[i]}" for i in range(n))
    path.write_text(f"《{title}》\n{body}", "utf-8")
    return path


def test_ingest_a_book_then_list_show_check_rename_delete(tmp_path: Path) -> None:
    data = tmp_path / "data"
    r = yinji_here(data, "ingest", str(_book_file(tmp_path / "xiyouji.txt")))
    assert r.exit_code == 0, r.output
    assert "made 1 book, 3 chapters" in r.stderr
    assert "book xiyouji: 《西游记》 吴承恩, 3 chapters" in r.stderr
    assert "ingested 3 documents" in r.stderr

    r = yinji_here(data, "book", "list", "--json")
    assert r.exit_code == 0, r.output
    (listed,) = json.loads(r.stdout)
    assert {k: listed[k] for k in ("id", "title", "author", "chapters")} == {
        "id": "xiyouji",
        "title": "西游记",
        "author": "吴承恩",
        "chapters": 3,
    }
    # the time as the API writes every time (tracker.common.timefmt.iso_utc): UTC, ms, "Z"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", listed["created_at"])
    r = yinji_here(data, "book", "list")
    assert "xiyouji" in r.stdout and "《西游记》 — 吴承恩" in r.stdout

    r = yinji_here(data, "book", "show", "xiyouji", "--json")
    shown = json.loads(r.stdout)
    assert shown["id"] == "xiyouji" and shown["title"] == "西游记"
    assert shown["chapters"][1] == {
        "index": 2,
        "title": HEADINGS[1],
        "work_id": "xiyouji-0002",
        "characters": len(CHAPTERS[1]),
    }
    r = yinji_here(data, "book", "show", "xiyouji")
    assert "xiyouji-0003" in r.stdout and HEADINGS[2] in r.stdout

    (tmp_path / "copy.txt").write_text(work(1, 5) + CHAPTERS[1][100:1000], "utf-8")
    r = yinji_here(data, "check", "--json", "--no-save", str(tmp_path / "copy.txt"))
    assert r.exit_code == 0, r.output
    (m,) = json.loads(r.stdout)["matches"]
    assert (m["mother_id"], m["book_id"], m["book_title"]) == ("xiyouji-0002", "xiyouji", "西游记")
    assert (m["chapter"], m["chapter_index"]) == (HEADINGS[1], 2)

    r = yinji_here(data, "book", "rename", "xiyouji", "--title", "《西游记（校注）》")
    assert r.exit_code == 0, r.output
    r = yinji_here(data, "check", "--no-save", str(tmp_path / "copy.txt"))
    assert f"《西游记（校注）》{HEADINGS[1]}" in r.stdout
    assert "<- chapter " in r.stdout

    r = yinji_here(data, "book", "show", "nope")
    assert r.exit_code == 1 and "no book with id 'nope'" in r.stderr
    r = yinji_here(data, "book", "rename", "nope", "--author", "x")
    assert r.exit_code == 1 and "'nope'" in r.stderr
    r = yinji_here(data, "book", "delete", "xiyouji", "nope")
    assert r.exit_code == 1
    assert "deleted book xiyouji 《西游记（校注）》 and 3 chapter works" in r.stderr
    assert "no book with id 'nope'" in r.stderr
    assert json.loads(yinji_here(data, "book", "list", "--json").stdout) == []
    assert yinji_here(data, "list").stderr.startswith("0 works")


def test_book_flag_folder_and_bad_files(tmp_path: Path) -> None:
    data = tmp_path / "data"
    folder = tmp_path / "三国演义"
    folder.mkdir()
    for i in range(3):
        (folder / f"{i + 1:03d}.txt").write_text(f"第{i + 1}回\n{CHAPTERS[i]}", "utf-8")
    (tmp_path / "essay.txt").write_text("《散文集》\n" + CHAPTERS[0], "utf-8")
    (tmp_path / "bad.txt").write_text("《BROKEN》\n第一回\n第二回\n" + CHAPTERS[2], "utf-8")
    essay, bad = str(tmp_path / "essay.txt"), str(tmp_path / "bad.txt")
    r = yinji_here(data, "ingest", "--book", str(folder), essay, bad)
    assert r.exit_code == 0, r.output
    assert "made 2 books, 4 chapters" in r.stderr
    assert "essay.txt: no chapter headings: one chapter" in r.stderr
    assert "bad.txt: broken spine (chapter 2 missing)" in r.stderr
    books = {b["id"]: b for b in json.loads(yinji_here(data, "book", "list", "--json").stdout)}
    assert books["三国演义"]["chapters"] == 3 and books["essay"]["chapters"] == 1
    shown = json.loads(yinji_here(data, "book", "show", "三国演义", "--json").stdout)
    assert [c["title"] for c in shown["chapters"]] == ["第1回", "第2回", "第3回"]
    r = yinji_here(data, "ingest", "--book", "--as-works", str(tmp_path / "essay.txt"))
    assert r.exit_code == 2 and "exclude each other" in r.output


def test_an_epub_is_always_a_book(tmp_path: Path) -> None:
    """(The stand-in reader reads the bytes as text; the real EPUB reader is
    tracker.books.epub's.) Even one heading: a book; --as-works refuses it, naming it."""
    data = tmp_path / "data"
    epub = _book_file(tmp_path / "hongloumeng.epub", "红楼梦", n=1)
    r = yinji_here(data, "ingest", "--as-works", str(epub))
    assert r.exit_code == 1
    assert "hongloumeng.epub: an .epub is a book: ingest it without --as-works" in r.stderr
    r = yinji_here(data, "ingest", str(epub))
    assert r.exit_code == 0, r.output
    assert "made 1 book, 1 chapter" in r.stderr
    assert "hongloumeng.epub: no chapter headings: one chapter" in r.stderr


def test_book_migrate_by_hand(tmp_path: Path, redis_client: object) -> None:
    data = tmp_path / "data"
    # A library stored before books: chapters with work/work_title metadata.
    r = yinji_here(data, "ingest", str(_legacy_jsonl(tmp_path)))
    assert r.exit_code == 0, r.output
    # (the ingest above grouped them already; undo that to stand for an old library)
    with Library.open(Settings(data_dir=data)) as lib:
        from tracker.books.service import MIGRATED_META
        from tracker.books.store import book_store_for

        book_store_for(lib.store).delete_book("shuihu")
        lib.store.delete_meta(MIGRATED_META)
        for m in lib.store.list_mothers(with_text=False):
            meta = {k: m.metadata[k] for k in ("work", "work_title")}
            lib.store.update_mother_metadata(m.id, meta)
    r = yinji_here(data, "book", "list", "--json")  # migrates by itself, once
    assert r.exit_code == 0, r.output
    assert [b["id"] for b in json.loads(r.stdout)] == ["shuihu"]
    assert "note: this library was stored before books: 1 books made" in r.stderr
    with Library.open(Settings(data_dir=data)) as lib:
        book_store_for(lib.store).delete_book("shuihu")
    r = yinji_here(data, "book", "migrate", "--json")  # by hand: what is missing
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["books_created"] == 1
    assert "1 books created" in r.stderr
    shown = json.loads(yinji_here(data, "book", "show", "shuihu", "--json").stdout)
    assert [c["work_id"] for c in shown["chapters"]] == ["sh-1", "sh-2"]
    r = yinji_here(data, "book", "migrate")
    assert "0 books created, 0 updated, 0 chapters labelled" in r.stderr


def _legacy_jsonl(tmp_path: Path) -> Path:
    rows = [
        {"id": "sh-2", "title": "《水浒传》第二回", "text": CHAPTERS[1], "work": "shuihu",
         "work_title": "水浒传"},
        {"id": "sh-1", "title": "《水浒传》第一回", "text": CHAPTERS[0], "work": "shuihu",
         "work_title": "水浒传"},
    ]  # fmt: skip
    path = tmp_path / "legacy.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), "utf-8")
    return path


def test_real_reader_gbk_pirate_download(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With tracker.books.parse merged: a GBK whole-book TXT under a pirate banner."""
    parse = pytest.importorskip("tracker.books.parse")
    monkeypatch.setattr(book_files, "book_from_file", parse.read_book)
    text = "本书来自 www.example-pirate.com 免费小说下载\n《西游记》\n作者：吴承恩\n" + "\n".join(
        f"{h}\n{c}" for h, c in zip(HEADINGS, CHAPTERS, strict=True)
    )
    (tmp_path / "xyj.txt").write_bytes(text.encode("gbk"))
    data = tmp_path / "data"
    r = yinji_here(data, "ingest", str(tmp_path / "xyj.txt"))
    assert r.exit_code == 0, r.output
    assert "made 1 book, 3 chapters" in r.stderr
    shown = json.loads(yinji_here(data, "book", "show", "xyj", "--json").stdout)
    assert shown["title"] == "西游记"
    assert [c["title"] for c in shown["chapters"]] == HEADINGS
    with Library.open(Settings(data_dir=data)) as lib:
        res = next(lib.check([Document(id="s", text=CHAPTERS[2][:900])], save=False))
    assert res.matches[0].book is not None and res.matches[0].book.chapter_index == 3
