"""The watch list: URLs, sites and pirate books the daily re-crawl visits (``yinji
beat``; ``tracker.cases.watching`` runs it). What the web admin and the API do to it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, cast

from tracker.cases.watching import check_kind
from tracker.records import WatchItem
from tracker.rules import check_url
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
