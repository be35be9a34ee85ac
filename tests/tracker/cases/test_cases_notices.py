"""Notices: each format (PDF, DOCX, EML) in both languages carries the elements of
《信息网络传播权保护条例》第十四条 / 17 U.S.C. 512(c)(3)(A); PDF fonts are embedded;
user templates override the shipped ones; a template that drops a required element
is refused; the CLI writes the files."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from email import policy
from email.parser import BytesParser
from pathlib import Path

import pytest
from casekit import add_match, library_store
from click.testing import CliRunner
from repo import REPO

from tracker.cases import CaseService
from tracker.cases.cli import case, verdict
from tracker.cases.model import CaseError
from tracker.cases.notice_formats import render
from tracker.cases.notice_text import NoticeIncomplete
from tracker.cases.notices import build_notice
from tracker.cases.sqlite_store import SqliteCaseStore
from tracker.plumbing.config import Settings

HOLDER = {
    "name": "青简文化有限公司",
    "contact": "李明",
    "email": "legal@qingjian.example",
    "phone": "+86 10 1234 5678",
    "address": "北京市海淀区中关村大街1号",
}
LONG_URL = "https://pirate.example/book/123/2.html?from=index&session=" + "a" * 60


@pytest.fixture()
def setup(tmp_path: Path) -> Iterator[tuple[CaseService, object, list[str]]]:
    lib = library_store(tmp_path / "lib")
    store = SqliteCaseStore(tmp_path / "cases.sqlite3", blob_dir=tmp_path / "blobs")
    svc = CaseService(store, Settings(data_dir=tmp_path / "data"))
    urls = ["https://pirate.example/book/123/1.html", LONG_URL]
    for i, url in enumerate(urls):
        add_match(lib, f"s{i}", "w1", url, title="春山记")
        svc.apply_verdict(lib, f"s{i}", "w1", "confirmed", who="alice")
    add_match(lib, "t", "w2", "https://pirate.example/other/", title="Winter River")
    svc.apply_verdict(lib, "t", "w2", "confirmed", who="alice")
    svc.set_profile(**HOLDER)
    svc.add_attachment("著作权登记证书.pdf", b"%PDF-1.4 proof of ownership")
    yield svc, lib, [c.id for c in svc.list_cases()]
    store.close()
    lib.close()  # type: ignore[attr-defined]


def _flat(text: str) -> str:
    return "".join(text.split())


def _required(lang: str, svc: CaseService) -> list[str]:
    urls = [u.url for c in svc.list_cases() for u in c.urls]
    common = [HOLDER["name"], HOLDER["address"], HOLDER["email"], "春山记", "Winter River", *urls]
    if lang == "zh":
        return [*common, "第十四条", "初步证明材料", "著作权登记证书.pdf", "SHA-256"]
    return [
        *common,
        "/s/李明",
        "goodfaithbelief",
        "underpenaltyofperjury",
        "authorizedtoactonbehalfoftheowner",
        "著作权登记证书.pdf",
    ]


def _pdf_text_and_fonts(data: bytes) -> tuple[str, list[tuple[str, bool]]]:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    fonts: list[tuple[str, bool]] = []
    for page in reader.pages:
        for ref in page["/Resources"]["/Font"].values():
            font = ref.get_object()
            descendants = font.get("/DescendantFonts")
            target = descendants[0].get_object() if descendants else font
            desc = target.get("/FontDescriptor")
            desc = desc.get_object() if desc is not None else {}
            embedded = any(k in desc for k in ("/FontFile", "/FontFile2", "/FontFile3"))
            fonts.append((str(font.get("/BaseFont")), embedded))
    return "\n".join(p.extract_text() for p in reader.pages), fonts


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_pdf_notice_has_the_elements_and_embedded_fonts(setup, lang: str) -> None:
    svc, lib, ids = setup
    notice = build_notice(svc, ids, lang, matches=lib)
    data = render(notice, "pdf")
    assert data.startswith(b"%PDF")
    text, fonts = _pdf_text_and_fonts(data)
    flat = _flat(text)
    for element in _required(lang, svc):
        assert _flat(element) in flat, element
    assert fonts and all(embedded for _, embedded in fonts), fonts


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_docx_notice_has_the_elements(setup, lang: str) -> None:
    from docx import Document

    svc, lib, ids = setup
    data = render(build_notice(svc, ids, lang, matches=lib), "docx")
    doc = Document(io.BytesIO(data))
    flat = _flat("\n".join(p.text for p in doc.paragraphs))
    for element in _required(lang, svc):
        assert _flat(element) in flat, element
    assert doc.core_properties.author == HOLDER["name"]
    assert any(p.style.name == "List Bullet" for p in doc.paragraphs)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_eml_notice_has_the_elements_and_the_evidence(setup, lang: str) -> None:
    svc, lib, ids = setup
    evidence = b"%PDF-1.4 evidence report bytes"
    notice = build_notice(
        svc, ids, lang, matches=lib, evidence_files={LONG_URL: ("evidence-1.pdf", "ab" * 32)}
    )
    data = render(
        notice,
        "eml",
        sender="notices@qingjian.example",
        to=["abuse@pirate.example"],
        attachments=[("evidence-1.pdf", evidence, "application/pdf")],
    )
    msg = BytesParser(policy=policy.default).parsebytes(data)
    assert msg["To"] == "abuse@pirate.example" and msg["Reply-To"] == HOLDER["email"]
    assert "pirate.example" in msg["Subject"]
    body = msg.get_body(preferencelist=("plain",)).get_content()
    flat = _flat(body)
    for element in _required(lang, svc):
        assert _flat(element) in flat, element
    assert "evidence-1.pdf" in body
    files = {p.get_filename(): p.get_content() for p in msg.iter_attachments()}
    assert files["evidence-1.pdf"] == evidence
    (notice_pdf,) = [n for n in files if n.startswith("notice-")]
    assert files[notice_pdf].startswith(b"%PDF")


def test_user_template_overrides_and_is_checked(setup, tmp_path: Path) -> None:
    svc, lib, ids = setup
    own = tmp_path / "data" / "templates" / "notices" / "en"
    own.mkdir(parents=True)
    shipped = REPO / "tracker/cases/templates/notices/en/notice.txt.j2"
    (own / "notice.txt.j2").write_text(
        "Our own preamble.\n" + shipped.read_text("utf-8"), encoding="utf-8"
    )
    assert build_notice(svc, ids, "en", matches=lib).text.startswith("Our own preamble.")
    (own / "notice.txt.j2").write_text(
        "{{ holder.name }} {{ holder.address }} {{ holder.email }}\n"
        "{% for c in cases %}{{ c.work_title }} {% for u in c.urls %}{{ u.url }} "
        "{% endfor %}{% endfor %}\n",
        encoding="utf-8",
    )
    with pytest.raises(NoticeIncomplete, match="good-faith statement") as err:
        build_notice(svc, ids, "en", matches=lib)
    assert "penalty-of-perjury" in str(err.value) and "signature" in str(err.value)
    (own / "notice.txt.j2").write_text("{{ holder.nmae }}\n", encoding="utf-8")
    with pytest.raises(CaseError, match=r"en/notice.txt.j2.*nmae"):
        build_notice(svc, ids, "en", matches=lib)
    # Templates run sandboxed: no way to the Python internals.
    (own / "notice.txt.j2").write_text("{{ ''.__class__.__mro__ }}\n", encoding="utf-8")
    with pytest.raises(CaseError):
        build_notice(svc, ids, "en", matches=lib)


def test_notice_refusals(setup, tmp_path: Path) -> None:
    svc, lib, ids = setup
    with pytest.raises(CaseError, match="language must be one of"):
        build_notice(svc, ids, "fr", matches=lib)
    other = svc.open_case(work="w9", domain="elsewhere.example", who="t")
    with pytest.raises(CaseError, match="one platform"):
        build_notice(svc, [*ids, other.id], "zh", matches=lib)
    with pytest.raises(CaseError, match="without any URL"):
        build_notice(svc, [other.id], "zh", matches=lib)
    svc.store.set_meta("profile", {"name": "X"})
    with pytest.raises(CaseError, match="missing: address, email or phone"):
        build_notice(svc, ids, "zh", matches=lib)


def test_cli_notice_files(tmp_path: Path) -> None:
    from docx import Document

    data = tmp_path / "data"
    data.mkdir()
    with library_store(data) as store:
        add_match(store, "s1", "w1", "https://pirate.example/1.html", title="春山记")
    runner = CliRunner()
    obj = {"data_dir": data}
    assert runner.invoke(verdict, ["s1", "w1", "confirmed"], obj=obj).exit_code == 0
    (c,) = json.loads(runner.invoke(case, ["list", "--json"], obj=obj).output)
    r = runner.invoke(
        case, ["notice", c["id"], "--format", "pdf", "--lang", "zh", "-o", "x"], obj=obj
    )
    assert r.exit_code == 1 and "profile" in r.output
    fields = [f"--{k}={v}" for k, v in HOLDER.items()]
    assert runner.invoke(case, ["profile", "set", *fields], obj=obj).exit_code == 0
    for fmt in ("pdf", "docx", "eml"):
        for lang in ("zh", "en"):
            out = tmp_path / f"n-{lang}.{fmt}"
            args = ["notice", c["id"], "--format", fmt, "--lang", lang, "-o", str(out)]
            r = runner.invoke(case, args, obj=obj, catch_exceptions=False)
            assert r.exit_code == 0, r.output
            assert out.stat().st_size > 0
    doc = Document(str(tmp_path / "n-zh.docx"))
    assert "https://pirate.example/1.html" in "\n".join(p.text for p in doc.paragraphs)
    msg = BytesParser(policy=policy.default).parsebytes((tmp_path / "n-en.eml").read_bytes())
    names = [p.get_filename() for p in msg.iter_attachments()]
    # The evidence report of the match is built and attached (tracker.reports).
    assert any(n.startswith("evidence-") for n in names), names
    evidence = next(p for p in msg.iter_attachments() if p.get_filename().startswith("evidence-"))
    assert evidence.get_content().startswith(b"%PDF")
    history = json.loads(runner.invoke(case, ["show", c["id"], "--json"], obj=obj).output)
    assert [e["kind"] for e in history["history"]].count("notice") == 6
    assert history["state"] == "open"  # generating a notice is not sending it
