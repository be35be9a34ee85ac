"""The PDF report (tracker.reports.pdf)."""

from __future__ import annotations

import io
import re

import pytest
from textgen import work

from tracker.documents import Document
from tracker.library import Library
from tracker.reports import build_report
from tracker.store import Suspect

from .helpers import MOTHER


def test_pdf_report(library: Library, match_id: str) -> None:
    pdf = build_report(library, match_id, "pdf")
    assert pdf.startswith(b"%PDF")
    assert len(pdf) > 3000
    pypdf = pytest.importorskip("pypdf")
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    assert len(reader.pages) >= 1
    text = "".join(page.extract_text() for page in reader.pages)
    compact = re.sub(r"\s+", "", text)
    for needle in (
        "侵权证据报告",
        "Copyrightevidencereport",
        "长篇小说第一章",
        "pirate.example",
        "已确认侵权",
        "<script>alert(1)</script>",
    ):
        assert needle in compact, needle
    assert re.sub(r"\s+", "", MOTHER[200:230]) in compact  # the passage text layer


def test_pdf_long_passage_spans_pages(library: Library) -> None:
    long_work = work(7002, 400)  # ~14,000 characters copied whole
    library.ingest([Document(id="long", title="长文", text=long_work)])
    res = library.check_suspect(Suspect(id="copy", text=long_work, title="全文照抄"))
    match = next(m for m in res.matches if m.mother_id == "long")
    pdf = build_report(library, match.id, "pdf")
    pypdf = pytest.importorskip("pypdf")
    assert len(pypdf.PdfReader(io.BytesIO(pdf)).pages) >= 5
