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
from typing import TYPE_CHECKING, Any, TypedDict, Unpack
from xml.sax.saxutils import escape

from tracker.records import NotFound
from tracker.timefmt import human_utc

from .facts import LeftOut, NoticeFacts, URLFact, notice_facts, zh_title
from .model import Case, CaseError, Profile, page_label
from .service import CaseService

if TYPE_CHECKING:
    from tracker.evidence.log import EvidenceLog
    from tracker.library import Library
    from tracker.store import Store

    from .platforms import Platform

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


class TemplateTooCostly(CaseError):
    """A notice template asked for more work than a notice needs (a huge loop, a huge
    string): refused with a message instead of holding the process."""


# The sandbox's bounds: iterations of every range() of one rendering together, the size
# of a string or list made by * or **, and the size of the rendered text.
MAX_TEMPLATE_ITERATIONS = 100_000
MAX_TEMPLATE_VALUE = 1_000_000
MAX_NOTICE_CHARS = 2_000_000
BUDGET_NAME = "__yinji_loop_budget"  # the loop wrapper the sandbox puts around every for
# Recipient addresses: one line, no controls (a CR/LF would add mail headers).
_BAD_ADDRESS = re.compile(r"[\x00-\x1f\x7f\u2028\u2029\u0085]")


def check_recipients(to: Iterable[str]) -> list[str]:
    """The recipient addresses, each checked: one address on one line with an @.
    A CR/LF or other control character (header injection) is refused naming it."""
    from email.utils import parseaddr

    out = []
    for raw in to:
        if not isinstance(raw, str):
            raise CaseError(f"recipient must be text, got {raw!r}")
        if _BAD_ADDRESS.search(raw):
            raise CaseError(
                f"recipient {raw!r} contains a line break or control character; "
                "give one e-mail address per recipient"
            )
        address = raw.strip()
        if not address:
            continue
        if len(address) > 320 or "@" not in parseaddr(address)[1]:
            raise CaseError(f"recipient {address!r} is not an e-mail address")
        out.append(address)
    return out


def notice_reference(case_ids: Iterable[str], today: Date) -> str:
    """The notice number (YJ-date-digest of the case ids): known before the notice is
    rendered, so the evidence reports can name it."""
    ids = sorted(set(case_ids))
    digest = hashlib.sha1("\x1f".join(ids).encode(), usedforsecurity=False).hexdigest()[:8]
    return f"YJ-{today:%Y%m%d}-{digest}"


def check_lang(lang: object) -> str:
    if lang not in LANGS:
        raise CaseError(f"language must be one of {', '.join(LANGS)}, got {lang!r}")
    return str(lang)


def check_format(fmt: object) -> str:
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
    to: str = ""  # the recipients named in the notice (the platform's, by default)
    facts: list[URLFact] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)  # URLs of the cases not named

    def blocks(self) -> list[tuple[str, str]]:
        """(kind, text) per line: title, h2, h3, item, para, space; ``keep`` and
        ``endkeep`` (lines ``!keep`` / ``!endkeep``) hold a block on one page (the
        statements with their signature)."""
        out: list[tuple[str, str]] = []
        for raw in self.text.splitlines():
            line = raw.rstrip()
            if line.strip() in ("!keep", "!endkeep"):
                out.append((line.strip()[1:], ""))
                continue
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
            elif kind in ("keep", "endkeep"):
                continue
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

    class BoundedSandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})

        def _generate(self, source: Any, *args: Any, **kwargs: Any) -> str:
            # Every {% for %} iterates through the rendering's step budget, so nested
            # loops over big values cannot run for hours (jinja2 3.x compiles the AST
            # here: the one place all loops pass through).
            from jinja2 import nodes

            for loop in source.find_all(nodes.For):
                loop.iter = nodes.Call(nodes.Name(BUDGET_NAME, "load"), [loop.iter], [], None, None)
            return str(super()._generate(source, *args, **kwargs))

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "**":
                if isinstance(right, int | float) and abs(right) > 64:
                    raise TemplateTooCostly(f"notice template: exponent {right} is too large")
                return left**right
            for seq, times in ((left, right), (right, left)):
                sized = isinstance(seq, str | list | tuple) and isinstance(times, int)
                if sized and len(seq) * times > MAX_TEMPLATE_VALUE:
                    raise TemplateTooCostly(
                        f"notice template: a value of {len(seq) * times:,} items is more "
                        f"than a notice needs (at most {MAX_TEMPLATE_VALUE:,})"
                    )
            return left * right

    loaders = []
    if templates_dir is not None and templates_dir.is_dir():
        loaders.append(FileSystemLoader(str(templates_dir)))
    loaders.append(FileSystemLoader(str(TEMPLATE_DIR)))
    return BoundedSandbox(
        loader=ChoiceLoader(loaders),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # plain text: each renderer escapes for its own format
    )


