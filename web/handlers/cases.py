"""Takedown cases: the board (by state, site and work, with removal figures per site),
a case's page (URLs, matches, notices, re-crawl history, full history), its actions
(mark sent, dispute, close, re-check now, note), the notice's preview and download,
and the rights-holder profile. Every change goes through ``tracker.cases``."""

from __future__ import annotations

from flask import Blueprint, Response, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue

from tracker.books.model import Book
from tracker.cases import STATES, TRANSITIONS, CaseError
from tracker.cases.model import Case, CaseURL, page_label, verify_chain
from tracker.cases.store import MAX_BLOB_BYTES
from tracker.common.records import Match, match_id
from tracker.common.rules import check_note, normalize_domain
from workers import jobs

from ..books import book_of, chapter_of
from ..casework import (
    NOTICE_FORMATS,
    NOTICE_LANGS,
    actor,
    case_errors,
    case_state_labels,
    case_state_text,
    cases,
    get_case,
    is_removal,
    notice_file,
    notice_preview,
    site_stats,
    state_counts,
    totals,
)
from ..core import Page, bad_request, fail, page_arg, records, role_required, work_choices
from ..i18n import current_language
from ..i18n import translate as _

bp = Blueprint("cases", __name__)
# For every page's templates (the case badge of _macros.html, the board, a match): a
# state's one wording (tracker.cases.model.STATE_LABELS), and whether a case's pages
# are down now (a re-opened case's earlier removal is history, not its state).
bp.add_app_template_global(case_state_text, "case_state_text")
bp.add_app_template_global(is_removal, "is_removal")

PER_PAGE = 50
# The moves the case page offers as buttons (notice_sent has its own form: mark sent).
# The platforms' complaint flow the case page draws (线索 → 初审 → 材料审核 → 删除下架 / 赔偿).
FLOW = (
    ("open", "Clue"),
    ("notice_sent", "First review"),
    ("documents", "Document review"),
    ("removed", "Taken down"),
    ("compensated", "Compensated"),
)
ACTIONS = ("documents", "compensated", "disputed", "closed", "open", "removed", "still_online")


def _note() -> str:
    with bad_request():
        return check_note(request.form.get("note") or "") or ""


def _back(case_id: str) -> ResponseReturnValue:
    return redirect(url_for("cases.show", case_id=case_id))


# --- the board -----------------------------------------------------------------------------
@bp.get("/cases")
def board() -> ResponseReturnValue:
    svc = cases()
    error = None
    state = (request.args.get("state") or "").strip() or None
    domain = normalize_domain(request.args.get("domain") or "") or None
    work = (request.args.get("work") or "").strip() or None
    if state is not None and state not in STATES:
        error, state = f"state must be one of {', '.join(STATES)}, got {state!r}", None
    # Counts per state under the other filters (the tabs), and the sites' figures
    # under the work filter: one read of the cases, filtered here.
    scope = svc.list_cases(domain=domain, work=work)
    counts = state_counts(scope)
    shown = [c for c in scope if state is None or c.state == state]
    page, per_page = page_arg(PER_PAGE)
    pager = Page(page, per_page, len(shown))
    sites = site_stats(svc.list_cases(work=work))
    args = {k: v for k, v in (("state", state), ("domain", domain), ("work", work)) if v}
    return render_template(
        "cases/board.html",
        cases=shown[pager.offset : pager.offset + per_page],
        pager=pager,
        counts=counts,
        total=len(scope),
        sites=sites,
        all_sites=totals(sites),
        args=args,
        error=error,
        states=STATES,
        labels=case_state_labels(),
        works=work_choices(),
    )


# --- one case ------------------------------------------------------------------------------
@bp.get("/cases/<case_id>")
def show(case_id: str) -> ResponseReturnValue:
    case = get_case(case_id)
    events = cases().history(case.id)
    problems = verify_chain(events)
    matches: dict[str, Match | None] = {}
    for u in case.urls:
        mid = match_id(u.suspect_id, u.mother_id or case.work)
        try:
            matches[u.url] = records().get_match(mid)
        except KeyError:  # the match was deleted since (its work, say): the URL stays
            matches[u.url] = None
    notices = [
        e
        for e in events
        if e.kind == "notice" or (e.kind == "transition" and e.to_state == "notice_sent")
    ]
    rechecks = [e for e in events if e.kind == "recheck"]
    moves = [s for s in ACTIONS if s in TRANSITIONS.get(case.state, frozenset())]
    book = case.metadata.get("book") if isinstance(case.metadata.get("book"), dict) else None
    lang = current_language()
    return render_template(
        "cases/show.html",
        case=case,
        works=[(mid, chapter_of(mid, lang)) for mid in case.mother_ids],
        chapters={u.url: _chapter_name(case, u, lang) for u in case.urls},
        in_book=books_of(case),
        events=list(reversed(events)),
        problems=problems,
        matches=matches,
        notices=list(reversed(notices)),
        rechecks=list(reversed(rechecks)),
        moves=moves,
        can_send=case.state in ("open", "still_online", "disputed", "notice_sent", "documents"),
        platform=cases().platform_of(case),
        flow=FLOW,
        labels=case_state_labels(),
        book=book,
        langs=NOTICE_LANGS,
        formats=NOTICE_FORMATS,
    )


def _chapter_name(case: Case, u: CaseURL, lang: str) -> str:
    """The chapter (and page) a case URL copies, named as the notices name it:
    ``《西游记》第四十一回 … · 第 2 页`` / ``"西游记", chapter 41 (…) · page 2``; the
    book's record first (its current title), else what the case recorded."""
    name = chapter_of(u.mother_id, lang) if u.mother_id else ""
    if not name:
        ref = u.chapter_ref(case)
        name = ref.label(lang) if ref is not None else ""
    page = page_label(u.page, lang)
    return " · ".join(x for x in (name, page) if x)


