"""A whole book uploaded on the works form (作品库 → upload works) becomes a book of
chapters, as ``yinji ingest`` makes it, by the ingest job on the in-process worker
(``workers.book_uploads``): detected by itself (auto), forced (one book per file), or
kept as one work (separate works). The job page says what it made."""

from __future__ import annotations

import io
from html import unescape

import pytest
from textgen import work
from webkit import WebSystem, csrf, job_id_of, wait_job, web_system

from tracker.books.service import BookService
from tracker.store import NotFound
from workers import jobs

system = web_system()

HEADINGS = [
    "第一回 宴桃园豪杰三结义 斩黄巾英雄首立功",
    "第二回 张翼德怒鞭督邮 何国舅谋诛宦竖",
    "第三回 议温明董卓叱丁原 馈金珠李肃说吕布",
]


def pirate_download(seed: int) -> bytes:
    """A whole book as pirate sites hand it out, in GBK: the site's banner and
    disclaimer on top, ``正文`` headings with update lines, Windows line ends, the
    disclaimer again at the end (the layout of a real download of 三国演义)."""
    lines = [
        "    [三国演义 / 罗贯中 著 ]",
        "    作品仅供读者预览,请在下载24小时内删除，不得用作商业用途；为了让作者 罗贯中能提供更多"
        "更好的作品，请您购买请购买正版图书!",
        "",
        " ------章节内容开始-------",
        "",
    ]
    for i, heading in enumerate(HEADINGS):
        lines += [f"    正文 {heading}", f"    更新时间:2007-11-16 7:55:5{i} 本章字数:4804", ""]
        lines += [work(seed + i, 6), ""]
    lines += ["作品仅供读者预览,请在下载24小时内删除，不得用作商业用途；请购买正版图书!"]
    return "\r\n".join(lines).encode("gbk")


def upload(system: WebSystem, files: list[tuple[bytes, str]], mode: str | None) -> str:
    page = system.client("analyst")
    data: dict[str, object] = {
        "csrf_token": csrf(page, "/library/upload"),
        "files": [(io.BytesIO(body), name) for body, name in files],
    }
    if mode is not None:
        data["book_mode"] = mode
    response = page.post("/library/upload", data=data, content_type="multipart/form-data")
    assert response.status_code == 302, response.get_data(as_text=True)[:500]
    return job_id_of(response)


def test_the_form_offers_the_three_ways(system: WebSystem) -> None:
    form = system.client("analyst").get("/library/upload").get_data(as_text=True)
    assert 'name="book_mode" value="auto" checked' in form
    assert 'value="book"' in form and 'value="works"' in form
    assert "整本书" in form and "每个文件一本书" in form
    english = system.client("analyst").get("/library/upload?lang=en").get_data(as_text=True)
    assert "Separate works: one file, one work" in unescape(english)


def test_a_gbk_pirate_download_becomes_a_book_by_itself(system: WebSystem) -> None:
    job_id = upload(system, [(pirate_download(4100), "sanguo.txt")], None)
    status = wait_job(system.client("analyst"), job_id)
    assert status["state"] == "SUCCESS", status
    result = status["result"]
    assert result["ingested"] == 3 and result["errors"] == []
    assert [(b["id"], b["title"], b["author"], b["chapters"]) for b in result["books"]] == [
        ("sanguo", "三国演义", "罗贯中", 3)
    ]
    book = BookService(system.library).get("sanguo")
    assert [c.title for c in book.chapters] == HEADINGS
    first = system.store.get_mother(book.chapters[0].work_id)
    assert first.title == f"《三国演义》{HEADINGS[0]}"
    assert "正版" not in first.text and "作品仅供" not in first.text  # the banner is no chapter
    with pytest.raises(NotFound):
        system.store.get_mother("sanguo")  # not one work of the whole file
    page = system.client("analyst").get(f"/jobs/{job_id}?kind=ingest")
    shown = page.get_data(as_text=True)
    assert "1 本书，3 章" in shown and "《三国演义》" in shown
    english = system.client("analyst").get(f"/jobs/{job_id}?kind=ingest&lang=en")
    assert "1 book, 3 chapters" in english.get_data(as_text=True)


