"""Takedown notices: one case, or a batch of cases on one platform (domain), in Chinese
(《信息网络传播权保护条例》第十四条) or English (17 U.S.C. 512(c)(3)(A)), as PDF, DOCX or
an e-mail (EML) with the evidence reports attached.

The wording lives in Jinja templates: ``templates/notices/<lang>/notice.txt.j2`` and
``subject.txt.j2`` shipped in this package, overridden by files of the same name under
``<data folder>/templates/notices/<lang>/``. A template renders a light markup (``# ``
title, ``## `` section, ``### `` subsection, ``- `` list item, blank line = space) that
each output format lays out. Templates run in Jinja's sandbox with undefined names as
errors, and the rendered notice is checked for the elements the law asks for (the
holder's name, contact and address, each work, each URL, the evidence; in English the
good-faith and penalty-of-perjury statements and the signature): an edited template
that drops one is refused with the missing elements named.
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date as Date
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape

from tracker.records import NotFound, match_id
from tracker.timefmt import human_utc

from .model import Case, CaseError, Profile
from .service import CaseService

if TYPE_CHECKING:
    from tracker.store import Store

log = logging.getLogger(__name__)

LANGS: tuple[str, ...] = ("zh", "en")
FORMATS: tuple[str, ...] = ("pdf", "docx", "eml")
TEMPLATE_DIR = Path(__file__).parent / "templates" / "notices"
CONTENT_TYPES = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "eml": "message/rfc822",
}
# Statements 17 U.S.C. 512(c)(3)(A)(v) and (vi) require, and the signature of (i).
EN_REQUIRED = {
    "good-faith statement (v)": "good faith belief",
    "accuracy / penalty-of-perjury statement (vi)": "under penalty of perjury",
    "signature (i)": "/s/",
}
ZH_REQUIRED = {"构成侵权的初步证明材料": "初步证明"}


class NoticeIncomplete(CaseError):
    """The rendered notice lacks elements the law requires."""


def check_lang(lang: Any) -> str:
    if lang not in LANGS:
        raise CaseError(f"language must be one of {', '.join(LANGS)}, got {lang!r}")
    return str(lang)


def check_format(fmt: Any) -> str:
    if fmt not in FORMATS:
        raise CaseError(f"notice format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return str(fmt)


@dataclass
class Notice:
    """A rendered notice: its subject and marked-up text, and what went into it."""

    lang: str
    platform: str
    reference: str
    date: str
    subject: str
    text: str
    case_ids: list[str]
    profile: Profile
    urls: list[str] = field(default_factory=list)

    def blocks(self) -> list[tuple[str, str]]:
        """(kind, text) per line: title, h2, h3, item, para, space."""
        out: list[tuple[str, str]] = []
        for raw in self.text.splitlines():
            line = raw.rstrip()
            if not line.strip():
                if out and out[-1][0] != "space":
                    out.append(("space", ""))
                continue
            for prefix, kind in (("### ", "h3"), ("## ", "h2"), ("# ", "title"), ("- ", "item")):
                if line.startswith(prefix):
                    out.append((kind, line[len(prefix) :].strip()))
                    break
            else:
                out.append(("para", line.strip()))
        return out

    def plain_text(self) -> str:
        """The notice as the text of an e-mail."""
        lines: list[str] = []
        for kind, text in self.blocks():
            if kind == "title":
                lines += [text, ""]
            elif kind == "h2":
                lines += ["", text]
            elif kind == "item":
                lines.append(f"  - {text}")
            elif kind == "space":
                lines.append("")
            else:
                lines.append(text)
        return "\n".join(lines).strip() + "\n"

    @property
    def filename_stem(self) -> str:
        return f"notice-{self.reference}-{self.lang}"


# --- building -----------------------------------------------------------------------------
def _environment(templates_dir: Path | None) -> Any:
    from jinja2 import ChoiceLoader, FileSystemLoader, StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    loaders = []
    if templates_dir is not None and templates_dir.is_dir():
        loaders.append(FileSystemLoader(str(templates_dir)))
    loaders.append(FileSystemLoader(str(TEMPLATE_DIR)))
    return ImmutableSandboxedEnvironment(
        loader=ChoiceLoader(loaders),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # plain text: each renderer escapes for its own format
    )


def _suspect_facts(matches: Store | None, suspect_id: str) -> dict[str, str]:
    if matches is None or not suspect_id:
        return {}
    try:
        suspect = matches.get_suspect(suspect_id)
    except (NotFound, KeyError):
        return {}
    # The templates add "UTC" after the time (and are the users' to edit).
    facts = {"fetched_at": human_utc(suspect.fetched_at).removesuffix(" UTC")}
    if suspect.raw:
        facts["raw_sha256"] = hashlib.sha256(suspect.raw).hexdigest()
    return facts


def notice_context(
    cases: Sequence[Case],
    profile: Profile,
    *,
    lang: str,
    matches: Store | None = None,
    to: str | None = None,
    evidence_files: dict[str, str] | None = None,
    attachments: Sequence[str] = (),
    today: Date | None = None,
) -> dict[str, Any]:
    """What the templates see (documented in docs/TAKEDOWN.md)."""
    today = today or Date.today()
    ids = sorted(c.id for c in cases)
    digest = hashlib.sha1("\x1f".join(ids).encode(), usedforsecurity=False).hexdigest()[:8]
    reference = f"YJ-{today:%Y%m%d}-{digest}"
    evidence_files = evidence_files or {}
    items = []
    for c in cases:
        urls = []
        for u in c.urls:
            facts = _suspect_facts(matches, u.suspect_id)
            urls.append(
                {
                    "url": u.url,
                    "label": u.label,
                    "score": f"{u.score:.2f}",
                    "coverage_pct": f"{u.coverage:.0%}",
                    "fetched_at": facts.get("fetched_at", ""),
                    "raw_sha256": facts.get("raw_sha256", ""),
                    "evidence_file": evidence_files.get(u.url, ""),
                    "status": u.status,
                }
            )
        items.append(
            {
                "id": c.id,
                "work": c.work,
                "work_title": c.work_title or c.work,
                "domain": c.domain,
                "state": c.state,
                "kind": c.kind,
                "urls": urls,
            }
        )
    return {
        "lang": lang,
        "platform": cases[0].domain,
        "to": to or "",
        "reference": reference,
        "date": today.isoformat()
        if lang == "en"
        else f"{today.year}年{today.month}月{today.day}日",
        "holder": {
            "name": profile.name,
            "contact": profile.contact,
            "email": profile.email,
            "phone": profile.phone,
            "address": profile.address,
        },
        "cases": items,
        "attachments": list(attachments),
    }


def _check_elements(notice: Notice, context: dict[str, Any]) -> None:
    text = notice.text
    missing = []
    holder = context["holder"]
    for label, value in (("rights holder's name", holder["name"]), ("address", holder["address"])):
        if value not in text:
            missing.append(label)
    if not any(v and v in text for v in (holder["email"], holder["phone"])):
        missing.append("contact (e-mail or phone)")
    for item in context["cases"]:
        if item["work_title"] not in text:
            missing.append(f"work {item['work_title']!r}")
        missing += [f"URL {u['url']}" for u in item["urls"] if u["url"] not in text]
    required = EN_REQUIRED if notice.lang == "en" else ZH_REQUIRED
    missing += [label for label, phrase in required.items() if phrase not in text]
    if missing:
        raise NoticeIncomplete(
            f"the {notice.lang} notice template leaves out required elements: " + "; ".join(missing)
        )


def _render_template(env: Any, name: str, context: dict[str, Any]) -> str:
    """Render one template; any template error becomes a CaseError naming the file
    and line (the user may have edited it)."""
    from jinja2 import TemplateError

    try:
        template = env.get_template(name)
        return str(template.render(**context))
    except TemplateError as exc:
        path = getattr(exc, "filename", None) or name
        line = getattr(exc, "lineno", None)
        tb = exc.__traceback__
        while tb is not None:  # runtime errors: the template frame says where
            if tb.tb_frame.f_code.co_filename.endswith(".j2"):
                path, line = tb.tb_frame.f_code.co_filename, tb.tb_lineno
            tb = tb.tb_next
        at = f"{path}:{line}" if line else str(path)
        raise CaseError(f"notice template {at}: {exc}") from None


def build_notice(
    svc: CaseService,
    case_ids: Iterable[str],
    lang: str,
    *,
    matches: Store | None = None,
    to: str | None = None,
    evidence_files: dict[str, str] | None = None,
    templates_dir: Path | None = None,
    today: Date | None = None,
) -> Notice:
    """Render the notice of ``case_ids`` (one platform). ``matches`` (the library's
    store) adds each page's fetch time and hash; ``evidence_files`` maps a URL to the
    file name of its evidence report; ``templates_dir`` holds the user's overrides
    (default: ``<data folder>/templates/notices``)."""
    lang = check_lang(lang)
    cases = svc.batch(case_ids)
    empty = [c.id for c in cases if not c.urls]
    if empty:
        raise CaseError(f"case(s) without any URL to take down: {', '.join(empty)}")
    profile = svc.profile()
    missing = profile.missing()
    if missing:
        raise CaseError(
            "set the rights-holder profile first (`yinji case profile set --name ... "
            f"--address ... --email ...`); missing: {', '.join(missing)}"
        )
    if templates_dir is None and svc.settings is not None:
        templates_dir = svc.settings.data_dir / "templates" / "notices"
    context = notice_context(
        cases,
        profile,
        lang=lang,
        matches=matches,
        to=to,
        evidence_files=evidence_files,
        attachments=[a.name for a in profile.attachments],
        today=today,
    )
    env = _environment(templates_dir)
    text = _render_template(env, f"{lang}/notice.txt.j2", context)
    subject = _render_template(env, f"{lang}/subject.txt.j2", context)
    notice = Notice(
        lang=lang,
        platform=context["platform"],
        reference=context["reference"],
        date=context["date"],
        subject=" ".join(subject.split()),
        text=text,
        case_ids=[c.id for c in cases],
        profile=profile,
        urls=[u.url for c in cases for u in c.urls],
    )
    _check_elements(notice, context)
    return notice


# --- evidence -------------------------------------------------------------------------------
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def collect_evidence(library: Any, cases: Sequence[Case]) -> dict[str, tuple[str, bytes]]:
    """The PDF evidence report of each URL's match: ``{url: (file name, bytes)}``.

    A URL whose match is gone from the library (deleted since) is left out with a
    warning: the notice then names no report for it."""
    from tracker.reports import build_report

    out: dict[str, tuple[str, bytes]] = {}
    for c in cases:
        for n, u in enumerate(c.urls, 1):
            mid = match_id(u.suspect_id, u.mother_id or c.work)
            try:
                data = build_report(library, mid, "pdf")
            except (NotFound, KeyError) as exc:
                log.warning("no evidence report for %s: %s", u.url, exc)
                continue
            name = _UNSAFE.sub("_", f"evidence-{c.id}-{n:03d}.pdf")
            out[u.url] = (name, data)
    return out


def prepare_notice(
    svc: CaseService,
    library: Any,
    case_ids: Iterable[str],
    lang: str,
    *,
    to: Sequence[str] = (),
    with_evidence: bool = True,
) -> tuple[Notice, dict[str, tuple[str, bytes]]]:
    """The notice of ``case_ids`` with the facts of the library (fetch times, page
    hashes) and, ``with_evidence``, the evidence report of each URL (``{url: (file
    name, PDF bytes)}``), which the notice names."""
    case_ids = list(case_ids)
    cases = svc.batch(case_ids)
    evidence = collect_evidence(library, cases) if with_evidence else {}
    notice = build_notice(
        svc,
        case_ids,
        lang,
        matches=library.store,
        to=", ".join(to) or None,
        evidence_files={url: name for url, (name, _) in evidence.items()},
    )
    return notice, evidence


# --- PDF ------------------------------------------------------------------------------------
def render_pdf(notice: Notice) -> bytes:
    """A4 PDF with the CJK font embedded (see ``tracker.fonts``)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.lib.units import mm
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer

    from tracker.fonts import register_cjk_font

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
    story: list[Any] = []
    for kind, text in notice.blocks():
        if kind == "space":
            story.append(Spacer(1, 4))
            continue
        style = (url_style if "://" in text else styles)[kind]
        bullet = "•" if kind == "item" else None
        story.append(Paragraph(escape(text), style, bulletText=bullet))

    def footer(canvas: Any, doc: Any) -> None:
        canvas.saveState()
        canvas.setFont(font, 8)
        canvas.drawString(20 * mm, 10 * mm, f"{notice.reference}  ·  {notice.platform}")
        canvas.drawRightString(A4[0] - 20 * mm, 10 * mm, f"{doc.page}")
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
    doc.build(story, onFirstPage=footer, onLaterPages=footer)
    return buf.getvalue()


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
    for kind, text in notice.blocks():
        if kind == "title":
            doc.add_heading(text, level=0)
        elif kind == "h2":
            doc.add_heading(text, level=1)
        elif kind == "h3":
            doc.add_heading(text, level=2)
        elif kind == "item":
            doc.add_paragraph(text, style="List Bullet")
        elif kind == "para":
            doc.add_paragraph(text)
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


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


