"""The watch list as the daily re-crawl and the first crawl of an item use it: the
active items, when their crawl was sent, and when an item was crawled
(``tracker.cases.watching.mark_crawled``: what the watch page shows)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from tracker.cases.watching import mark_crawled
from tracker.records import WatchItem

if TYPE_CHECKING:
    from tracker.library import Library


class WatchList:
    """The watch list of one library."""

    def __init__(self, library: Library) -> None:
        self._store = library.store

    def active(self) -> list[WatchItem]:
        """The items the daily run crawls."""
        return self._store.list_watch(active_only=True)

    def mark_sent(self, items: list[WatchItem], when: datetime) -> None:
        """The crawls of ``items`` were sent at ``when`` (their outcome is in the job)."""
        for item in items:
            item.last_crawled_at = when
            self._store.put_watch(item)

    def mark_crawled(self, url: str, when: datetime | None = None) -> bool:
        """The item ``url`` was crawled (default: now); False when it is not listed."""
        return mark_crawled(self._store, url, when)
