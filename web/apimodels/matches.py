"""The models of the matches and their reports (``web/handlers/api.py``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from tracker.common.records import MatchSort, Verdict

from .base import MAX_OFFSET, MAX_PAGE, ApiModel, TimeOrNull


class Passage(ApiModel):
    suspect_start: int | None = None
    suspect_end: int | None = None
    mother_start: int | None = None
    mother_end: int | None = None
    similarity: float | None = None


class ExcludedSpan(ApiModel):
    suspect_start: int | None = None
    suspect_end: int | None = None


class Region(ApiModel):
    """One copied stretch as a person reads it; inserted lines (ads, watermarks) inside it are
    excluded spans"""

    suspect_start: int | None = None
    suspect_end: int | None = None
    mother_start: int | None = None
    mother_end: int | None = None
    similarity: float | None = None
    excluded: list[ExcludedSpan] | None = None


class Match(ApiModel):
    id: str | None = None
    """suspect_id + U+001F + mother_id"""
    ref: str | None = None
    """id for URLs"""
    suspect_id: str | None = None
    mother_id: str | None = None
    mother_title: str | None = None
    suspect_title: str | None = None
    suspect_url: str | None = None
    domain: str | None = None
    score: float | None = None
    coverage: float | None = None
    mother_coverage: float | None = None
    engine: str | None = None
    verdict: Verdict | None = None
    note: str | None = None
    created_at: TimeOrNull = None
    updated_at: TimeOrNull = None
    passages: list[Passage] | None = None
    regions: list[Region] | None = None
    book_id: str | None = None
    """The book the work is a chapter of (null: none)"""
    book_title: str | None = None
    chapter: str | None = None
    """The chapter's heading as in the book"""
    chapter_index: int | None = None
    """1-based position in the book"""
    case_id: str | None = None
    """PATCH: the case the verdict opened or touched"""
    case_state: str | None = None


class MatchList(ApiModel):
    total: int | None = None
    offset: int | None = None
    limit: int | None = None
    matches: list[Match] | None = None


class MatchQuery(ApiModel):
    """The filters of GET /matches (those of the dashboard)."""

    verdict: Verdict | None = None
    min_score: Annotated[float | None, Field(ge=0.0, le=1.0)] = None
    max_score: Annotated[float | None, Field(ge=0.0, le=1.0)] = None
    work: str | None = None
    """Mother (work) id; alias mother_id"""
    suspect: str | None = None
    """Suspect id; alias suspect_id"""
    domain: str | None = None
    """Site: exact host or a parent domain (example.com matches www.example.com)"""
    since: str | None = None
    """Created at or after (date or ISO time)"""
    until: str | None = None
    """Created before; a date includes that whole day"""
    q: str | None = None
    """Text in the work title, suspect title or URL (case-insensitive)"""
    sort: MatchSort = "-score"
    offset: Annotated[int, Field(ge=0, le=MAX_OFFSET)] = 0
    limit: Annotated[int, Field(ge=0, le=MAX_PAGE)] = 50
    passages: Literal[0, 1] = 1
    """0 leaves the passages out"""


class MatchPatch(ApiModel):
    """PATCH /matches/{id}: the verdict and/or the note."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    verdict: Verdict | None = None
    note: Annotated[str | None, Field(max_length=10000)] = None
