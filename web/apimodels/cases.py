"""The models of the takedown cases (``web/handlers/cases_api.py``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, JsonValue, StrictBool

from tracker.cases.model import CaseKind, CaseState, EventKind, URLStatus

from .base import MAX_OFFSET, MAX_PAGE, ApiModel, TimeOrNull

NoticeFormat = Literal["pdf", "docx", "eml"]
NoticeLang = Literal["zh", "en"]


class UrlDetail(ApiModel):
    url: str | None = None
    suspect_id: str | None = None
    mother_id: str | None = None
    score: float | None = None
    coverage: float | None = None
    added_at: TimeOrNull = None
    status: URLStatus | None = None
    last_checked_at: TimeOrNull = None
    last_http_status: int | None = None
    last_outcome: str | None = None
    label: str | None = None
    chapter: str | None = None
    """A book case: the chapter this URL copies"""
    chapter_index: int | None = None
    """That chapter's 1-based place in the book"""
    page: int | None = None
    """The page of the chapter on the site (1, 2, ...); 0: not recorded"""


class Case(ApiModel):
    """A takedown case: one work copied on one site (the shape of `yinji case list --json`)"""

    id: str
    state: CaseState
    kind: CaseKind | None = None
    work: str
    work_title: str | None = None
    mother_ids: list[str] | None = None
    domain: str
    urls: list[str]
    url_details: list[UrlDetail] | None = None
    created_at: TimeOrNull = None
    updated_at: TimeOrNull = None
    state_changed_at: TimeOrNull = None
    notice_sent_at: TimeOrNull = None
    removed_at: TimeOrNull = None
    metadata: dict[str, JsonValue] | None = None
    version: int | None = None


class CaseEvent(ApiModel):
    """One entry of a case's hash-chained history"""

    case_id: str | None = None
    seq: int | None = None
    kind: EventKind | None = None
    who: str | None = None
    note: str | None = None
    from_state: str | None = None
    to_state: str | None = None
    data: dict[str, JsonValue] | None = None
    at: TimeOrNull = None
    prev_hash: str | None = None
    hash: str | None = None
    evidence_ref: str | None = None


class Platform(ApiModel):
    """A platform of the registry (tracker/cases/data/platforms.json, overridden by <data
    folder>/platforms.json)"""

    id: str | None = None
    name: str | None = None
    name_en: str | None = None
    domains: list[str] | None = None
    abuse_email: str | None = None
    web_form: str | None = None
    documents: list[str] | None = None
    process: str | None = None
    source: str | None = None


class CaseDetail(Case):
    platform: Platform | None = None
    """The registry's platform of the case's site (or the one chosen for it); null when the
    registry has none"""
    history: list[CaseEvent] | None = None
    history_problems: list[str] | None = None
    """Empty when every hash and link of the history checks"""


class CaseList(ApiModel):
    total: int | None = None
    offset: int | None = None
    limit: int | None = None
    cases: list[Case] | None = None


class SiteStats(ApiModel):
    domain: str | None = None
    cases: int | None = None
    noticed: int | None = None
    removed: int | None = None
    removed_after_notice: int | None = None
    removal_rate: float | None = None
    median_days_to_removal: float | None = None
    by_state: dict[str, int] | None = None


class SiteStatsList(ApiModel):
    sites: list[SiteStats] | None = None
    all: SiteStats | None = None


class LeftOut(ApiModel):
    url: str | None = None
    reason: str | None = None


class NoticePreview(ApiModel):
    reference: str | None = None
    lang: NoticeLang | None = None
    platform: str | None = None
    date: str | None = None
    subject: str | None = None
    text: str | None = None
    """The template's light markup"""
    plain_text: str | None = None
    """As the body of an e-mail"""
    case_ids: list[str] | None = None
    urls: list[str] | None = None
    """The URLs the notice names: only those with a confirmed match, in chapter order"""
    left_out: list[LeftOut] | None = None
    """URLs of the cases the notice does not name, and why (their match is pending or dismissed, or
    gone from the library)"""


class CaseQuery(ApiModel):
    state: CaseState | None = None
    domain: str | None = None
    """The site (exact host) of the cases"""
    work: str | None = None
    """The work of the cases (a mother id, or a book's work key)"""
    offset: Annotated[int, Field(ge=0, le=MAX_OFFSET)] = 0
    limit: Annotated[int, Field(ge=0, le=MAX_PAGE)] = 50


class CaseSitesQuery(ApiModel):
    work: str | None = None
    """Only the cases of this work"""


class TransitionIn(ApiModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    to: CaseState
    note: Annotated[str | None, Field(max_length=10000)] = None


class NoteIn(ApiModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    note: Annotated[str, Field(max_length=10000)]


class NoticeQuery(ApiModel):
    lang: NoticeLang = "zh"


class NoticeIn(ApiModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    format: NoticeFormat
    lang: NoticeLang
    to: list[str] | str | None = None
    """E-mail addresses (one as a string, or a list)"""
    evidence: StrictBool = True
    """Attach the evidence reports and proofs of ownership"""
    cases: list[str] | None = None
    """More cases on the same site: one notice for all"""
