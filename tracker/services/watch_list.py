"""The watch list: URLs, sites and pirate books the daily re-crawl visits (``yinji
beat``; ``tracker.cases.watching`` runs it). What the web admin and the API do to it
(list, add, remove) and what the re-crawl does (the active items, when their crawl was
sent, when an item was crawled: what the watch page shows)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal, cast

from tracker.cases.watching import check_kind, mark_crawled
from tracker.common.records import WatchItem
from tracker.common.rules import check_url
from tracker.store import Store

if TYPE_CHECKING:
    from tracker.library import Library

#: ``WatchItem.kind`` (``tracker.cases.watching.WATCH_KINDS``) as a type; the API's
#: model uses it (tests/web/test_api_models.py holds the two equal).
WatchKind = Literal["url", "site", "book"]


class WatchList:
    """The library's watch list."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @classmethod
    def of(cls, library: Library) -> WatchList:
        return cls(library.store)

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

    def items(self) -> list[WatchItem]:
        """Every item, active or not."""
        return self._store.list_watch(active_only=False)

    def urls(self, kind: str | None = None) -> set[str]:
        """The URLs on the list (of ``kind`` only, when given)."""
        return {i.url for i in self.items() if kind is None or i.kind == kind}

    def add(self, url: object, kind: object) -> WatchItem:
        """Put ``url`` on the list as ``kind`` (``url``, ``site`` or ``book``), or
        replace it; ``ValueError`` naming a bad kind or URL."""
        checked_kind = cast(WatchKind, check_kind(kind))
        if not isinstance(url, str):
            raise ValueError(f"url must be text, got {url!r}")
        item = WatchItem(url=check_url(url), kind=checked_kind)
        self._store.put_watch(item)
        return item

    def remove(self, url: str) -> bool:
        """Take ``url`` off the list; False when it was not on it."""
        if url not in self.urls():
            return False
        self._store.delete_watch(url)
        return True
