"""The match dashboard, one match side by side, and verdicts."""

from __future__ import annotations

from dataclasses import replace

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from tracker.common.rules import check_note, check_verdict
from tracker.reports.data import report_data
from tracker.reports.view import passages_open
from tracker.store import VERDICTS, Match

from ..casework import case_state_labels, cases, set_verdict
from ..core import (
    VERDICT_LABELS,
    Page,
    bad_request,
    get_or_404,
    library,
    parse_match_filters,
    records,
    role_required,
    safe_next,
    work_choices,
)
from ..evidence import open_log, stored_time
from ..highlight import MARKS, diff_marks, segments
from ..i18n import translate as _

bp = Blueprint("matches", __name__)


@bp.get("/")
def home() -> ResponseReturnValue:
    return redirect(url_for("matches.dashboard"))


@bp.get("/matches")
def dashboard() -> ResponseReturnValue:
    error = None
    try:
        filters = parse_match_filters(request.args)
    except ValueError as exc:
        # A bad filter from a hand-edited URL: say so, show everything.
        error = str(exc)
        filters = parse_match_filters({})  # type: ignore[arg-type]
    query = filters.query
    total = records().count_matches(query)
    pager = Page(filters.page, filters.per_page, total)
    matches = records().query_matches(query)
    # Verdict counts under the other filters: the tabs above the table.
    counts = {}
    for verdict in (None, *VERDICTS):
        q = replace(query, verdict=verdict, offset=0, limit=0)
        counts[verdict or "all"] = records().count_matches(q)
    works = work_choices()
    return render_template(
        "matches/dashboard.html",
        matches=matches,
        pager=pager,
        counts=counts,
        error=error,
        args=request.args,
        query=query,
        works=works,
        verdicts=VERDICTS,
    )


def _get(match_id: str) -> Match:
    return get_or_404(records().get_match, match_id, "no such match")


def _evidence_key() -> str:
    """The evidence log's key fingerprint, grouped for people ("" when the log cannot
    be opened: the view still shows the match)."""
    from tracker.evidence import EvidenceError
    from tracker.evidence.keys import format_fingerprint

    try:
        return format_fingerprint(library().evidence_log().key_id)
    except (EvidenceError, ValueError):
        return ""


@bp.get("/matches/<id:match_id>")
def detail(match_id: str) -> ResponseReturnValue:
    match = _get(match_id)
    # The evidence view still shows the match when its suspect or work was deleted.
    try:
        suspect = records().get_suspect(match.suspect_id)
    except KeyError:
        suspect = None
    try:
        mother = records().get_work(match.mother_id)
    except KeyError:
        mother = None
    # The passages as the evidence report has them (tracker.reports.data: both
    # similarities, the character diff of tracker.matching.textdiff, segment pairs), numbered
    # in suspect order like the report.
    # With the evidence log, as the report: the 抓取时间 is the capture's stored time
    # (to the millisecond), not the suspect record's (a check may store it later).
    log = open_log()
    data = get_or_404(
        lambda key: report_data(library(), key, evidence=log), match_id, "no such match"
    )
    passages = data["passages"]
    # Regions (issue #39): one row per copied stretch, the inserted lines inside it
    # (ads, watermarks) marked as excluded in the suspect's text.
    regions = data["regions"]
    excluded = [(x["suspect_start"], x["suspect_end"]) for r in regions for x in r["excluded"]]
    suspect_marks, mother_marks = diff_marks(passages)
    suspect_segments = (
        segments(
            suspect.text,
            [(p["suspect_start"], p["suspect_end"], p["n"]) for p in passages],
            marks=suspect_marks,
            excluded=excluded,
        )
        if suspect
        else []
    )
    mother_segments = (
        segments(
            mother.text,
            [(p["mother_start"], p["mother_end"], p["n"]) for p in passages],
            marks=mother_marks,
        )
        if mother
        else []
    )
    counts = dict.fromkeys(MARKS, 0)
    for start, end, mark in suspect_marks:
        if mark != "deleted":
            counts[mark] += end - start
    counts["deleted"] = sum(end - start for start, end, mark in mother_marks if mark == "deleted")
    filed = [
        c
        for c in (cases().list_cases(domain=match.domain) if match.domain else [])
        if match.suspect_url and c.url(match.suspect_url) is not None
    ]
    return render_template(
        "matches/detail.html",
        evidence_key=_evidence_key(),
        match=match,
        suspect=suspect,
        mother=mother,
        passages=passages,
        regions=regions,
        excluded_count=len(excluded),
        passages_open=passages_open(len(passages), len(regions)),
        excluded_chars=sum(b - a for a, b in excluded),
        # A text handed in was never fetched: the report's rule, so both say the same.
        fetched=data["suspect"]["fetched"],
        fetched_at=stored_time(data["suspect"]["fetched_at"]),
        received_at=stored_time(data["suspect"]["received_at"]),
        suspect_segments=suspect_segments,
        mother_segments=mother_segments,
        marks=MARKS,
        mark_counts=counts,
        cases=filed,
        verdicts=VERDICTS,
    )


@bp.post("/matches/<id:match_id>/verdict")
@role_required("analyst")
def verdict(match_id: str) -> ResponseReturnValue:
    match = _get(match_id)
    with bad_request():
        verdict = check_verdict(request.form.get("verdict") or match.verdict)
        note = check_note(request.form.get("note"))
    # Through the case workflow (tracker.cases): the match, its case and the evidence
    # log change together, and the verdict is logged once.
    result = set_verdict(match.suspect_id, match.mother_id, verdict, note)
    flash(_("Verdict saved: {verdict}.", verdict=_(VERDICT_LABELS[verdict])), "info")
    if result.case is not None:
        state = case_state_labels()[result.case.state]
        flash(_("Case {id}: {state}.", id=result.case.id, state=state), "info")
    detail_url = url_for("matches.detail", match_id=match_id)
    return redirect(safe_next(request.form.get("next"), detail_url))