def render_eml(notice: Notice, **kwargs: Any) -> bytes:
    return bytes(render_email(notice, **kwargs))


def render(notice: Notice, fmt: str, **eml_options: Any) -> bytes:
    """The notice in ``fmt`` (pdf, docx, eml)."""
    fmt = check_format(fmt)
    if fmt == "pdf":
        return render_pdf(notice)
    if fmt == "docx":
        return render_docx(notice)
    return render_eml(notice, **eml_options)


@dataclass
class GeneratedNotice:
    """A notice written as a file and recorded in its cases' history."""

    notice: Notice
    fmt: str
    data: bytes
    sha256: str
    evidence: dict[str, tuple[str, bytes]]  # url -> (file name, report PDF)


def generate_notice(
    svc: CaseService,
    library: Any,
    case_ids: Iterable[str],
    fmt: str,
    lang: str,
    *,
    who: str,
    to: Sequence[str] = (),
    with_evidence: bool = False,
    sender: str | None = None,
    channel: str | None = None,
) -> GeneratedNotice:
    """The one way a notice file is made, for ``yinji case notice`` and the web app:
    PDF or DOCX, or an e-mail (EML) with the notice as PDF, each URL's evidence report
    (``with_evidence``) and the proofs of ownership attached. Each case's history gets
    a notice ``generated`` record (format, language, reference, SHA-256 of the file,
    the channel when given)."""
    fmt = check_format(fmt)
    notice, evidence = prepare_notice(
        svc, library, case_ids, lang, to=to, with_evidence=with_evidence
    )
    options: dict[str, Any] = {}
    if fmt == "eml":
        files = [(name, data, "application/pdf") for name, data in evidence.values()]
        options = {
            "sender": sender,
            "to": list(to),
            "attachments": files + svc.attachment_files(notice.profile),
        }
    data = render(notice, fmt, **options)
    digest = hashlib.sha256(data).hexdigest()
    record: dict[str, Any] = {
        "action": "generated",
        "format": fmt,
        "lang": lang,
        "reference": notice.reference,
        "sha256": digest,
        "cases": notice.case_ids,
    }
    if channel is not None:
        record["channel"] = channel
    for cid in notice.case_ids:
        svc.record(cid, "notice", who=who, data=record)
    return GeneratedNotice(notice, fmt, data, digest, evidence)
