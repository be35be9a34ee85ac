"""What a worker process keeps between tasks: one ``Library``, one ``Crawler`` and one
near-duplicate filter per settings, opened on first use and closed at worker shutdown.

Opened lazily so that a prefork pool's children each open their own (sqlite and Redis
connections must not cross a fork) and the parent opens none.
"""

from __future__ import annotations

import threading
from typing import Any

from celery import Celery, signals

from tracker.config import Settings
from tracker.library import LibraryHandle
from workers.app import app_settings, worker_settings
from workers.settings import WorkerSettings


class Runtime(LibraryHandle):
    def __init__(self, settings: Settings, ws: WorkerSettings) -> None:
        super().__init__(settings)
        self.ws = ws
        self._crawler: Any = None
        self._dedup: Any = None
        # NearDuplicateFilter keeps an in-memory copy of its Redis list: not thread-safe.
        self.dedup_lock = threading.Lock()

    @property
    def crawler(self) -> Any:
        if self._crawler is None:
            with self._lock:
                if self._crawler is None:
                    from tracker.crawler import Crawler, CrawlerConfig

                    overrides: dict[str, Any] = {}
                    if self.ws.crawl_min_interval is not None:
                        overrides["min_interval"] = self.ws.crawl_min_interval
                    self._crawler = Crawler(CrawlerConfig.from_settings(self.settings, **overrides))
        return self._crawler

    @property
    def near_duplicates(self) -> Any:
        """Shared by all workers through Redis, so a page reached under another URL of the
        same site by another worker is skipped too."""
        if self._dedup is None:
            library = self.library
            with self._lock:
                if self._dedup is None:
                    from tracker.pagesim import NearDuplicateFilter

                    self._dedup = NearDuplicateFilter(
                        redis=library.redis, prefix=self.settings.redis_prefix, name="crawl"
                    )
        return self._dedup

    def close(self) -> None:
        with self._lock:
            if self._crawler is not None:
                self._crawler.close()
                self._crawler = None
            self._dedup = None
        super().close()


_runtimes: dict[Settings, Runtime] = {}
_runtimes_lock = threading.Lock()


def runtime(app: Celery) -> Runtime:
    settings = app_settings(app)
    with _runtimes_lock:
        rt = _runtimes.get(settings)
        if rt is None:
            rt = _runtimes[settings] = Runtime(settings, worker_settings(app))
        return rt


def close_all(**_: Any) -> None:
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
