"""Books in the web admin and the REST API (issue #36), on a real system (Flask test
client, in-process worker, embedded Redis): a small book ingested through
``BookService.ingest_book``; the library lists it with its figures and finds it by
title and author; its page and ``GET /api/v1/books/<id>`` show the chapters × sites
grid, which follows a match from pirated to confirmed to noticed to removed; every
match names book and chapter (match list, evidence view, API, CSV/JSON exports,
analytics); rename through the form and the API; delete after the confirmation page;
roles (a viewer can neither rename nor delete); the upload of a book file as a job;
the OpenAPI document."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from html import unescape
from typing import Any

import pytest
from textgen import work
from webkit import WebSystem, check_text, csrf, job_id_of, wait_job, web_system

from tracker.books.service import BookService
from tracker.books.types import ParsedBook, ParsedChapter
from web.ids import encode_id

system = web_system()

BOOK_ID = "wuxiang"
TITLE = "雾乡旧事"
AUTHOR = "林照"
HEADINGS = ["第一章 雾起", "第二章 渡口", "第三章 灯下"]
TEXTS = [work(3601 + i, 24) for i in range(3)]
SITE = "pirate.example:8080"  # a port off the default: part of the site
PAGE = f"http://{SITE}/book/2.html"


def auth(system: WebSystem, role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {system.tokens[role]}"}


def book_path(book_id: str = BOOK_ID) -> str:
    return f"/api/v1/books/{encode_id(book_id)}"


def page_path(book_id: str = BOOK_ID) -> str:
    return f"/library/books/{encode_id(book_id)}"


@pytest.fixture(scope="module")
def book(system: WebSystem) -> str:
    """The book of three chapters, ingested as ``yinji ingest`` would."""
    parsed = ParsedBook(
        title=TITLE,
        author=AUTHOR,
        source="wuxiang.txt",
        chapters=[
            ParsedChapter(i + 1, h, t) for i, (h, t) in enumerate(zip(HEADINGS, TEXTS, strict=True))
        ],
    )
    report, made = BookService(system.library).ingest_book(parsed, book_id=BOOK_ID)
    assert not report.errors and made[0].book.id == BOOK_ID
    return BOOK_ID


@pytest.fixture(scope="module")
def copied(system: WebSystem, book: str) -> dict[str, Any]:
    """Chapter 2 pasted as found on a pirate page (a submitted text with its URL)."""
    status = check_text(system.client("analyst"), TEXTS[1], title="盗版 第2章", url=PAGE)
    return status


def grid_cell(system: WebSystem, index: int, site: str = SITE) -> dict[str, Any] | None:
    body = system.client().get(book_path(), headers=auth(system, "viewer")).get_json()
    row = next(c for c in body["grid"]["chapters"] if c["index"] == index)
    return row["cells"].get(site)


def the_match(system: WebSystem) -> dict[str, Any]:
    body = (
        system.client()
        .get(f"/api/v1/matches?work={BOOK_ID}-0002", headers=auth(system, "viewer"))
        .get_json()
    )
    assert body["total"] == 1, body
    return body["matches"][0]


# --- the library and the book's page ----------------------------------------------------------
def test_library_lists_the_book_and_finds_it_by_title_and_author(
    system: WebSystem, book: str
) -> None:
    client = system.client("viewer")
    html = client.get("/library/").get_data(as_text=True)
    assert f"《{TITLE}》" in html and AUTHOR in html
    assert 'id="library-books"' in html
    # The chapter works are listed as works too, named by book and chapter.
    assert f"《{TITLE}》{HEADINGS[0]}" in html
    assert f"《{TITLE}》" in client.get(f"/library/?q={AUTHOR}").get_data(as_text=True)
    assert f"《{TITLE}》" in client.get("/library/books/?q=雾乡").get_data(as_text=True)
    assert f"《{TITLE}》" not in client.get("/library/books/?q=没有这本").get_data(as_text=True)
    # The viewer sees no upload form (analysts do).
    assert 'id="book-upload"' not in html
    assert 'id="book-upload"' in system.client("analyst").get("/library/").get_data(as_text=True)

    listed = system.client().get("/api/v1/books", headers=auth(system, "viewer")).get_json()
    mine = next(b for b in listed if b["id"] == BOOK_ID)
    assert (mine["title"], mine["author"], mine["chapters"]) == (TITLE, AUTHOR, 3)
    assert mine["characters"] == sum(len(t) for t in TEXTS)
    found = system.client().get("/api/v1/books?q=林照", headers=auth(system, "viewer"))
    assert [b["id"] for b in found.get_json()] == [BOOK_ID]


def test_book_page_shows_details_and_chapters(system: WebSystem, book: str) -> None:
    response = system.client("viewer").get(page_path())
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    for heading in HEADINGS:
        assert heading in html
    assert "wuxiang.txt" in html
    assert 'id="book-edit"' not in html  # a viewer has no edit form
    assert 'id="book-edit"' in system.client("analyst").get(page_path()).get_data(as_text=True)
    shown = system.client().get(book_path(), headers=auth(system, "viewer")).get_json()
    assert [(c["index"], c["title"], c["work_id"]) for c in shown["chapters"]] == [
        (i + 1, h, f"{BOOK_ID}-{i + 1:04d}") for i, h in enumerate(HEADINGS)
    ]
    assert system.client("viewer").get(page_path("no-such-book")).status_code == 404


# --- the grid follows a copy from the match to the removal -------------------------------------
def test_grid_follows_a_copy_from_pirated_to_removed(
    system: WebSystem, copied: dict[str, Any]
) -> None:
    cell = grid_cell(system, 2)
    assert cell is not None and cell["state"] == "pirated", cell
    assert (cell["matches"], cell["pending"], cell["confirmed"]) == (1, 1, 0)
    assert cell["urls"] == [PAGE]
    assert grid_cell(system, 1) is None and grid_cell(system, 3) is None

    listed = system.client().get("/api/v1/books", headers=auth(system, "viewer")).get_json()
    copies = next(b for b in listed if b["id"] == BOOK_ID)["copies"]
    assert copies == {
        "chapters_pirated": 1,
        "sites_confirmed": 0,
        "sites_pending": 1,
        "sites": [SITE],
    }

    match = the_match(system)
    confirmed = system.client().patch(
        f"/api/v1/matches/{match['ref']}",
        headers=auth(system, "analyst"),
        json={"verdict": "confirmed"},
    )
    assert confirmed.status_code == 200, confirmed.get_data(as_text=True)
    case_id = confirmed.get_json()["case_id"]
    assert case_id
    cell = grid_cell(system, 2)
    assert cell is not None and cell["state"] == "confirmed"
    assert cell["case_ids"] == [case_id]
    html = system.client("viewer").get(page_path()).get_data(as_text=True)
    assert 'data-state="confirmed"' in html and SITE in html and case_id in html
    lib = system.client("viewer").get("/library/").get_data(as_text=True)
    assert "1 个已确认 / 0 个待审" in lib  # sites: confirmed / pending (zh by default)
    # the case page names book and chapter (not bare work ids), zh and en
    shown = unescape(system.client("viewer").get(f"/cases/{case_id}").get_data(as_text=True))
    assert f"《{TITLE}》" in shown and AUTHOR in shown
    assert f'<div class="chapter">《{TITLE}》{HEADINGS[1]}</div>' in shown
    en = system.client("viewer")
    en.get("/matches?lang=en")
    shown_en = unescape(en.get(f"/cases/{case_id}").get_data(as_text=True))
    assert f'<div class="chapter">"{TITLE}", chapter 2 ({HEADINGS[1]})</div>' in shown_en

    def move(to: str) -> None:
        r = system.client().post(
            f"/api/v1/cases/{case_id}/transitions",
            headers=auth(system, "analyst"),
            json={"to": to, "note": "test"},
        )
        assert r.status_code == 200, r.get_data(as_text=True)

    move("notice_sent")
    cell = grid_cell(system, 2)
    assert cell is not None and cell["state"] == "noticed"
    move("removed")
    cell = grid_cell(system, 2)
    assert cell is not None and cell["state"] == "removed"
    assert 'data-state="removed"' in system.client("viewer").get(page_path()).get_data(as_text=True)


# --- every match names its book and chapter --------------------------------------------------
def test_matches_name_book_and_chapter_everywhere(
    system: WebSystem, copied: dict[str, Any]
) -> None:
    match = the_match(system)
    assert (match["book_id"], match["book_title"], match["chapter"], match["chapter_index"]) == (
        BOOK_ID,
        TITLE,
        HEADINGS[1],
        2,
    )
    one = system.client().get(f"/api/v1/matches/{match['ref']}", headers=auth(system, "viewer"))
    assert one.get_json()["chapter"] == HEADINGS[1]

    zh = system.client("viewer")
    label = f"《{TITLE}》{HEADINGS[1]}"
    assert label in zh.get("/matches").get_data(as_text=True)
    detail = zh.get(f"/matches/{match['ref']}").get_data(as_text=True)
    assert "书与章节" in detail and label in detail
    en = system.client("viewer")
    en.get("/matches?lang=en")
    detail_en = unescape(en.get(f"/matches/{match['ref']}").get_data(as_text=True))
    assert f'"{TITLE}", chapter 2 ({HEADINGS[1]})' in detail_en
    assert f'"{TITLE}", chapter 2' in unescape(en.get("/matches").get_data(as_text=True))

    rows = list(
        csv.DictReader(
            io.StringIO(zh.get("/exports/matches.csv").get_data(as_text=True).lstrip("\ufeff"))
        )
    )
    row = next(r for r in rows if r["mother_id"] == f"{BOOK_ID}-0002")
    assert (row["book_id"], row["book_title"], row["chapter"], row["chapter_index"]) == (
        BOOK_ID,
        TITLE,
        HEADINGS[1],
        "2",
    )
    exported = json.loads(zh.get("/exports/matches.json").get_data(as_text=True))
    item = next(m for m in exported["matches"] if m["mother_id"] == f"{BOOK_ID}-0002")
    assert (item["book_title"], item["chapter_index"]) == (TITLE, 2)

    analytics = zh.get("/analytics").get_data(as_text=True)
    assert 'id="top-books"' in analytics and f"《{TITLE}》" in analytics


# --- rename, roles, delete ---------------------------------------------------------------------
def test_rename_through_the_form_and_the_api_and_roles(system: WebSystem, book: str) -> None:
    viewer = system.client("viewer")
    refused = viewer.post(
        f"{page_path()}/edit", data={"csrf_token": csrf(viewer, "/library/"), "title": "偷改"}
    )
    assert refused.status_code == 403
    assert (
        system.client()
        .patch(book_path(), headers=auth(system, "viewer"), json={"title": "偷改"})
        .status_code
        == 403
    )

    analyst = system.client("analyst")
    no_csrf = analyst.post(f"{page_path()}/edit", data={"title": "没有令牌"})
    assert no_csrf.status_code in (400, 403)
    saved = analyst.post(
        f"{page_path()}/edit",
        data={
            "csrf_token": csrf(analyst, page_path()),
            "title": "《雾乡新事》",
            "author": AUTHOR,
            "series": "雾乡三部曲",
            "isbn": "978-7-02-000000-0",
            "language": "zh",
        },
    )
    assert saved.status_code == 302
    page = analyst.get(page_path()).get_data(as_text=True)
    assert "《雾乡新事》" in page and "雾乡三部曲" in page and "978-7-02-000000-0" in page
    # The chapters follow: their works' titles and book fields.
    mother = system.store.get_mother(f"{BOOK_ID}-0001")
    assert mother.title == f"《雾乡新事》{HEADINGS[0]}"
    assert mother.metadata["book_title"] == "雾乡新事"

    blank = analyst.post(
        f"{page_path()}/edit", data={"csrf_token": csrf(analyst, page_path()), "title": "  "}
    )
    assert blank.status_code == 302
    assert "title: must not be blank" in analyst.get(page_path()).get_data(as_text=True)

    renamed = system.client().patch(
        book_path(), headers=auth(system, "analyst"), json={"title": TITLE, "author": "林照 著"}
    )
    assert renamed.status_code == 200, renamed.get_data(as_text=True)
    assert (renamed.get_json()["title"], renamed.get_json()["author"]) == (TITLE, "林照 著")
    assert renamed.get_json()["chapters"] == 3
    assert system.store.get_mother(f"{BOOK_ID}-0003").metadata["author"] == "林照 著"
    bad = system.client().patch(book_path(), headers=auth(system, "analyst"), json={"pages": 3})
    assert bad.status_code == 400 and "pages" in bad.get_json()["error"]
    missing = system.client().patch(
        book_path("nope"), headers=auth(system, "analyst"), json={"title": "x"}
    )
    assert missing.status_code == 404


def test_delete_needs_admin_and_a_confirmation(system: WebSystem) -> None:
    parsed = ParsedBook(
        title="短命之书",
        chapters=[
            ParsedChapter(1, "第一章 来", work(3701, 8)),
            ParsedChapter(2, "第二章 去", work(3702, 8)),
        ],
    )
    BookService(system.library).ingest_book(parsed, book_id="doomed")
    analyst = system.client("analyst")
    assert analyst.get(f"{page_path('doomed')}/delete").status_code == 403
    assert (
        system.client().delete(book_path("doomed"), headers=auth(system, "analyst")).status_code
        == 403
    )
    admin = system.client("admin")
    confirm = admin.get(f"{page_path('doomed')}/delete")
    assert confirm.status_code == 200 and "短命之书" in confirm.get_data(as_text=True)
    token = csrf(admin, f"{page_path('doomed')}/delete")
    unconfirmed = admin.post(f"{page_path('doomed')}/delete", data={"csrf_token": token})
    assert unconfirmed.status_code == 400
    assert system.store.get_mother("doomed-0001")  # nothing deleted
    done = admin.post(f"{page_path('doomed')}/delete", data={"csrf_token": token, "confirm": "yes"})
    assert done.status_code == 302
    assert admin.get(page_path("doomed")).status_code == 404
    assert system.store.count_mothers(search="doomed-") == 0

    BookService(system.library).ingest_book(parsed, book_id="doomed2")
    gone = system.client().delete(book_path("doomed2"), headers=auth(system, "admin"))
    assert gone.status_code == 200
    assert gone.get_json() == {"deleted": "doomed2", "works_deleted": 2, "works_missing": []}
    assert (
        system.client().delete(book_path("doomed2"), headers=auth(system, "admin")).status_code
        == 404
    )


# --- upload a book file: a job makes the book -----------------------------------------------
def book_file() -> bytes:
    chapters = [("第一章 启程", work(3801, 10)), ("第二章 夜航", work(3802, 10))]
    body = "《海上书》\n作者：周望\n\n" + "\n".join(f"{h}\n{t}\n" for h, t in chapters)
    return body.encode("gb18030")


def test_upload_a_book_through_the_api_and_the_library_page(system: WebSystem) -> None:
    pytest.importorskip("tracker.books.parse")  # the book reader (tracker.books.parse)
    api = system.client()
    refused = api.post(
        "/api/v1/books",
        headers=auth(system, "viewer"),
        data={"files": (io.BytesIO(book_file()), "haishang.txt")},
        content_type="multipart/form-data",
    )
    assert refused.status_code == 403
    response = api.post(
        "/api/v1/books",
        headers=auth(system, "analyst"),
        data={
            "files": [
                (io.BytesIO(book_file()), "haishang.txt"),
                (io.BytesIO(b"id,text\n"), "notes.csv"),
            ]
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 202, response.get_data(as_text=True)
    body = response.get_json()
    assert body["chapters"] == 2
    assert [(b["id"], b["title"], b["chapters"]) for b in body["books"]] == [
        ("haishang", "海上书", 2)
    ]
    assert [e["source"] for e in body["errors"]] == ["notes.csv"]
    status = wait_job(api, body["job_id"], headers=auth(system, "analyst"))
    assert status["state"] == "SUCCESS" and status["result"]["ingested"] == 2, status
    shown = api.get(book_path("haishang"), headers=auth(system, "viewer")).get_json()
    assert [c["title"] for c in shown["chapters"]] == ["第一章 启程", "第二章 夜航"]
    assert system.store.get_mother("haishang-0002").metadata["chapter_index"] == 2

    # A zip of chapter files is one book, its chapters in file order.
    chapters = io.BytesIO()
    with zipfile.ZipFile(chapters, "w") as zf:
        zf.writestr("001.txt", "第一章 春\n" + work(3811, 8))
        zf.writestr("002.txt", "第二章 夏\n" + work(3812, 8))
    chapters.seek(0)
    zipped = api.post(
        "/api/v1/books",
        headers=auth(system, "analyst"),
        data={"files": (chapters, "siji.zip")},
        content_type="multipart/form-data",
    )
    assert zipped.status_code == 202, zipped.get_data(as_text=True)
    assert [(b["id"], b["chapters"]) for b in zipped.get_json()["books"]] == [("siji", 2)]
    assert (
        wait_job(api, zipped.get_json()["job_id"], headers=auth(system, "analyst"))["result"][
            "ingested"
        ]
        == 2
    )
    shown = api.get(book_path("siji"), headers=auth(system, "viewer")).get_json()
    assert [c["work_id"] for c in shown["chapters"]] == ["siji-0001", "siji-0002"]

    nothing = api.post(
        "/api/v1/books",
        headers=auth(system, "analyst"),
        data={"files": (io.BytesIO(b"id,text\n"), "notes.csv")},
        content_type="multipart/form-data",
    )
    assert nothing.status_code == 400 and "notes.csv" in nothing.get_json()["error"]

    page = system.client("analyst")
    form = page.post(
        "/library/books/upload",
        data={
            "csrf_token": csrf(page, "/library/"),
            "files": (io.BytesIO(book_file()), "haishang-2.txt"),
        },
        content_type="multipart/form-data",
    )
    assert form.status_code == 302
    assert wait_job(page, job_id_of(form))["state"] == "SUCCESS"
    followed = page.get(form.headers["Location"]).get_data(as_text=True)
    assert "1 本书，2 章" in followed
    assert page.get(page_path("haishang-2")).status_code == 200


def epub_file() -> bytes:
    """A small EPUB 3 of two chapters, made with ebooklib (navigation titles)."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("urn:yinji:test-epub")
    book.set_title("山居笔记")
    book.set_language("zh-CN")
    book.add_author("沈岚")
    chapters = []
    for i, name in enumerate(("第一章 山门", "第二章 溪声"), 1):
        c = epub.EpubHtml(title=name, file_name=f"c{i}.xhtml", lang="zh")
        c.content = f"<html><body><h2>{name}</h2><p>{work(3900 + i, 8)}</p></body></html>"
        chapters.append(c)
        book.add_item(c)
    book.toc = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *chapters]
    out = io.BytesIO()
    epub.write_epub(out, book)
    return out.getvalue()


