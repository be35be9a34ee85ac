"""Takedown cases in the web app, shared by the pages (``handlers/cases.py``), the REST
API (``handlers/cases_api.py``), the verdict routes and the analytics page.

The workflow itself is ``tracker.cases`` (docs/TAKEDOWN.md): the app keeps one
``CaseService`` over the installation's case store and calls it; verdicts given in the
web app or the API go through ``CaseService.apply_verdict``, so the match, its case
and the evidence log are changed together and the verdict is logged once.

What is computed here is only what the pages show about many cases at once: the
counts per state and, per site, removals, the removal rate and the median days from
the first notice to the removal (``site_stats``).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import get_args

from flask import current_app

from tracker.cases import (
    STATES,
    Case,
    CaseError,
    CaseService,
    ConcurrentUpdate,
    IllegalTransition,
    VerdictResult,
)
from tracker.cases.notices import Notice
from tracker.common.records import JSONObject, NotFound
from tracker.services.case_service import close_case_service, open_case_service

from .apimodels.cases import NoticeFormat, NoticeLang
from .core import current_user, fail, get_or_404, is_api, records, state

DAY = 86400.0


# --- the service ----------------------------------------------------------------------------
def cases() -> CaseService:
    """The app's ``CaseService`` (opened on first use, closed with the app's library
    handle). On first use it files the confirmed matches that have no case yet
    (confirmed before verdicts went through the case workflow), as ``yinji case list``
    does; from then on every verdict files itself."""
    return state().resource("cases", _open_cases, close=close_case_service)


def _open_cases() -> CaseService:
    svc = open_case_service(state().settings)
    try:
        records().sync_cases(svc, who="system:sync")
    except Exception:  # a failed sync must not keep the pages closed: it runs again
        current_app.logger.warning("could not file confirmed matches into cases", exc_info=True)
    return svc


def actor() -> str:
    """Who acts, as the case history names them: ``web:<user>`` on the pages,
    ``api:<user>`` through the REST API."""
    user = current_user()
    name = user.username if user is not None else "anonymous"
    return f"{'api' if is_api() else 'web'}:{name}"


@contextmanager
def case_errors() -> Iterator[None]:
    """The workflow's refusals as HTTP answers: an illegal move or a concurrent change
    is 409 (with the moves allowed), any other ``CaseError`` 400, an unknown id 404."""
    try:
        yield
    except IllegalTransition as exc:
        fail(409, str(exc))
    except ConcurrentUpdate as exc:
        fail(409, f"{exc}: reload and try again")
    except CaseError as exc:
        fail(400, str(exc))
    except NotFound as exc:
        fail(404, f"not found: {exc.args[0] if exc.args else exc}")


def get_case(case_id: str) -> Case:
    return get_or_404(cases().get, case_id, f"no case {case_id!r}")


def set_verdict(suspect_id: str, mother_id: str, verdict: str, note: str | None) -> VerdictResult:
    """The verdict of a match through ``CaseService.apply_verdict``: the store, the
    case (a confirmed match with a URL joins the case of its work and site; a withdrawn
    confirmation leaves it) and the evidence log in one step."""
    with case_errors():
        return records().apply_verdict(
            cases(), suspect_id, mother_id, verdict, who=actor(), note=note
        )


def case_state_labels(lang: str | None = None) -> dict[str, str]:
    """Each state as people read it in ``lang`` (default: the request's language), from
    the one table the command line reads too (``tracker.cases.model.STATE_LABELS``)."""
    from tracker.cases.model import STATE_LABELS, state_label

    from .i18n import current_language

    chosen = lang or current_language()
    return {state: state_label(state, chosen) for state in STATE_LABELS}


def case_state_text(state: str) -> str:
    """One state in the request's language (``case_state_labels``)."""
    from tracker.cases.model import state_label

    from .i18n import current_language

    return state_label(state, current_language())


# --- figures over many cases -----------------------------------------------------------------
def is_removal(case: Case) -> bool:
    """The case's pages were taken down: it is ``removed``, compensated or closed after a
    removal (a removed case whose page came back is open again and does not count)."""
    return case.removed_at is not None and case.state in ("removed", "compensated", "closed")


def days_to_removal(case: Case) -> float | None:
    """Days from the first notice to the (latest) removal; None without both."""
    if not is_removal(case) or case.notice_sent_at is None or case.removed_at is None:
        return None
    return max(0.0, (case.removed_at - case.notice_sent_at).total_seconds() / DAY)


@dataclass
class SiteStats:
    """One site's takedown figures.

    ``removal_rate`` is removals after a notice over cases noticed (None before any
    notice); ``median_days`` the median of the days from the first notice to the
    removal over those removals (None before any). ``removed`` also counts pages that
    went before a notice was sent."""

    domain: str
    cases: int = 0
    noticed: int = 0
    removed: int = 0
    removed_after_notice: int = 0
    by_state: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATES, 0))
    days: list[float] = field(default_factory=list)

    @property
    def removal_rate(self) -> float | None:
        return self.removed_after_notice / self.noticed if self.noticed else None

    @property
    def median_days(self) -> float | None:
        return statistics.median(self.days) if self.days else None

    def to_dict(self) -> JSONObject:
        rate, median = self.removal_rate, self.median_days
        return {
            "domain": self.domain,
            "cases": self.cases,
            "noticed": self.noticed,
            "removed": self.removed,
            "removed_after_notice": self.removed_after_notice,
            "removal_rate": None if rate is None else round(rate, 4),
            "median_days_to_removal": None if median is None else round(median, 2),
            "by_state": dict(self.by_state),
        }