def books_of(case: Case) -> list[Book]:
    """The books whose chapters the case holds (a book case: one)."""
    found: dict[str, Book] = {}
    for mid in case.mother_ids:
        book = book_of(mid)
        if book is not None:
            found.setdefault(book.id, book)
    return list(found.values())


@bp.post("/cases/<case_id>/mark-sent")
@role_required("analyst")
def mark_sent(case_id: str) -> ResponseReturnValue:
    note = _note()
    with case_errors():
        case = records().mark_sent(
            cases(), case_id, who=actor(), note=note, data={"channel": "manual"}
        )
    flash(_("Notice marked as sent."), "info")
    return _back(case.id)


@bp.post("/cases/<case_id>/state")
@role_required("analyst")
def set_state(case_id: str) -> ResponseReturnValue:
    wanted = (request.form.get("state") or "").strip()
    if wanted not in ACTIONS:
        fail(400, f"state must be one of {', '.join(ACTIONS)}, got {wanted!r}")
    note = _note()
    with case_errors():
        case = cases().transition(case_id, wanted, who=actor(), note=note)
    flash(_("Case moved to {state}.", state=case_state_labels()[case.state]), "info")
    return _back(case.id)


@bp.post("/cases/<case_id>/note")
@role_required("analyst")
def add_note(case_id: str) -> ResponseReturnValue:
    note = _note()
    with case_errors():
        case = cases().add_note(case_id, note, who=actor())
    flash(_("Note added."), "info")
    return _back(case.id)


@bp.post("/cases/<case_id>/recheck")
@role_required("analyst")
def recheck(case_id: str) -> ResponseReturnValue:
    case = get_case(case_id)
    if not case.urls:
        fail(400, f"case {case.id} has no URL to re-check")
    with bad_request():
        job_id = jobs.submit_recheck([case.id])
    flash(_("Re-check queued: {n} URLs.", n=len(case.urls)), "info")
    return redirect(url_for("suspects.job", job_id=job_id, kind="recheck"))


# --- notices -------------------------------------------------------------------------------
def _lang() -> str:
    """The notice's language (``notice_lang``; ``lang`` is the page's own language)."""
    lang = request.values.get("notice_lang") or "zh"
    if lang not in NOTICE_LANGS:
        fail(400, f"notice_lang must be one of {', '.join(NOTICE_LANGS)}, got {lang!r}")
    return lang


@bp.get("/cases/<case_id>/notice")
def notice(case_id: str) -> ResponseReturnValue:
    """The notice's text laid out as HTML (its blocks: title, sections, list items),
    with the download buttons. What keeps it from being written (no profile yet, a
    template that leaves out a required element) is said on the page."""
    case = get_case(case_id)
    lang = _lang()
    rendered, error = None, None
    try:
        rendered = notice_preview([case.id], lang)
    except CaseError as exc:
        error = str(exc)
    return render_template(
        "cases/notice.html",
        case=case,
        notice=rendered,
        error=error,
        lang=lang,
        langs=NOTICE_LANGS,
        formats=NOTICE_FORMATS,
        labels=case_state_labels(),
    )


@bp.post("/cases/<case_id>/notice")
@role_required("analyst")
def notice_download(case_id: str) -> Response:
    case = get_case(case_id)
    fmt = request.form.get("format") or ""
    if fmt not in NOTICE_FORMATS:
        fail(400, f"format must be one of {', '.join(NOTICE_FORMATS)}, got {fmt!r}")
    to = [a.strip() for a in (request.form.get("to") or "").split(",") if a.strip()]
    out = notice_file(
        [case.id], fmt, _lang(), to=to, with_evidence=request.form.get("evidence") != "0"
    )
    response = Response(out.data, content_type=out.content_type)
    response.headers["Content-Disposition"] = f'attachment; filename="{out.filename}"'
    return response


# --- the rights holder -------------------------------------------------------------------------
def _missing(missing: list[str]) -> list[str]:
    """``Profile.missing()`` in the page's language."""
    labels = {
        "name": _("the rights holder's name"),
        "address": _("the address"),
        "email or phone": _("an e-mail address or a phone number"),
    }
    return [labels.get(m, m) for m in missing]


@bp.get("/cases/profile")
@role_required("admin")
def profile() -> ResponseReturnValue:
    prof = cases().profile()
    return render_template("cases/profile.html", profile=prof, missing=_missing(prof.missing()))


@bp.post("/cases/profile")
@role_required("admin")
def profile_save() -> ResponseReturnValue:
    svc = cases()
    form = request.form
    detach = form.getlist("detach")
    with case_errors():
        # A field left out of the form (None) keeps its value.
        svc.set_profile(
            name=form.get("name"),
            contact=form.get("contact"),
            email=form.get("email"),
            phone=form.get("phone"),
            address=form.get("address"),
        )
        for name in detach:
            svc.remove_attachment(name)
        for storage in request.files.getlist("attachments"):
            name = (storage.filename or "").strip()
            if not name:
                continue  # an empty file input
            storage.stream.seek(0)
            data = storage.stream.read(MAX_BLOB_BYTES + 1)
            if len(data) > MAX_BLOB_BYTES:
                fail(413, f"attachment {name} is larger than {MAX_BLOB_BYTES // 2**20} MB")
            svc.add_attachment(name, data, storage.mimetype or None)
    flash(_("Profile saved."), "info")
    return redirect(url_for("cases.profile"))