def test_an_epub_on_the_works_upload_form_is_a_book(system: WebSystem) -> None:
    pytest.importorskip("tracker.books.parse")
    pytest.importorskip("ebooklib")
    page = system.client("analyst")
    response = page.post(
        "/library/upload",
        data={
            "csrf_token": csrf(page, "/library/upload"),
            "files": [
                (io.BytesIO(epub_file()), "shanju.epub"),
                (io.BytesIO(work(3910, 6).encode()), "loose-note.txt"),
            ],
        },
        content_type="multipart/form-data",
    )
    assert response.status_code == 302, response.get_data(as_text=True)[:500]
    status = wait_job(page, job_id_of(response))
    assert status["state"] == "SUCCESS" and status["result"]["ingested"] == 3, repr(status)
    followed = page.get(response.headers["Location"]).get_data(as_text=True)
    assert "1 本书，2 章" in followed
    shown = page.get(book_path("shanju"), headers=auth(system, "viewer")).get_json()
    assert (shown["title"], shown["author"]) == ("山居笔记", "沈岚")
    assert [c["title"] for c in shown["chapters"]] == ["第一章 山门", "第二章 溪声"]
    assert system.store.get_mother("loose-note").title  # the other file: a work as before


# --- the OpenAPI document ---------------------------------------------------------------------
def test_openapi_documents_the_book_endpoints(system: WebSystem) -> None:
    doc = system.client().get("/api/v1/openapi.json").get_json()
    paths = doc["paths"]
    assert set(paths["/api/v1/books"]) >= {"get", "post"}
    assert set(paths["/api/v1/books/{id}"]) >= {"get", "patch", "delete"}
    assert "/api/v1/watch/books" in paths  # the monitored pirate books moved there
    book = doc["components"]["schemas"]["Book"]
    assert {"id", "title", "author", "chapters", "grid"} <= set(book["properties"])
    from openapi_spec_validator import validate

    validate(doc)
