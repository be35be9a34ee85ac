"""What a worker process keeps between tasks: one ``Library``, one ``Crawler`` and one
near-duplicate filter per settings, opened on first use and closed at worker shutdown.

Opened lazily so that a prefork pool's children each open their own (sqlite and Redis
connections must not cross a fork) and the parent opens none.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from celery import Celery, signals

from tracker.library import LibraryHandle
from tracker.plumbing.config import Settings, WorkerSettings
from workers.app import app_settings, worker_settings

if TYPE_CHECKING:  # imported on first use: a web process never needs the crawler
    from tracker.cases import CaseService
    from tracker.cases.store import CaseStore
    from tracker.crawler import Crawler
    from tracker.crawler.pagesim import NearDuplicateFilter


class Runtime(LibraryHandle):
    """The library handle of a worker process with its crawler, near-duplicate filter
    and case service: ``LibraryHandle.resource`` opens them on first use and closes
    them with the library."""

    def __init__(self, settings: Settings, ws: WorkerSettings) -> None:
        super().__init__(settings)
        self.ws = ws
        # NearDuplicateFilter keeps an in-memory copy of its Redis list: not thread-safe.
        self.dedup_lock = threading.Lock()

    @property
    def crawler(self) -> Crawler:
        return self.resource("crawler", self._make_crawler, close=lambda c: c.close())

    def _make_crawler(self) -> Crawler:
        from tracker.crawler import Crawler, CrawlerConfig

        overrides: dict[str, Any] = {}
        if self.ws.crawl_min_interval is not None:
            overrides["min_interval"] = self.ws.crawl_min_interval
        return Crawler(CrawlerConfig.from_settings(self.settings, **overrides))

    @property
    def near_duplicates(self) -> NearDuplicateFilter:
        """Shared by all workers through Redis, so a page reached under another URL of the
        same site by another worker is skipped too."""
        return self.resource("near_duplicates", self._make_near_duplicates)

    def _make_near_duplicates(self) -> NearDuplicateFilter:
        from tracker.services.lookups import near_duplicates

        return near_duplicates(self.library, "crawl")

    @property
    def cases(self) -> CaseService:
        """The takedown cases of this installation (``tracker.cases``): the same store
        the CLI and the web app use, with the evidence log beside the library."""
        from tracker.cases import CaseService, open_case_store

        opened: list[CaseStore] = []  # the store this handle opened for the service

        def make() -> CaseService:
            opened.append(open_case_store(self.settings))
            return CaseService(opened[0], self.settings)

        def close(svc: CaseService) -> None:
            svc.close()  # its evidence log; the store is the opener's
            for store in opened:
                store.close()

        return self.resource("cases", make, close=close)


_runtimes: dict[Settings, Runtime] = {}
_runtimes_lock = threading.Lock()


def runtime(app: Celery) -> Runtime:
    settings = app_settings(app)
    with _runtimes_lock:
        rt = _runtimes.get(settings)
        if rt is None:
            rt = _runtimes[settings] = Runtime(settings, worker_settings(app))
        return rt


def close_all(**_: object) -> None:
    """Close every library this process opened (worker shutdown, tests)."""
    with _runtimes_lock:
        items = list(_runtimes.values())
        _runtimes.clear()
    for rt in items:
        rt.close()


# Prefork children close theirs when they exit; solo/threads pools (and the in-process
# worker) when the worker stops.
signals.worker_process_shutdown.connect(close_all, weak=False)
signals.worker_shutdown.connect(close_all, weak=False)
