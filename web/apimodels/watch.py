"""The models of the watch list and the monitored books (``web/handlers/watch.py``)."""

from __future__ import annotations

from pydantic import ConfigDict

from tracker.cases.model import CaseState
from tracker.services.watch_list import WatchKind

from .base import ApiModel, TimeOrNull


class WatchItem(ApiModel):
    url: str | None = None
    kind: WatchKind | None = None
    active: bool | None = None
    added_at: TimeOrNull = None
    last_crawled_at: TimeOrNull = None
    case_id: str | None = None
    """A book's case"""


class WatchItems(ApiModel):
    items: list[WatchItem] | None = None
    next_crawl_at: TimeOrNull = None


class WatchIn(ApiModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    url: str
    kind: WatchKind = "url"


class WatchAdded(WatchItem):
    """The item watched, with its first crawl's job."""

    job_id: str | None = None
    status_url: str | None = None
    next_crawl_at: TimeOrNull = None


class UnwatchQuery(ApiModel):
    url: str


class WatchedChapter(ApiModel):
    n: int | None = None
    url: str | None = None
    title: str | None = None
    matches: int | None = None
    error: str | None = None


class WatchedBook(ApiModel):
    index_url: str | None = None
    title: str | None = None
    case_id: str | None = None
    case_state: CaseState | None = None
    domain: str | None = None
    watched: bool | None = None
    checked_at: TimeOrNull = None
    pages_fetched: int | None = None
    truncated: bool | None = None
    chapters: list[WatchedChapter] | None = None
    """In chapter order (第N章 in the link text)"""


class WatchedBooks(ApiModel):
    books: list[WatchedBook] | None = None
