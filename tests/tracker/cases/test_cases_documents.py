"""Documents for others tie together and hold no local detail: the evidence report names
its case and notice number, the notice names each report's file and SHA-256; no local
path; the signature block stays with its statement, pages are numbered "n / N"; a
recipient with CR/LF and a template that asks for unbounded work are refused with a
message (not a 500)."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from casekit import add_match, library_store

from tracker.cases import CaseService
from tracker.cases.model import CaseError
from tracker.cases.notice_formats import render, render_email
from tracker.cases.notice_text import TemplateTooCostly, check_recipients
from tracker.cases.notices import build_notice, generate_notice
from tracker.cases.sqlite_store import SqliteCaseStore
from tracker.common.records import Mother
from tracker.plumbing.config import Settings
from tracker.reports import build_report

HOLDER = {"name": "青简文化", "address": "北京市海淀区", "email": "legal@qingjian.example"}


class _Lib:
    """The two things notices ask of a library: its store and (none here) its log."""

    def __init__(self, store: object) -> None:
        self.store = store


@pytest.fixture()
def setup(tmp_path: Path) -> Iterator[tuple[CaseService, object, str]]:
    store = library_store(tmp_path / "lib")
    svc = CaseService(
        SqliteCaseStore(tmp_path / "cases.sqlite3", blob_dir=tmp_path / "blobs"),
        Settings(data_dir=tmp_path / "data"),
    )
    add_match(store, "s1", "w1", "https://pirate.example/b/1.html", title="春山记")
    svc.apply_verdict(store, "s1", "w1", "confirmed", who="alice")
    svc.set_profile(**HOLDER)
    (c,) = svc.list_cases()
    yield svc, store, c.id
    svc.store.close()
    store.close()  # type: ignore[attr-defined]


def _pdf_pages(data: bytes) -> list[str]:
    from pypdf import PdfReader

    return [p.extract_text() for p in PdfReader(io.BytesIO(data)).pages]


def test_report_names_case_and_notice_and_no_local_path(setup) -> None:
    _svc, store, cid = setup
    mother = store.get_mother("w1")
    store.put_mother(
        Mother(id="w1", title=mother.title, text=mother.text, source="/tmp/x9/wucheng.jsonl:1")
    )
    lib = _Lib(store)
    data = json.loads(build_report(lib, "s1\x1fw1", "json", case_id=cid, notice="YJ-20261126-ab"))
    assert (data["case_id"], data["notice"]) == (cid, "YJ-20261126-ab")
    assert data["work"]["source"] == "wucheng.jsonl:1"
    html = build_report(lib, "s1\x1fw1", "html", case_id=cid, notice="YJ-20261126-ab").decode()
    pdf = "".join(_pdf_pages(build_report(lib, "s1\x1fw1", "pdf", case_id=cid, notice="YJ-1")))
    for text in (html, pdf):
        assert f"案件编号 Case: {cid}" in text and "通知编号 Notice:" in text
        assert "/tmp/" not in text and "wucheng.jsonl:1" in text


def test_notice_names_each_report_file_and_its_hash(setup) -> None:
    svc, store, cid = setup
    made = generate_notice(svc, _Lib(store), [cid], "eml", "zh", who="t", with_evidence=True)
    ((name, report),) = made.evidence.values()
    text = made.notice.text
    assert name in text and hashlib.sha256(report).hexdigest() in text
    # The report attached names this case and this notice.
    assert cid in "".join(_pdf_pages(report)) and made.notice.reference in "".join(
        _pdf_pages(report)
    )


@pytest.mark.parametrize("urls", [12, 24, 36])
def test_pages_numbered_and_signature_kept_with_statement(setup, urls: int) -> None:
    svc, store, cid = setup
    for i in range(urls):
        url = f"https://pirate.example/b/{i + 2}.html?long=" + "x" * 40
        add_match(store, f"p{i}", "w1", url, title="春山记")
        svc.apply_verdict(store, f"p{i}", "w1", "confirmed", who="alice")
    for lang, statement, signature in (
        ("en", "under penalty of perjury", "/s/"),
        ("zh", "本权利人保证", "签名或盖章"),
    ):
        pages = _pdf_pages(render(build_notice(svc, [cid], lang, matches=store), "pdf"))
        total = len(pages)
        for n, page in enumerate(pages, 1):
            assert f"{n} / {total}" in page
        (with_statement,) = [i for i, p in enumerate(pages) if statement in p]
        assert signature in pages[with_statement], (lang, total)


def test_recipients_with_line_breaks_are_refused(setup) -> None:
    svc, store, cid = setup
    notice = build_notice(svc, [cid], "zh", matches=store)
    for bad in ("abuse@p.example\r\nBcc: all@victim.example", "a@p.example\nX-Evil: 1", "a\x00@b"):
        with pytest.raises(CaseError, match="line break or control character"):
            render_email(notice, to=[bad], attach_pdf=False)
        with pytest.raises(CaseError, match="line break or control character"):
            generate_notice(svc, _Lib(store), [cid], "eml", "zh", who="t", to=[bad])
    with pytest.raises(CaseError, match="not an e-mail address"):
        check_recipients(["nobody"])
    assert check_recipients([" abuse@p.example ", ""]) == ["abuse@p.example"]


@pytest.mark.parametrize(
    ("template", "said"),
    [
        ("{% for i in range(10**7) %}{% endfor %}", "range"),
        ("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", "loops"),
        (
            "{% set s = 'x' * 999999 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}",
            "loops",
        ),
        ("{% for c in cases * 99999 %}{% for u in c.urls %}{% endfor %}{% endfor %}", "loops"),
        ("{{ 'x' * 10**9 }}", "more than a notice needs"),
        ("{{ 2 ** 100000 }}", "exponent"),
        ("{% for i in range(99999) %}{{ 'y' * 99 }}{% endfor %}", "longer than"),
    ],
)
def test_template_work_is_bounded(setup, template: str, said: str) -> None:
    svc, store, cid = setup
    own = svc.settings.data_dir / "templates" / "notices" / "en"  # type: ignore[union-attr]
    own.mkdir(parents=True)
    (own / "notice.txt.j2").write_text(template, encoding="utf-8")
    with pytest.raises(TemplateTooCostly, match=said):
        build_notice(svc, [cid], "en", matches=store)


def test_a_chapter_confirmed_later_joins_its_books_case(tmp_path: Path) -> None:
    """One work on one site is one case: a confirmed page copying another chapter of a
    book (its work metadata) joins the book's open case instead of opening its own."""
    store = library_store(tmp_path / "lib")
    svc = CaseService(SqliteCaseStore(tmp_path / "c.sqlite3", blob_dir=tmp_path / "b"))
    try:
        book = svc.open_case(work="chunshan", domain="pirate.example", who="t", kind="book")
        for n in (1, 2):
            store.put_mother(
                Mother(
                    id=f"cs-{n}",
                    title=f"春山记 第{n}章",
                    text="正文" * 50,
                    metadata={"work": "chunshan"},
                )
            )
            add_match(store, f"s{n}", f"cs-{n}", f"https://pirate.example/7/{n}.html")
            result = svc.apply_verdict(store, f"s{n}", f"cs-{n}", "confirmed", who="alice")
            assert result.case is not None and result.case.id == book.id
        add_match(store, "o1", "other", "https://pirate.example/other.html", title="别的书")
        other = svc.apply_verdict(store, "o1", "other", "confirmed", who="alice").case
        assert other is not None and other.id != book.id  # another work: its own case
        assert [u.url for u in svc.get(book.id).urls] == [
            "https://pirate.example/7/1.html",
            "https://pirate.example/7/2.html",
        ]
    finally:
        svc.store.close()
        store.close()
