"""A chapter read over several pages and checked as one text (discovery's Legado stage:
one suspect, its ``metadata.pages`` the pages' URLs, the first its own): confirming its
match files every page as its own URL of the book's case, numbered; confirming again or
``sync`` adds nothing; a page another open case already holds stays there; withdrawing
the verdict takes every page out; the notice facts say "pages 1–N together" for each
page."""

from __future__ import annotations

from pathlib import Path

from casekit import add_match, library_store

from tracker.cases import CaseService
from tracker.cases.facts import notice_facts
from tracker.cases.sqlite_store import SqliteCaseStore
from tracker.common.records import Mother
from tracker.store import SqliteStore

SITE = "http://127.0.0.1:8001/book/9"
PAGES = [f"{SITE}/2.html", f"{SITE}/2_2.html", f"{SITE}/2_3.html"]


def _library(tmp_path: Path) -> SqliteStore:
    lib = library_store(tmp_path / "lib")
    for n in (1, 2):
        lib.put_mother(
            Mother(
                id=f"b9-{n:04d}",
                title=f"《夜航》第{n}章",
                text="正文" * 50,
                metadata={
                    "book_id": "b9",
                    "book_title": "夜航",
                    "chapter": f"第{n}章 起航" if n == 1 else f"第{n}章 雾中",
                    "chapter_index": n,
                },
            )
        )
    add_match(lib, "s1", "b9-0001", f"{SITE}/1.html")
    add_match(lib, "s2", "b9-0002", PAGES[0])
    suspect = lib.get_suspect("s2")
    suspect.metadata["pages"] = list(PAGES)
    lib.put_suspect(suspect)
    return lib


def test_confirming_a_chapter_read_over_pages_files_each_page(tmp_path: Path) -> None:
    lib = _library(tmp_path)
    svc = CaseService(SqliteCaseStore(tmp_path / "cases.sqlite3", blob_dir=tmp_path / "b"))
    svc.apply_verdict(lib, "s2", "b9-0002", "confirmed", who="alice")
    result = svc.apply_verdict(lib, "s1", "b9-0001", "confirmed", who="alice")
    case = result.case
    assert case is not None and case.work == "b9" and case.work_title == "夜航"
    assert [(u.url, u.chapter_index, u.page) for u in case.urls] == [
        (f"{SITE}/1.html", 1, 0),
        (PAGES[0], 2, 1),
        (PAGES[1], 2, 2),
        (PAGES[2], 2, 3),
    ]
    assert {u.suspect_id for u in case.urls[1:]} == {"s2"}
    again = svc.apply_verdict(lib, "s2", "b9-0002", "confirmed", who="bob")
    assert again.case is not None and len(again.case.urls) == 4
    assert svc.sync(lib) == 0 and len(svc.list_cases()) == 1

    facts = notice_facts([svc.get(case.id)], lib)
    together = {f.url: f.together for f in facts.urls}
    assert together[f"{SITE}/1.html"] == ()
    assert all(together[p] == tuple(PAGES) for p in PAGES)
    assert [f.page for f in facts.urls] == [0, 1, 2, 3]

    withdrawn = svc.apply_verdict(lib, "s2", "b9-0002", "dismissed", who="alice")
    assert withdrawn.case is not None
    assert [u.url for u in withdrawn.case.urls] == [f"{SITE}/1.html"]
    removed = [e.data["url"] for e in svc.history(case.id) if e.kind == "url_removed"]
    assert removed == PAGES


def test_a_page_held_by_another_open_case_stays_there(tmp_path: Path) -> None:
    lib = _library(tmp_path)
    svc = CaseService(SqliteCaseStore(tmp_path / "cases.sqlite3", blob_dir=tmp_path / "b"))
    # 2_2.html was filed first as a page of another work's case (a verdict on it alone).
    lib.put_mother(Mother(id="loose", title="散篇", text="正文" * 50))
    add_match(lib, "s9", "loose", PAGES[1])
    held = svc.apply_verdict(lib, "s9", "loose", "confirmed", who="alice").case
    assert held is not None
    book = svc.apply_verdict(lib, "s2", "b9-0002", "confirmed", who="alice").case
    assert book is not None and book.id != held.id
    assert [u.url for u in book.urls] == [PAGES[0], PAGES[2]]
    assert [u.url for u in svc.get(held.id).urls] == [PAGES[1]]  # one URL, one open case