def site_stats(all_cases: Iterable[Case]) -> list[SiteStats]:
    """Per site (case domain): cases, notices, removals, removal rate and median days
    to removal; the sites with the most cases first."""
    sites: dict[str, SiteStats] = {}
    for c in all_cases:
        s = sites.setdefault(c.domain, SiteStats(c.domain))
        s.cases += 1
        s.by_state[c.state] = s.by_state.get(c.state, 0) + 1
        removed = is_removal(c)
        s.removed += removed
        if c.notice_sent_at is not None:
            s.noticed += 1
            days = days_to_removal(c)
            if days is not None:
                s.removed_after_notice += 1
                s.days.append(days)
    return sorted(sites.values(), key=lambda s: (-s.cases, s.domain))


def totals(stats: Iterable[SiteStats]) -> SiteStats:
    """All sites together (the median over every removal, not a median of medians)."""
    out = SiteStats("")
    for s in stats:
        out.cases += s.cases
        out.noticed += s.noticed
        out.removed += s.removed
        out.removed_after_notice += s.removed_after_notice
        out.days += s.days
        for k, v in s.by_state.items():
            out.by_state[k] = out.by_state.get(k, 0) + v
    return out


def state_counts(all_cases: Iterable[Case]) -> dict[str, int]:
    counts = dict.fromkeys(STATES, 0)
    for c in all_cases:
        counts[c.state] = counts.get(c.state, 0) + 1
    return counts


# --- notices ---------------------------------------------------------------------------------
NOTICE_FORMATS: tuple[str, ...] = get_args(NoticeFormat)
NOTICE_LANGS: tuple[str, ...] = get_args(NoticeLang)


def notice_preview(case_ids: list[str], lang: str) -> Notice:
    """The rendered notice (``tracker.cases.notices.Notice``) of ``case_ids`` in
    ``lang``, without the evidence reports (a preview names no report files). Raises
    ``CaseError`` when it cannot be written (no profile yet, a template that leaves
    out a required element, a closed case)."""
    from tracker.cases.notices import prepare_notice

    from .core import library

    notice, _ = prepare_notice(cases(), library(), case_ids, lang, with_evidence=False)
    return notice


@dataclass
class NoticeFile:
    data: bytes
    filename: str
    content_type: str
    reference: str
    sha256: str


def notice_file(
    case_ids: list[str], fmt: str, lang: str, *, to: list[str], with_evidence: bool
) -> NoticeFile:
    """The notice as a file, as ``yinji case notice`` writes it: PDF or DOCX, or an
    e-mail (EML) with the notice as PDF, each URL's evidence report (``with_evidence``)
    and the proofs of ownership attached. Recorded in each case's history as a notice
    ``generated`` (format, language, reference, SHA-256 of the file)."""
    from tracker.cases.notice_text import CONTENT_TYPES
    from tracker.cases.notices import generate_notice
    from tracker.cases.settings import CaseSettings
    from tracker.plumbing.config import SettingError

    from .core import library

    svc = cases()
    with case_errors():
        sender = None
        if fmt == "eml":
            try:
                smtp = CaseSettings.from_env().smtp
            except SettingError as exc:
                fail(500, f"the e-mail settings are wrong: {exc}")
                raise
            sender = smtp.sender if smtp and smtp.sender else None
        made = generate_notice(
            svc,
            library(),
            case_ids,
            fmt,
            lang,
            who=actor(),
            to=to,
            with_evidence=with_evidence and fmt == "eml",
            sender=sender,
            channel="api" if is_api() else "web",
        )
    notice, fmt, data, digest = made.notice, made.fmt, made.data, made.sha256
    return NoticeFile(
        data, f"{notice.filename_stem}.{fmt}", CONTENT_TYPES[fmt], notice.reference, digest
    )
