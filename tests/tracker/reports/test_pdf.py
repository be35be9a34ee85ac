"""The PDF report (tracker.reports.pdf)."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from textgen import work

from tracker.documents.readers import Document
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


def _fonts(pdf: bytes) -> list[Any]:
    """Every font dictionary the pages use (Type0 fonts: their descendants too)."""
    pypdf = pytest.importorskip("pypdf")
    found = []
    for page in pypdf.PdfReader(io.BytesIO(pdf)).pages:
        resources = page.get("/Resources") or {}
        for font in (resources.get("/Font") or {}).values():
            font = font.get_object()
            found.append(font)
            for child in font.get("/DescendantFonts") or []:
                found.append(child.get_object())
    return found


def test_pdf_fonts_are_embedded_and_pdfa(library: Library, match_id: str) -> None:
    pdf = build_report(library, match_id, "pdf")
    fonts = _fonts(pdf)
    assert fonts
    for font in fonts:
        if font["/Subtype"] == "/Type0":
            continue  # its glyphs are in the descendant font, checked on its own
        descriptor = font.get("/FontDescriptor")
        assert descriptor is not None, f"{font['/BaseFont']} has no font descriptor (base-14)"
        descriptor = descriptor.get_object()
        assert "/FontFile2" in descriptor or "/FontFile3" in descriptor, font["/BaseFont"]
    pikepdf = pytest.importorskip("pikepdf")
    from tracker.reports.pdfa import pdfa_status

    assert pdfa_status(pdf) == "2B"
    with pikepdf.open(io.BytesIO(pdf)) as doc:
        assert not doc.is_encrypted
        (intent,) = doc.Root.OutputIntents
        assert str(intent.OutputConditionIdentifier) == "sRGB IEC61966-2.1"
        assert len(intent.DestOutputProfile.read_bytes()) > 400
        assert len(doc.trailer.ID) == 2
        meta = doc.open_metadata()
        assert "长篇小说" in str(meta.get("dc:title"))


def _render_first_page(pdf: bytes, tmp_path: Path) -> Any:
    """Page 1 as a greyscale image (pdftoppm, else pypdfium2)."""
    from PIL import Image

    exe = shutil.which("pdftoppm")
    if exe is not None:
        src = tmp_path / "report.pdf"
        src.write_bytes(pdf)
        subprocess.run(
            [exe, "-r", "72", "-f", "1", "-l", "1", "-png", str(src), str(tmp_path / "page")],
            check=True,
            timeout=60,
        )
        (png,) = tmp_path.glob("page*.png")
        return Image.open(png).convert("L")
    pdfium = pytest.importorskip("pypdfium2")
    return pdfium.PdfDocument(pdf)[0].render(scale=1).to_pil().convert("L")


def test_pdf_pages_render_with_the_text(library: Library, match_id: str, tmp_path: Path) -> None:
    pdf = build_report(library, match_id, "pdf")
    image = _render_first_page(pdf, tmp_path)
    width, height = image.size
    assert 580 <= width <= 600 and 830 <= height <= 850  # A4 at 72 dpi

    def dark(box: tuple[int, int, int, int]) -> int:
        return sum(image.crop(box).histogram()[:128])

    # The title line at the top left is drawn (dark glyph pixels), the margins are blank.
    assert dark((40, 30, 400, 70)) > 300
    assert dark((0, 0, width, 25)) == 0
    assert dark((width - 30, 0, width, height)) == 0
    # The text layer reads in order: title, then the work, then a passage's characters.
    pypdf = pytest.importorskip("pypdf")
    text = re.sub(
        r"\s+", "", "".join(p.extract_text() for p in pypdf.PdfReader(io.BytesIO(pdf)).pages)
    )
    title = text.index("侵权证据报告/Copyrightevidencereport")
    work_at = text.index("长篇小说第一章")
    passage = text.index(re.sub(r"\s+", "", MOTHER[300:330]))
    assert title < work_at < passage
