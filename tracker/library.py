"""The library: one façade that the CLI, the Celery tasks and the web app call.

A library is a store (documents, results) plus a Redis connection holding each
engine's index; the store is the truth, the index derived data. ``Library`` builds the
services of ``tracker.services`` (ingest, check, index administration, evidence, engines,
the index's Redis: docs/ARCHITECTURE.md) over one store, one Redis and one evidence log
(``tracker.plumbing.backends.open_backends``), and keeps the method names callers know.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from tracker.common.records import JSONObject
from tracker.documents.readers import Document, DocumentError
from tracker.engines import Engine
from tracker.indexes.admin import IndexAdmin
from tracker.indexes.health import Health, IndexTracker
from tracker.indexes.server import IndexRedis
from tracker.matching.align import AlignParams
from tracker.matching.longtext import SuspectTooLarge
from tracker.matching.matcher import Matcher, MatchPolicy, MatchResult, PreparedCache
from tracker.plumbing.backends import Backends, open_backends
from tracker.plumbing.config import Settings
from tracker.services.check import CheckService, Crawled, Stored, Submitted
from tracker.services.engines import MATCHING_META, EngineSet
from tracker.services.evidence import EvidenceRecorder
from tracker.services.ingest import IngestService, input_chars
from tracker.services.results import (
    CheckResult,
    IngestReport,
    RebuildResult,
    ReshardResult,
    SnapshotTaken,
    TailsMerged,
)
from tracker.store import NotFound, Store, Suspect

if TYPE_CHECKING:
    from tracker.cases.store import CaseStore
    from tracker.crawler import Crawler
    from tracker.crawler.results import Page
    from tracker.engines.base import RedisClient
    from tracker.evidence import EvidenceLog, ExportResult
    from tracker.evidence.log import LogEntry

Progress = Callable[[int, int | None], None]  # (done, total or None)
T = TypeVar("T")

__all__ = [
    "MATCHING_META",
    "CheckResult",
    "Document",
    "IngestReport",
    "Library",
    "LibraryHandle",
    "input_chars",
]


class Library:
    """Mothers, suspects, matches and the engines' indexes, behind one object."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        redis: RedisClient,
        *,
        backends: Backends | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.redis = redis
        self._backends = backends  # opened on first use when not given
        self._redis = IndexRedis(settings, redis)
        self.tracker = IndexTracker(store, redis, settings.redis_prefix)
        self.engines = EngineSet(settings, store, redis)
        self.indexes = IndexAdmin(settings, store, self.engines, self.tracker)
        self.evidence = EvidenceRecorder(store, self._open_evidence)
        self.ingestion = IngestService(settings, store, self.engines, self.indexes, self.tracker)
        self.checks = CheckService(settings, store, self.engines, self.indexes, self.evidence)

    @classmethod
    def open(cls, settings: Settings | None = None) -> Library:
        """The library of ``settings``. A read-only data folder opens read-only: checks
        without saving, stats and listings work; writes raise ``StoreError``."""
        settings = settings or Settings.from_env()
        backends = open_backends(settings)
        try:
            store = backends.store()
        except BaseException:
            backends.close()
            raise
        try:
            redis = IndexRedis.open(settings, read_only=store.read_only)
        except BaseException:
            store.close()
            backends.close()
            raise
        library = cls(settings, store, redis.client, backends=backends)
        library._redis = redis
        return library

    def close(self) -> None:
        self.evidence.close()
        self.store.close()
        if self._backends is not None:
            self._backends.close()
            self._backends = None
        self._redis.close()

    def __enter__(self) -> Library:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def backends(self) -> Backends:
        """Where this library's data lives (``tracker.plumbing.backends``), opened on first use:
        with MongoDB its one client, shared by whatever is opened from it."""
        if self._backends is None:
            self._backends = open_backends(self.settings)
        return self._backends

    def _open_evidence(self) -> EvidenceLog:
        return self.backends.evidence_log()

    def open_case_store(self) -> CaseStore:
        """The case store beside this library, on its backends (with MongoDB: its one
        client, not a second); the caller closes it before the library."""
        return self.backends.case_store()

    # -- what callers and tests look at ------------------------------------------------
    @property
    def repairs(self) -> list[str]:
        """What was repaired by itself (the CLI says it, then clears the list)."""
        return self.indexes.repairs

    @property
    def policy(self) -> MatchPolicy:
        return self.engines.policy

    @property
    def _verified(self) -> dict[str, float]:
        return self.indexes.verified

    @property
    def _cache(self) -> PreparedCache:
        return self.checks.cache

    # -- engines and their settings (EngineSet) ----------------------------------------
    def engine(self, name: str | None = None) -> Engine:
        return self.engines.get(name)

    def indexed_engines(self) -> list[str]:
        return self.engines.indexed()

    def configure_engine(self, name: str, options: JSONObject) -> RebuildResult:
        """New engine options, every fingerprint recomputed, the index rebuilt: what
        ``rebuild_index`` returns."""
        return self.indexes.configure_engine(name, options)

    def configure_candidates(
        self, *, min_hits: int | None = None, weak_candidates: int | None = None
    ) -> dict[str, int]:
        """Daguan's query-time candidate options (``docs/ENGINES.md``); nothing is
        rebuilt. Returns the two values now in force."""
        return self.engines.configure_candidates(
            min_hits=min_hits, weak_candidates=weak_candidates
        ).to_dict()

    def min_copied(self) -> int:
        return self.engines.min_copied()

    def configure_matching(self, *, min_copied: int) -> None:
        self.engines.configure_matching(min_copied=min_copied)

    def verifier(self) -> tuple[MatchPolicy, AlignParams]:
        return self.engines.verifier()

    # -- mothers (IngestService) -------------------------------------------------------
    def ingest(
        self,
        documents: Iterable[Document | DocumentError],
        *,
        engine: str | None = None,
        batch_size: int = 256,
        progress: Progress | None = None,
        expected_chars: int | None = None,
        refresh_snapshots: bool = True,
    ) -> IngestReport:
        """Add or replace mothers; bad items are reported in ``errors`` and skipped;
        then a fresh snapshot of a big index (``IngestService.run``)."""
        return self.ingestion.run(
            documents,
            engine=engine,
            batch_size=batch_size,
            progress=progress,
            expected_chars=expected_chars,
            refresh_snapshots=refresh_snapshots,
        )

    def delete_mother(self, mother_id: str) -> bool:
        return self.ingestion.delete_mother(mother_id)

    # -- indexes (IndexAdmin) ----------------------------------------------------------
    def index_health(self, engine: str | None = None) -> Health:
        return self.indexes.health(engine)

    def ensure_index(self, engine: str | None = None, *, wait: float = 60.0) -> Health:
        return self.indexes.ensure(engine, wait=wait)

    def rebuild_index(
        self, engine: str | None = None, *, progress: Progress | None = None
    ) -> RebuildResult:
        """``IndexAdmin.rebuild``: the engine, how many mothers, how long."""
        return self.indexes.rebuild(engine, progress=progress)

    def reshard_index(self, engine: str | None = None, bits: int | None = None) -> ReshardResult:
        """``IndexAdmin.reshard``: the engine, its bucket bits now, how long."""
        return self.indexes.reshard(engine, bits)

    def index_stats(self) -> JSONObject:
        return self.indexes.stats()

    def snapshot_index(self, engine: str | None = None) -> SnapshotTaken:
        """``IndexAdmin.snapshot``: the engine and what was written (``to_dict``:
        ``{"engine", "path", "version", "postings", ...}``)."""
        return self.indexes.snapshot(engine)

    def refresh_snapshots(self, min_chars: int | None = None) -> list[JSONObject]:
        """What ``IndexAdmin.refresh_snapshots`` did, per engine: taken or skipped."""
        return [done.to_dict() for done in self.indexes.refresh_snapshots(min_chars)]

    def merge_index_tails(self, engine: str | None = None) -> TailsMerged:
        """``IndexAdmin.merge_tails``: the tail segments merged, the local copy refreshed."""
        return self.indexes.merge_tails(engine)

    # -- checks (CheckService) ---------------------------------------------------------
    def ready_to_check(self, engine: str | None = None) -> Engine:
        """The engine checks use, its index usable (repaired, or ``IndexOutOfSync``);
        ValueError if unknown or never indexed here."""
        return self.checks.ready(engine)

    def matcher(self, engine: str | None = None) -> Matcher:
        return self.checks.matcher(engine)

    def check_text(self, text: str, *, engine: str | None = None) -> MatchResult:
        """Match a text without saving anything."""
        return self.checks.text(text, engine=engine)

    def check_suspect(
        self, suspect: Suspect, *, engine: str | None = None, save: bool = True
    ) -> CheckResult:
        """Match one suspect; with ``save`` the suspect and its matches are stored (no
        evidence: see ``check_submitted`` and ``check_crawled``)."""
        return self.checks.run(suspect, engine=engine, save=save)

    def check_submitted(
        self,
        suspect: Suspect,
        *,
        engine: str | None = None,
        source: str | None = None,
        once: str | None = None,
    ) -> CheckResult:
        """Check a handed-in text (pasted, uploaded, a file given to ``yinji check``),
        store it and record the submission and the check."""
        return self.checks.run(suspect, engine=engine, origin=Submitted(source, once))

    def check_submitted_many(
        self,
        items: Sequence[tuple[Suspect, Submitted]],
        *,
        engine: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[CheckResult | SuspectTooLarge | NotFound]:
        """Check handed-in texts like ``check_submitted`` and save them together (a
        chunk of a job: one store transaction and one evidence-log commit for all;
        ``CheckService.run_many``). ``items``: each suspect with how it came
        (``Submitted(source, once)``). Per item its result, or the ``SuspectTooLarge``
        that refused it."""
        return self.checks.run_many(list(items), engine=engine, progress=progress)

    def check_crawled(
        self,
        suspect: Suspect,
        pages: Sequence[Page],
        *,
        engine: str | None = None,
        save: bool = True,
    ) -> CheckResult:
        """Check a suspect whose text was fetched as ``pages``; with ``save`` a capture
        per page, then the check naming them all."""
        return self.checks.run(suspect, engine=engine, save=save, origin=Crawled(pages))

    def check_page(
        self,
        page: Page,
        *,
        suspect_id: str | None = None,
        engine: str | None = None,
        save: bool = True,
    ) -> CheckResult:
        """Check a crawled page as a suspect (id: sha1 of its final URL unless given):
        the one path of ``yinji check URL`` and of the crawl workers."""
        return self.check_crawled(page.to_suspect(suspect_id), [page], engine=engine, save=save)

    def check_url(
        self,
        url: str,
        *,
        engine: str | None = None,
        save: bool = True,
        crawler: Crawler | None = None,
    ) -> CheckResult:
        """Crawl ``url`` (the crawler's SSRF guard, robots.txt and limits apply) and
        check the page (``check_page``). Raises ``tracker.crawler.CrawlError`` (its
        message names the URL) when the page cannot be fetched."""
        if crawler is None:
            from tracker.crawler import Crawler, CrawlerConfig

            crawler = Crawler(CrawlerConfig.from_settings(self.settings))
        return self.check_page(crawler.crawl_page(url), engine=engine, save=save)

    def recheck_suspect(
        self, suspect: Suspect, *, engine: str | None = None, once: str | None = None
    ) -> CheckResult:
        """Check a stored suspect again: its matches rewritten (verdicts kept), the
        check recorded naming the captures its text came from."""
        return self.checks.run(suspect, engine=engine, origin=Stored(once))

    def check(
        self,
        documents: Iterable[Document | DocumentError],
        *,
        engine: str | None = None,
        save: bool = True,
        errors: list[DocumentError] | None = None,
    ) -> Iterator[CheckResult]:
        """Check documents as suspects, one result per document (``CheckService.documents``)."""
        return self.checks.documents(documents, engine=engine, save=save, errors=errors)

    def recheck_suspects(
        self,
        *,
        engine: str | None = None,
        progress: Progress | None = None,
        once: str | None = None,
        ids: Sequence[str] | None = None,
    ) -> int:
        """Check every stored suspect (or those of ``ids``: a chunk of a fanned-out
        re-check) again (``CheckService.recheck_all``); how many."""
        return self.checks.recheck_all(engine=engine, progress=progress, once=once, ids=ids)

    def suspect_ids(self) -> list[str]:
        """The ids of every stored suspect (what ``recheck_suspects`` goes through)."""
        return self.checks.suspect_ids()

    # -- evidence (EvidenceRecorder) ---------------------------------------------------
    def evidence_log(self) -> EvidenceLog:
        """The evidence log beside this library, opened once and closed with it."""
        return self.evidence.log()

    def store_page(self, page: Page, *, suspect_id: str | None = None) -> Suspect:
        """Store a crawled page as a suspect without checking it (a crawl asked not to
        check), its capture recorded all the same: what was served is evidence."""
        suspect = page.to_suspect(suspect_id)
        self.store.put_suspect(suspect)
        self.evidence.record_captures(suspect.id, [page])
        return suspect

    def record_captures(self, suspect_id: str, pages: Sequence[Page]) -> list[int]:
        return self.evidence.record_captures(suspect_id, pages)

    def record_submission(
        self,
        result: CheckResult,
        *,
        engine: str | None = None,
        source: str | None = None,
        once: str | None = None,
    ) -> LogEntry:
        return self.evidence.record_submission(
            result, engine=self.engine(engine).name, source=source, once=once
        )

    def record_check(
        self,
        result: CheckResult,
        *,
        engine: str | None = None,
        capture_index: int | None = None,
        capture_indexes: Sequence[int] | None = None,
        once: str | None = None,
    ) -> LogEntry:
        return self.evidence.record_check(
            result,
            engine=self.engine(engine).name,
            capture_index=capture_index,
            capture_indexes=capture_indexes,
            once=once,
        )

    def evidence_source(self, suspect: Suspect) -> list[int]:
        return self.evidence.source_of(suspect)

    def export_evidence(
        self, out: str | Path | IO[bytes], suspect_id: str, mother_id: str | None = None
    ) -> tuple[ExportResult, int]:
        """Write the evidence bundle of ``suspect_id`` (of its match with ``mother_id``
        only, when given) to ``out`` (a path or a binary file), with the PDF and HTML
        reports of every match; the ``ExportResult`` and how many matches it covers.
        ``tracker.evidence.EvidenceError`` when the log holds nothing about them,
        ``NotFound`` for a missing match."""
        from tracker.reports import build_report

        log = self.evidence.log()
        return self.evidence.export(
            out,
            suspect_id,
            mother_id,
            lambda match, fmt: build_report(self, match, fmt, evidence=log),
        )


class LibraryHandle:
    """A ``Library`` opened on first use and shared by threads, plus whatever else a
    long-lived process keeps next to it (a worker's crawler): the web app and each
    worker process hold one, so that creating them starts no Redis server, and a
    prefork child opens its own connections instead of inheriting its parent's."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._library: Library | None = None
        self._lock = threading.RLock()  # RLock: a resource's factory may open the library
        self._resources: dict[str, tuple[Any, Callable[[Any], None] | None]] = {}

    @property
    def library(self) -> Library:
        if self._library is None:
            with self._lock:
                if self._library is None:
                    self._library = Library.open(self.settings)
        return self._library

    def resource(
        self, name: str, make: Callable[[], T], close: Callable[[T], None] | None = None
    ) -> T:
        """The resource ``name``, made by ``make()`` on first use and closed by
        ``close`` (if given) when the handle closes."""
        found = self._resources.get(name)
        if found is None:
            with self._lock:
                found = self._resources.get(name)
                if found is None:
                    found = self._resources[name] = (make(), close)
        return found[0]

    def close(self) -> None:
        with self._lock:
            resources = list(self._resources.values())
            self._resources.clear()
            for value, close in resources:
                if close is not None:
                    close(value)
            if self._library is not None:
                self._library.close()
                self._library = None