def _budgeted(budget: list[int]) -> Any:
    """Each item of a template's loops takes one step of the rendering's budget."""

    def steps(iterable: Any) -> Any:
        for item in iterable:
            budget[0] -= 1
            if budget[0] < 0:
                raise TemplateTooCostly(
                    f"notice template: loops of more than {MAX_TEMPLATE_ITERATIONS:,} steps in all"
                )
            yield item

    return steps


def _bounded_range(budget: list[int]) -> Any:
    def bounded(*args: int) -> Any:
        numbers = range(*args)
        if len(numbers) > MAX_TEMPLATE_ITERATIONS:
            raise TemplateTooCostly(
                f"notice template: range of {len(numbers):,} steps is more than a notice "
                f"needs (at most {MAX_TEMPLATE_ITERATIONS:,})"
            )
        if len(numbers) > budget[0]:
            raise TemplateTooCostly(
                f"notice template: loops of more than {MAX_TEMPLATE_ITERATIONS:,} steps in all"
            )
        for n in numbers:
            budget[0] -= 1
            if budget[0] < 0:
                raise TemplateTooCostly(
                    f"notice template: loops of more than {MAX_TEMPLATE_ITERATIONS:,} steps in all"
                )
            yield n

    return bounded


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.0%}"


def _ratio(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _pages_span(urls: Sequence[str]) -> tuple[str, str]:
    """(zh, en) naming pages 1 to N of a chapter taken together."""
    n = len(urls)
    return f"第 1–{n} 页合计", f"pages 1–{n} together"


def _url_context(f: URLFact, lang: str) -> dict[str, Any]:
    when = human_utc(f.at) if f.at is not None else ""
    together_zh, together_en = _pages_span(f.together) if f.together else ("", "")
    return {
        "case_id": f.case_id,
        "url": f.url,
        "label": f.label,
        "work_id": f.work_id,
        "work_title": f.work_title,
        "work_title_zh": zh_title(f.work_title),
        "book_id": f.book_id,
        "author": f.author,
        "chapter": f.chapter,
        "chapter_index": f.chapter_index,
        "chapter_zh": f.chapter_zh(),
        "chapter_en": f.chapter_en(),
        "page": f.page,
        "page_zh": page_label(f.page, "zh"),
        "page_en": page_label(f.page, "en"),
        "together": list(f.together),
        "together_zh": together_zh,
        "together_en": together_en,
        "char_similarity": _ratio(f.char_similarity),
        "initials_similarity": _ratio(f.initials_similarity),
        "coverage_pct": _pct(f.coverage),
        "fetched": f.fetched,
        "fetched_at": when if f.fetched else "",
        "submitted_at": "" if f.fetched else when,
        "content_sha256": f.content_sha256 or "",
        "evidence_file": f.evidence_file,
        "evidence_sha256": f.evidence_sha256,
    }


def notice_context(
    cases: Sequence[Case],
    profile: Profile,
    facts: NoticeFacts,
    *,
    lang: str,
    to: str | None = None,
    attachments: Sequence[str] = (),
    today: Date | None = None,
    evidence_key: str = "",
    platform: Platform | None = None,
) -> dict[str, object]:
    """What the templates see (documented in docs/TAKEDOWN.md): only the stored facts
    of ``facts`` (``tracker.cases.facts``), one entry per confirmed URL; ``platform``
    (``tracker.cases.platforms.Platform``) names the addressee when the registry
    knows the site."""
    today = today or Date.today()
    reference = notice_reference((c.id for c in cases), today)
    items = []
    first = {f.case_id: i for i, f in reversed(list(enumerate(facts.urls)))}
    every = [_url_context(f, lang) for f in facts.urls]  # chapter order over the notice
    books = _books(every)  # each book once, whichever of the cases its pages are in
    for number, book in enumerate(books, 1):
        book["number"] = number
    for c in sorted(cases, key=lambda c: first.get(c.id, len(first))):
        urls = [u for u in every if u["case_id"] == c.id]
        if not urls:
            continue
        works = list(dict.fromkeys(u["work_title"] for u in urls))
        items.append(
            {
                "id": c.id,
                "work": c.work,
                "work_title": " / ".join(works),
                "work_title_zh": "、".join(zh_title(w) for w in works),
                "works": works,
                "books": _books(urls),
                "domain": c.domain,
                "state": c.state,
                "kind": c.kind,
                "urls": urls,
            }
        )
    return {
        "lang": lang,
        "platform": cases[0].domain,
        "platform_name": platform.display_name(lang) if platform is not None else "",
        "platform_form": platform.web_form or "" if platform is not None else "",
        "to": to or "",
        "reference": reference,
        "evidence_key": evidence_key,
        "any_fetched": any(f.fetched for f in facts.urls),
        "any_submitted": any(not f.fetched for f in facts.urls),
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
        "books": books,
        "works_count": len(books),
        "attachments": list(attachments),
    }


def _books(urls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """URLs (in chapter order) grouped by book (or work), then by chapter: a book is
    named once, with the cases its URLs are in, each chapter once, each page under
    its chapter."""
    books: dict[str, dict[str, Any]] = {}
    for u in urls:
        key = u["book_id"] or u["work_title"]
        book = books.setdefault(
            key,
            {
                "id": u["book_id"],
                "title": u["work_title"],
                "title_zh": zh_title(u["work_title"]),
                "author": u["author"],
                "case_ids": [],
                "chapters": [],
                "urls": [],
            },
        )
        book["urls"].append(u)
        if u["case_id"] not in book["case_ids"]:
            book["case_ids"].append(u["case_id"])
        in_book = bool(u["book_id"]) and bool(u["chapter"] or u["chapter_index"])
        chapter_key = (u["chapter_index"], u["chapter"]) if in_book else None
        chapters = book["chapters"]
        if not chapters or chapters[-1]["key"] != chapter_key:
            chapters.append(
                {
                    "key": chapter_key,
                    "index": u["chapter_index"],
                    "title": u["chapter"],
                    "zh": u["chapter_zh"] if in_book and u["chapter"] else "",
                    "en": u["chapter_en"] if in_book else "",
                    "urls": [],
                }
            )
        chapters[-1]["urls"].append(u)
    for book in books.values():
        for chapter in book["chapters"]:
            if len(chapter["urls"]) == 1 and chapter["urls"][0]["page"] == 1:
                # The chapter's only URL here: "page 1" would add nothing.
                chapter["urls"][0].update(page_zh="", page_en="")
    return list(books.values())


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
        for work in item["works"]:
            if work not in text:
                missing.append(f"work {work!r}")
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

    budget = [MAX_TEMPLATE_ITERATIONS]
    try:
        template = env.get_template(name)
        out: list[str] = []
        size = 0
        bounds = {"range": _bounded_range(budget), BUDGET_NAME: _budgeted(budget)}
        for chunk in template.generate(**context, **bounds):
            size += len(chunk)
            if size > MAX_NOTICE_CHARS:
                raise TemplateTooCostly(
                    f"notice template {name}: the notice would be longer than "
                    f"{MAX_NOTICE_CHARS:,} characters"
                )
            out.append(chunk)
        return "".join(out)
    except CaseError:
        raise
    except (OverflowError, MemoryError, RecursionError) as exc:
        raise TemplateTooCostly(f"notice template {name}: {exc}") from None
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
    matches: Store,
    evidence: EvidenceLog | None = None,
    to: str | None = None,
    evidence_files: dict[str, tuple[str, str]] | None = None,
    templates_dir: Path | None = None,
    today: Date | None = None,
) -> Notice:
    """Render the notice of ``case_ids`` (one platform) from the stored facts of each
    confirmed URL (``tracker.cases.facts``): ``matches`` is the library's store (which
    match is confirmed, its work, passages and page), ``evidence`` the evidence log
    (captures: the fetch time and hash the notice quotes); ``evidence_files`` maps a
    URL to (file name, SHA-256) of its evidence report; ``templates_dir`` holds the
    user's overrides (default: ``<data folder>/templates/notices``). Refuses with
    ``NoConfirmedURL`` when no URL of the cases is confirmed."""
    lang = check_lang(lang)
    cases = svc.batch(case_ids)
    empty = [c.id for c in cases if not c.urls]
    if empty:
        raise CaseError(f"case(s) without any URL to take down: {', '.join(empty)}")
    if to:
        to = ", ".join(check_recipients(to.split(",")))
    facts = notice_facts(cases, matches, evidence=evidence, evidence_files=evidence_files)
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
        facts,
        lang=lang,
        to=to,
        attachments=[a.name for a in profile.attachments],
        today=today,
        evidence_key=_key_fingerprint(evidence),
        platform=svc.platform_of(cases[0]),
    )
    env = _environment(templates_dir)
    text = _render_template(env, f"{lang}/notice.txt.j2", context)
    subject = _render_template(env, f"{lang}/subject.txt.j2", context)
    notice = Notice(
        lang=lang,
        platform=str(context["platform"]),
        reference=str(context["reference"]),
        date=str(context["date"]),
        subject=" ".join(subject.split()),
        text=text,
        case_ids=[c.id for c in cases],
        profile=profile,
        urls=[f.url for f in facts.urls],
        to=to or "",
        facts=facts.urls,
        left_out=facts.left_out,
    )
    _check_elements(notice, context)
    return notice


