"""Evidence reports of one match (JSON, HTML, PDF) and exports of match lists (CSV, JSON).

An evidence report is what an anti-piracy team sends to a platform or a lawyer: the
work, the suspect page (URL, the capture of the page when the evidence log has one),
a timeline of recorded times (imported, fetched or "submitted text, not fetched",
checked, verdict; contradictions flagged), the scores, every copied passage side by side
with its offsets, its similarity on characters and on pinyin initials, the differing
characters marked (homophones, variant forms, edits) and its segment pairs, the
regions (one per copied stretch, its inserted lines struck through as excluded), the
reviewer's verdict and note, and SHA-256 digests of both texts so that the evidence can
be verified later. Headings are bilingual (中文 / English).

- ``data``: ``report_data`` gathers it as a typed ``ReportData`` (the JSON report;
  its types in ``schema``, the recorded times and page origin in ``provenance``).
- ``view``: the region and passage rows and marks both renderers draw.
- ``html``: ``render_html``, from the package-data template ``templates/report.html``.
- ``pdf``: ``render_pdf`` (reportlab, in named steps; the CJK font of ``tracker.plumbing.fonts``
  embedded), made PDF/A-2b by ``pdfa.make_pdfa`` (pikepdf).
- ``lists``: ``match_row`` and ``render_match_list`` for the CSV/JSON list exports.

Hook for the library, CLI and web app::

    pdf = build_report(library, match_id, "pdf", evidence=evidence_log)  # bytes

Suspect text, titles and URLs come from pirate sites and are hostile: the HTML report
is rendered with autoescaping (no ``|safe``), the PDF escapes reportlab's paragraph
markup, and CSV cells that a spreadsheet would run as a formula are neutralised.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING

from tracker.reports.data import (
    VERDICT_LABELS,
    CaptureInfo,
    DiffData,
    PassageData,
    ReportData,
    SegmentData,
    SuspectInfo,
    TimelineEvent,
    WorkInfo,
    report_data,
)
from tracker.reports.html import REPORT_CSS, render_html, safe_http_url
from tracker.reports.lists import LIST_COLUMNS, LIST_FORMATS, match_row, render_match_list
from tracker.reports.pdf import render_pdf

if TYPE_CHECKING:
    from tracker.evidence import Capture, EvidenceLog, Submission
    from tracker.reports.data import HasStore

REPORT_FORMATS = ("json", "html", "pdf")

__all__ = [
    "LIST_COLUMNS",
    "LIST_FORMATS",
    "REPORT_CSS",
    "REPORT_FORMATS",
    "VERDICT_LABELS",
    "CaptureInfo",
    "DiffData",
    "PassageData",
    "ReportData",
    "SegmentData",
    "SuspectInfo",
    "TimelineEvent",
    "WorkInfo",
    "build_report",
    "match_row",
    "render_html",
    "render_match_list",
    "render_pdf",
    "report_data",
    "safe_http_url",
]


def build_report(
    library: HasStore,
    match_id: str,
    fmt: str,
    *,
    evidence: EvidenceLog | None = None,
    capture: Capture | None = None,
    submission: Submission | None = None,
    verdict_at: datetime | None = None,
    case_id: str | None = None,
    notice: str | None = None,
) -> bytes:
    """The evidence report of one match as ``json``, ``html`` or ``pdf`` bytes.

    ``evidence`` (the ``tracker.evidence.EvidenceLog``) supplies the page capture and
    the check and verdict times; ``capture``/``submission``/``verdict_at`` give them
    directly (see ``report_data``); ``case_id`` and ``notice`` name the takedown case and
    notice number the report is attached to. Raises ``ValueError`` for another format and
    ``NotFound`` for an unknown match.
    """
    if fmt not in REPORT_FORMATS:
        raise ValueError(f"report format must be one of {', '.join(REPORT_FORMATS)}, got {fmt!r}")
    data = report_data(
        library,
        match_id,
        evidence=evidence,
        capture=capture,
        submission=submission,
        verdict_at=verdict_at,
        case_id=case_id,
        notice=notice,
    )
    if fmt == "json":
        return json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8", errors="replace")
    if fmt == "html":
        return render_html(data).encode("utf-8", errors="replace")
    return render_pdf(data)
