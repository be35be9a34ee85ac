"""One case's evidence report as an HTTP answer (the export page and the REST API)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from flask import Response

from tracker.reports import build_report

from .core import get_or_404, library, records
from .security import REPORT_CSP

MIME = {
    "csv": "text/csv; charset=utf-8",
    "json": "application/json; charset=utf-8",
    "html": "text/html; charset=utf-8",
    "pdf": "application/pdf",
}
REPORT_FORMATS = ("json", "html", "pdf")

if TYPE_CHECKING:
    from tracker.evidence import EvidenceLog


def open_log() -> EvidenceLog | None:
    """The library's evidence log, or None when it cannot be opened (a read-only
    folder, a key that cannot be read): the views still show the stored records."""
    try:
        return library().evidence_log()
    except Exception:
        return None


def stored_time(iso: str | None) -> str:
    """A time of a report (``tracker.common.timefmt.iso_utc``: ``2026-11-28T06:17:53.862Z``)
    for people, with the precision it was stored with: ``2026-11-28 06:17:53.862 UTC``
    ("—" when none was recorded). The evidence view and the reports show one instant."""
    if not iso:
        return "—"
    import re

    from tracker.common.timefmt import iso_utc, parse_utc

    utc = re.fullmatch(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d(?:\.\d+)?)(?:Z|\+00:00)", iso)
    if utc is None:  # another zone: the same instant in UTC, to the millisecond
        try:
            utc = re.fullmatch(r"(\S+)T(\S+)Z", iso_utc(parse_utc(iso)))
        except ValueError:
            return iso
    assert utc is not None
    return f"{utc.group(1)} {utc.group(2)} UTC"


def case_name(match_id: str) -> str:
    """An ASCII file name for a case: ids may hold anything, headers may not."""
    return "yinji-evidence-" + hashlib.sha256(match_id.encode("utf-8")).hexdigest()[:12]


def bundle_response(match_id: str) -> Response:
    """The match's evidence bundle (zip: records, captured bytes, proofs, signed tree
    head, timestamp, reports), as ``yinji evidence export --mother`` writes it."""
    import io

    from tracker.evidence import EvidenceError, NoEvidence

    from .core import fail

    lib = library()
    match = get_or_404(records().get_match, match_id, "no such match")
    sink = io.BytesIO()
    try:
        lib.export_evidence(sink, match.suspect_id, match.mother_id)
    except NoEvidence as exc:
        # A match checked before the evidence log existed has nothing to prove.
        fail(404, f"no evidence recorded for this match: {exc}")
    except EvidenceError as exc:
        # A log inconsistent with its signed heads, a blob missing or altered: nothing
        # is handed out, and the operator is told what (tracker.evidence.bundle).
        fail(500, f"the evidence bundle cannot be built: {exc}")
    response = Response(sink.getvalue(), content_type="application/zip")
    response.headers["Content-Disposition"] = f'attachment; filename="{case_name(match_id)}.zip"'
    return response


def _report(match_id: str, fmt: str) -> bytes:
    """The report with the evidence log's capture (the fetch time the notices quote) and
    the case and latest notice that name the page (issue #23: documents tie together)."""
    from .casework import cases

    lib = library()
    match = records().get_match(match_id)  # NotFound: 404 below
    log = open_log()  # no log: the report says what the records hold
    case_id, notice = cases().report_references(match.suspect_url)
    return build_report(lib, match_id, fmt, evidence=log, case_id=case_id, notice=notice)


def report_response(match_id: str, fmt: str, *, download: bool) -> Response:
    body = get_or_404(lambda key: _report(key, fmt), match_id, "no such match")
    response = Response(body, content_type=MIME[fmt])
    disposition = "attachment" if download or fmt == "pdf" else "inline"
    filename = f"{case_name(match_id)}.{fmt}"
    response.headers["Content-Disposition"] = f'{disposition}; filename="{filename}"'
    if fmt == "html":
        response.headers["Content-Security-Policy"] = REPORT_CSP
    return response
