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

The parts: ``notice_text`` (``Notice``, languages, formats, checks), ``notice_templates``
(what templates see, the sandbox, the elements check), ``notice_formats`` (PDF, DOCX,
EML); this module builds notices from cases and generates their files.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date as Date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracker.common.records import NotFound

from .facts import notice_facts
from .model import Case, CaseError
from .notice_formats import render
from .notice_templates import check_notice_elements, notice_context, render_notice_templates
from .notice_text import (
    Notice,
    check_format,
    check_lang,
    check_recipients,
    notice_reference,
)
from .service import CaseService

if TYPE_CHECKING:
    from tracker.evidence.log import EvidenceLog
    from tracker.library import Library
    from tracker.store import Store

log = logging.getLogger(__name__)

__all__ = [
    "GeneratedNotice",
    "build_notice",
    "collect_evidence",
    "generate_notice",
    "prepare_notice",
]


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
    text, subject = render_notice_templates(templates_dir, lang, context)
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
    check_notice_elements(notice, context)
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