def test_separate_works_keeps_the_file_one_work(system: WebSystem) -> None:
    job_id = upload(
        system,
        [(pirate_download(4200), "whole.txt"), (b"PK\x03\x04", "shanju.epub")],
        "works",
    )
    status = wait_job(system.client("analyst"), job_id)
    assert status["state"] == "SUCCESS", status
    assert status["result"]["ingested"] == 1 and status["result"]["books"] == []
    assert BookService(system.library).find("whole") is None
    assert "宴桃园" in system.store.get_mother("whole").text
    skipped = status["result"]["skipped"]
    assert [s["source"] for s in skipped] == ["shanju.epub"]  # an .epub is only a book


def test_one_book_per_file_takes_a_file_without_headings(system: WebSystem) -> None:
    plain = work(4300, 6).encode("utf-8")
    job_id = upload(system, [(plain, "wuti.txt")], "book")
    status = wait_job(system.client("analyst"), job_id)
    assert status["state"] == "SUCCESS", status
    [made] = status["result"]["books"]
    assert (made["id"], made["chapters"]) == ("wuti", 1)
    assert any("wuti.txt" in w for w in status["result"]["warnings"])  # said, not silent
    assert len(BookService(system.library).get("wuti").chapters) == 1


def test_a_bad_book_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="book_mode must be one of auto, book, works"):
        jobs.submit_ingest([{"id": "x", "text": "文本"}], book_mode="chapters")


def test_a_zip_of_chapters_is_one_book_and_a_bad_file_loses_nothing(system: WebSystem) -> None:
    import zipfile

    chapters = io.BytesIO()
    with zipfile.ZipFile(chapters, "w") as zf:
        for i, heading in enumerate(HEADINGS[:2], 1):
            zf.writestr(f"{i:02d}.txt", f"{heading}\n{work(4400 + i, 6)}\n".encode())
    job_id = upload(
        system,
        [(chapters.getvalue(), "liaozhai.zip"), (b"PK\x03\x04 not a document", "broken.docx")],
        "book",
    )
    status = wait_job(system.client("analyst"), job_id)
    assert status["state"] == "SUCCESS", status
    [made] = status["result"]["books"]
    assert (made["id"], made["chapters"]) == ("liaozhai", 2)
    assert [e["source"] for e in status["result"]["errors"]] == ["broken.docx"]
    book = BookService(system.library).get("liaozhai")
    assert [c.title for c in book.chapters] == HEADINGS[:2]


def test_the_api_keeps_files_as_works_unless_asked_for_books(system: WebSystem) -> None:
    """POST /api/v1/mothers: a whole-book file stays one work by default (the ids a
    client was promised before books existed); ``book_mode=auto`` makes the book, a bad
    mode is a 400 naming the choices."""
    api = system.client()
    headers = {"Authorization": f"Bearer {system.tokens['analyst']}"}

    def post(name: str, mode: str | None) -> tuple[int, dict[str, object]]:
        data: dict[str, object] = {"files": [(io.BytesIO(pirate_download(4500)), name)]}
        if mode is not None:
            data["book_mode"] = mode
        response = api.post(
            "/api/v1/mothers", data=data, content_type="multipart/form-data", headers=headers
        )
        return response.status_code, response.get_json()

    status, body = post("apiwhole.txt", None)
    assert status == 202, body
    result = wait_job(api, str(body["job_id"]), headers=headers)["result"]
    assert result["books"] == [] and "宴桃园" in system.store.get_mother("apiwhole").text

    status, body = post("apibook.txt", "auto")
    assert status == 202, body
    result = wait_job(api, str(body["job_id"]), headers=headers)["result"]
    assert [(b["id"], b["chapters"]) for b in result["books"]] == [("apibook", 3)]

    status, body = post("apibad.txt", "chapters")
    assert status == 400 and "book_mode must be one of auto, book, works" in str(body)
