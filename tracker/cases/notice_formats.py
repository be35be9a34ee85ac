"""A rendered notice as a file: PDF (reportlab, the CJK font embedded), DOCX
(python-docx, East Asian fonts on every style) or an e-mail (EML) with the notice as PDF
and the evidence reports attached."""

from __future__ import annotations

import io
from collections.abc import Sequence
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any, TypedDict, Unpack
from xml.sax.saxutils import escape

from .notice_text import CONTENT_TYPES, Notice, check_format, check_recipients


# --- PDF ------------------------------------------------------------------------------------
def render_pdf(notice: Notice) -> bytes:
    """A4 PDF with the CJK font embedded (see ``tracker.plumbing.fonts``)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.lib.units import mm
    from reportlab.platypus import KeepTogether, Paragraph, SimpleDocTemplate, Spacer

    from tracker.plumbing.fonts import register_cjk_font

    font = register_cjk_font()
    wrap = "CJK" if notice.lang == "zh" else None
    base = ParagraphStyle(
        "body", fontName=font, bulletFontName=font, fontSize=10.5, leading=16, wordWrap=wrap
    )
    styles = {
        "title": ParagraphStyle(
            "title", parent=base, fontSize=16, leading=22, alignment=1, spaceAfter=8
        ),
        "h2": ParagraphStyle(
            "h2",
            parent=base,
            fontSize=12.5,
            leading=18,
            spaceBefore=8,
            spaceAfter=3,
            keepWithNext=1,
        ),
        "h3": ParagraphStyle(
            "h3", parent=base, fontSize=11, leading=16, spaceBefore=4, keepWithNext=1
        ),
        "para": base,
        "item": ParagraphStyle("item", parent=base, leftIndent=12, bulletIndent=2),
    }
    url_style = {  # a long URL must break anywhere, also in English text
        k: ParagraphStyle(f"{k}-url", parent=s, wordWrap="CJK") for k, s in styles.items()
    }

    def story() -> list[Any]:
        out: list[Any] = []
        kept: list[Any] | None = None
        for kind, text in notice.blocks():
            if kind == "keep":
                kept = []
                continue
            if kind == "endkeep":
                if kept is not None:
                    out.append(KeepTogether(kept))
                kept = None
                continue
            target = out if kept is None else kept
            if kind == "space":
                target.append(Spacer(1, 4))
                continue
            style = (url_style if "://" in text else styles)[kind]
            bullet = "•" if kind == "item" else None
            target.append(Paragraph(escape(text), style, bulletText=bullet))
            if "签名或盖章" in text and kept is not None:
                target.append(Spacer(1, 30))  # room for the signature and the seal
        if kept:
            out.append(KeepTogether(kept))
        return out

    def build(total: int | None) -> tuple[bytes, int]:
        def footer(canvas: Any, doc: Any) -> None:
            canvas.saveState()
            canvas.setFont(font, 8)
            canvas.drawString(20 * mm, 10 * mm, f"{notice.reference}  ·  {notice.platform}")
            number = f"{doc.page} / {total}" if total else f"{doc.page}"
            canvas.drawRightString(A4[0] - 20 * mm, 10 * mm, number)
            canvas.restoreState()

        buf = io.BytesIO()
        doc = SimpleDocTemplate(
            buf,
            pagesize=A4,
            leftMargin=20 * mm,
            rightMargin=20 * mm,
            topMargin=18 * mm,
            bottomMargin=18 * mm,
            title=notice.subject,
            author=notice.profile.name,
            subject=notice.reference,
            creator="音迹 Yinji",
            lang="zh-CN" if notice.lang == "zh" else "en",
            initialFontName=font,  # no unembedded base-14 font on any page
        )
        doc.build(story(), onFirstPage=footer, onLaterPages=footer)
        return buf.getvalue(), doc.page

    # Two passes: the first counts the pages, the second numbers them "n / N".
    _, pages = build(None)
    data, _ = build(pages)
    return data


# --- DOCX -----------------------------------------------------------------------------------
def render_docx(notice: Notice) -> bytes:
    """A Word document (python-docx) with East Asian fonts set on every style."""
    from docx import Document
    from docx.oxml.ns import qn
    from docx.shared import Pt

    doc = Document()
    east_asian = "Microsoft YaHei" if notice.lang == "zh" else "SimSun"
    for name in ("Normal", "Title", "Heading 1", "Heading 2", "List Bullet"):
        style = doc.styles[name]
        rpr = style.element.get_or_add_rPr()
        fonts = rpr.find(qn("w:rFonts"))
        if fonts is None:
            fonts = rpr.makeelement(qn("w:rFonts"), {})
            rpr.append(fonts)
        fonts.set(qn("w:eastAsia"), east_asian)
    doc.styles["Normal"].font.size = Pt(10.5)
    props = doc.core_properties
    props.title, props.author, props.subject = notice.subject, notice.profile.name, notice.reference
    props.language = "zh-CN" if notice.lang == "zh" else "en-US"
    keeping = False
    last: Any = None
    for kind, text in notice.blocks():
        if kind in ("keep", "endkeep"):
            keeping = kind == "keep"
            if not keeping and last is not None:
                last.paragraph_format.keep_with_next = False
            continue
        if kind == "title":
            last = doc.add_heading(text, level=0)
        elif kind == "h2":
            last = doc.add_heading(text, level=1)
        elif kind == "h3":
            last = doc.add_heading(text, level=2)
        elif kind == "item":
            last = doc.add_paragraph(text, style="List Bullet")
        elif kind == "para":
            last = doc.add_paragraph(text)
            if "签名或盖章" in text and keeping:
                last.paragraph_format.space_after = Pt(36)  # room for signature and seal
        else:
            continue
        if keeping:  # the statements stay on one page with their signature
            last.paragraph_format.keep_with_next = True
            last.paragraph_format.keep_together = True
    _docx_page_numbers(doc)
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def _docx_page_numbers(doc: Any) -> None:
    """A footer "n / N" from Word's PAGE and NUMPAGES fields."""
    from docx.enum.text import WD_ALIGN_PARAGRAPH
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    paragraph = doc.sections[0].footer.paragraphs[0]
    paragraph.alignment = WD_ALIGN_PARAGRAPH.RIGHT

    def field(code: str) -> None:
        run = paragraph.add_run()
        for kind, text in (("begin", None), (None, code), ("separate", None), ("end", None)):
            if kind is None:
                instr = OxmlElement("w:instrText")
                instr.set(qn("xml:space"), "preserve")
                instr.text = text
                run._r.append(instr)
            else:
                char = OxmlElement("w:fldChar")
                char.set(qn("w:fldCharType"), kind)
                run._r.append(char)

    field("PAGE")
    paragraph.add_run(" / ")
    field("NUMPAGES")


