"""The models of discovery: runs and sites (``web/handlers/discover.py``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, JsonValue, RootModel

from .base import ApiModel, TimeOrNull


class DiscoverOverview(ApiModel):
    """Providers with today's use and quota, sites, budgets and the last run
    (``tracker.discovery.service.overview``)."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)


class SourceStats(ApiModel):
    found: int | None = None
    fetched: int | None = None
    checked: int | None = None
    matched: int | None = None
    duplicates: int | None = None
    errors: int | None = None


class RunMatch(ApiModel):
    url: str | None = None
    suspect_id: str | None = None
    mother_id: str | None = None
    title: str | None = None
    score: float | None = None
    source: str | None = None
    pages: list[str] | None = None
    """A chapter read over several pages: each page's URL"""
    evidence_url: str | None = None
    """The evidence view"""


class Run(ApiModel):
    """One discovery run: what it asked, fetched, checked and found, per source"""

    id: str | None = None
    started_at: TimeOrNull = None
    finished_at: TimeOrNull = None
    """UTC, milliseconds, Z: 2026-11-25T09:26:15.794Z; empty while running"""
    works: int | None = None
    books: int | None = None
    """Distinct books: what sites are searched for"""
    queries: int | None = None
    cached: int | None = None
    fetched: int | None = None
    checked: int | None = None
    duplicates: int | None = None
    matched: int | None = None
    traps: int | None = None
    skipped: int | None = None
    """Pages too short to check"""
    refused: int | None = None
    """URLs the SSRF guard or robots.txt refused, or that did not resolve: no page of the budget
    spent"""
    sources: dict[str, SourceStats] | None = None
    errors: list[str] | None = None
    """The first 200 failures, each naming its source"""
    error_kinds: dict[str, int] | None = None
    """Every failure counted by kind (its message without URLs, quoted values and numbers)"""
    not_found: list[str] | None = None
    """Site searches that found no book"""
    idle: str | None = None
    """Why a run that fetched nothing did nothing"""
    matches: list[RunMatch] | None = None


class RunList(ApiModel):
    runs: list[Run] | None = None


class RunIn(ApiModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    works: list[str] | None = None
    max_queries: Annotated[int | None, Field(ge=0, le=1000)] = None
    max_pages: Annotated[int | None, Field(ge=1, le=100000)] = None
    max_works: Annotated[int | None, Field(ge=1, le=100000)] = None


class RunStarted(ApiModel):
    task_id: str | None = None
    run_id: str | None = None
    run: str | None = None
    """GET it: the run's counts so far (/api/v1/discover/runs/{run_id})"""
    progress: str | None = None
    """GET it: the run's progress, its crawl chunks added up (/api/v1/jobs/{task_id})"""


class Site(ApiModel):
    url: str | None = None
    search_url: str | None = None
    """{q} stands for the query"""
    encoding: str | None = None
    profile: str | None = None
    """jieqi, ptcms, biquge, form, given, or legado (an imported source)"""
    added_at: TimeOrNull = None
    note: str | None = None
    """A Legado source's name"""
    origin: str | None = None
    """site add, or the file/URL imported"""
    status: str | None = None
    """A Legado source: imported or partial"""
    reasons: list[str] | None = None
    meta: dict[str, JsonValue] | None = None
    """legado: the source as imported; health: the last search (at, ok, results, error), failures
    in a row, disabled"""


class SiteList(ApiModel):
    sites: list[Site] | None = None


class SiteIn(ApiModel):
    url: str
    search_url: str | None = None
    encoding: str | None = None


class SourcesUrlIn(ApiModel):
    url: str


class SourcesIn(RootModel[SourcesUrlIn | list[dict[str, JsonValue]] | dict[str, JsonValue]]):
    root: SourcesUrlIn | list[dict[str, JsonValue]] | dict[str, JsonValue]


class SourcesFileIn(ApiModel):
    file: bytes | None = None


class SourceVerdict(ApiModel):
    name: str | None = None
    url: str | None = None
    status: Literal["imported", "partial", "refused"] | None = None
    reasons: list[str] | None = None


class SourcesImported(ApiModel):
    counts: dict[str, int] | None = None
    sources: list[SourceVerdict] | None = None


class EnableIn(ApiModel):
    enabled: bool | None = None