def _key_fingerprint(evidence: EvidenceLog | None) -> str:
    """The evidence log's public-key fingerprint (SHA-256 of the raw Ed25519 key, the
    log's ``key_id``), printed so a reader can check the log's signatures; "" without."""
    if evidence is None:
        return ""
    from tracker.evidence.keys import format_fingerprint

    try:
        return format_fingerprint(str(evidence.key_id))
    except Exception as exc:  # a log whose key cannot be read: the notice says nothing
        log.warning("evidence log key unavailable: %s", exc)
        return ""


# --- evidence -------------------------------------------------------------------------------
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _evidence_log(library: Library) -> EvidenceLog | None:
    """The library's evidence log, or None when it cannot be opened (the notice then
    quotes the suspect records, and says nothing of a log)."""
    opener = getattr(library, "evidence_log", None)
    if opener is None:
        return None
    try:
        return opener()
    except Exception as exc:
        log.warning("evidence log unavailable for the notice: %s", exc)
        return None


def collect_evidence(
    library: Library,
    cases: Sequence[Case],
    *,
    reference: str = "",
    evidence: EvidenceLog | None = None,
) -> dict[str, tuple[str, bytes]]:
    """The PDF evidence report of each confirmed URL's match, naming its case and the
    notice ``reference``: ``{url: (file name, bytes)}``.

    A URL whose match is gone from the library (deleted since) or not confirmed is left
    out: the notice names no report for it."""
    from tracker.reports import build_report

    from .chapters import in_chapter_order
    from .facts import confirmed_match

    out: dict[str, tuple[str, bytes]] = {}
    for c in cases:
        confirmed = [
            (u, match)
            for u in c.urls
            if (match := confirmed_match(library.store, u.suspect_id, u.mother_id or c.work))
        ]
        # Numbered in chapter order (the notice lists its URLs so), not the order the
        # URLs joined the case: evidence-…-001 is the first chapter.
        ordered = in_chapter_order(confirmed, lambda pair: [pair[1].mother_title, pair[0].label])
        for n, (u, match) in enumerate(ordered, 1):
            try:
                data = build_report(
                    library, match.id, "pdf", evidence=evidence, case_id=c.id, notice=reference
                )
            except (NotFound, KeyError) as exc:
                log.warning("no evidence report for %s: %s", u.url, exc)
                continue
            name = _UNSAFE.sub("_", f"evidence-{c.id}-{n:03d}.pdf")
            out[u.url] = (name, data)
    return out


def prepare_notice(
    svc: CaseService,
    library: Library,
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
    to = check_recipients(to)
    if not to:  # addressed to the platform's abuse address when the registry has one
        platform = svc.platform_of(cases[0])
        if platform is not None and platform.abuse_email:
            to = [platform.abuse_email]
    today = Date.today()
    log_ = _evidence_log(library)
    reference = notice_reference((c.id for c in cases), today)
    evidence = (
        collect_evidence(library, cases, reference=reference, evidence=log_)
        if with_evidence
        else {}
    )
    notice = build_notice(
        svc,
        case_ids,
        lang,
        matches=library.store,
        evidence=log_,
        to=", ".join(to) or None,
        evidence_files={
            url: (name, hashlib.sha256(data).hexdigest()) for url, (name, data) in evidence.items()
        },
        today=today,
    )
    return notice, evidence


# --- PDF ------------------------------------------------------------------------------------
def render_pdf(notice: Notice) -> bytes:
    """A4 PDF with the CJK font embedded (see ``tracker.fonts``)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.lib.units import mm
    from reportlab.platypus import KeepTogether, Paragraph, SimpleDocTemplate, Spacer

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
    library: Library,
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
            "to": list(to) or [a.strip() for a in notice.to.split(",") if a.strip()],
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