# --- e-mail ---------------------------------------------------------------------------------
def render_email(
    notice: Notice,
    *,
    sender: str | None = None,
    to: Sequence[str] = (),
    attachments: Sequence[tuple[str, bytes, str]] = (),
    attach_pdf: bool = True,
) -> EmailMessage:
    """The notice as an e-mail: the text in the body, the notice as a PDF and every
    attachment given (evidence reports, proofs of ownership) attached."""
    to = check_recipients(to)
    if sender is not None and sender.strip():
        (sender,) = check_recipients([sender])
    msg = EmailMessage()
    sender = sender or notice.profile.email
    if sender:
        msg["From"] = sender
    if to:
        msg["To"] = ", ".join(to)
    if notice.profile.email and notice.profile.email != sender:
        msg["Reply-To"] = notice.profile.email
    msg["Subject"] = notice.subject
    msg["Date"] = formatdate(localtime=False, usegmt=True)
    domain = sender.rsplit("@", 1)[-1] if sender and "@" in sender else "yinji.invalid"
    msg["Message-ID"] = make_msgid(idstring=notice.reference, domain=domain)
    msg["X-Yinji-Cases"] = ", ".join(notice.case_ids)
    msg.set_content(notice.plain_text(), charset="utf-8")
    files: list[tuple[str, bytes, str]] = []
    if attach_pdf:
        files.append((f"{notice.filename_stem}.pdf", render_pdf(notice), CONTENT_TYPES["pdf"]))
    files += list(attachments)
    for name, data, ctype in files:
        maintype, _, subtype = (ctype or "application/octet-stream").partition("/")
        msg.add_attachment(
            data, maintype=maintype, subtype=subtype or "octet-stream", filename=name
        )
    return msg


class EmlOptions(TypedDict, total=False):
    """The keywords of ``render_email`` that ``render_eml`` and ``render`` pass on."""

    sender: str | None
    to: Sequence[str]
    attachments: Sequence[tuple[str, bytes, str]]
    attach_pdf: bool


def render_eml(notice: Notice, **kwargs: Unpack[EmlOptions]) -> bytes:
    return bytes(render_email(notice, **kwargs))


def render(notice: Notice, fmt: str, **eml_options: Unpack[EmlOptions]) -> bytes:
    """The notice in ``fmt`` (pdf, docx, eml)."""
    fmt = check_format(fmt)
    if fmt == "pdf":
        return render_pdf(notice)
    if fmt == "docx":
        return render_docx(notice)
    return render_eml(notice, **eml_options)
