"""The service layer: one ``Library`` that the CLI, the Celery tasks and the web app call.

A library is a store (documents, results) plus a Redis connection holding each
engine's index. The store is the source of truth; the index is derived data:

- ingest writes the mother and its fingerprints to the store first, then the index;
- ``rebuild_index`` recreates an engine's index from the stored fingerprints, which
  repairs any crash between the two writes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from tracker.config import Settings
from tracker.documents import Document, DocumentError, clean_text, unexpected
from tracker.engines import ENGINES, Engine, make_engine
from tracker.matching import Matcher, MatchPolicy, MatchResult, PreparedCache
from tracker.rules import check_metadata, domain_of
from tracker.store import Match, Mother, NotFound, Store, Suspect, open_store, utcnow

Progress = Callable[[int, int | None], None]  # (done, total or None)
T = TypeVar("T")


@dataclass
class IngestReport:
    ingested: int = 0
    replaced: int = 0
    characters: int = 0
    errors: list[DocumentError] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "ingested": self.ingested,
            "replaced": self.replaced,
            "characters": self.characters,
            "errors": [{"source": e.source, "message": e.message} for e in self.errors],
            "seconds": round(self.seconds, 3),
        }


@dataclass
class CheckResult:
    suspect: Suspect
    result: MatchResult

    @property
    def matches(self) -> list[Match]:
        return self.result.matches

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``--json`` line (see README: exact contract)."""
        return {
            "suspect_id": self.suspect.id,
            "matches": [
                {
                    "mother_id": m.mother_id,
                    "title": m.mother_title,
                    "score": m.score,
                    "coverage": m.coverage,
                    "passages": [p.to_dict() for p in m.passages],
                }
                for m in self.matches
            ],
        }


class Library:
    """Mothers, suspects, matches and the engines' indexes, behind one object."""

    def __init__(self, settings: Settings, store: Store, redis: Any) -> None:
        self.settings = settings
        self.store = store
        self.redis = redis
        self._engines: dict[str, Engine] = {}
        self._cache = PreparedCache()
        self.policy = MatchPolicy()

    @classmethod
    def open(cls, settings: Settings | None = None) -> Library:
        from tracker.redis_client import connect

        settings = settings or Settings.from_env()
        return cls(settings, open_store(settings), connect(settings))

    def close(self) -> None:
        self.store.close()
        from tracker.redis_client import shutdown_embedded

        if self.settings.embedded:
            shutdown_embedded(self.redis)

    def __enter__(self) -> Library:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- engines --------------------------------------------------------------
    def engine(self, name: str | None = None) -> Engine:
        name = name or self.settings.engine
        if name not in ENGINES:
            raise ValueError(f"unknown engine {name!r} (choose from {', '.join(ENGINES)})")
        if name not in self._engines:
            options = self.store.get_meta(f"engine:{name}:options") or {}
            self._engines[name] = make_engine(
                name, self.redis, self.settings.redis_prefix, **options
            )
        return self._engines[name]

    def configure_engine(self, name: str, options: dict[str, Any]) -> dict[str, Any]:
        """Store new options of an engine (parameters, reference distribution), then
        recompute every stored fingerprint with them and rebuild the engine's index:
        fingerprints made with the old options would never match new ones.
        Returns what ``rebuild_index`` returns."""
        if name not in ENGINES:
            raise ValueError(f"unknown engine {name!r} (choose from {', '.join(ENGINES)})")
        self.store.set_meta(f"engine:{name}:options", options)
        # The cached engine was built with the old options; the next call makes a new one.
        self._engines.pop(name, None)
        eng = self.engine(name)
        for mother in self.store.iter_mothers():
            fps = eng.mother_fingerprints(mother.text)
            self.store.put_fingerprints(mother.seq, name, fps.tobytes())
        return self.rebuild_index(name)

    def indexed_engines(self) -> list[str]:
        return list(self.store.get_meta("engines") or [])

    def _note_engine(self, name: str) -> None:
        engines = self.indexed_engines()
        if name not in engines:
            self.store.set_meta("engines", [*engines, name])

    # -- mothers --------------------------------------------------------------
    def ingest(
        self,
        documents: Iterable[Document | DocumentError],
        *,
        engine: str | None = None,
        batch_size: int = 256,
        progress: Progress | None = None,
    ) -> IngestReport:
        """Add or replace mothers; bad items are reported in ``errors`` and skipped."""
        started = time.perf_counter()
        eng = self.engine(engine)
        self._note_engine(eng.name)
        report = IngestReport()
        batch: list[Document] = []
        done = 0
        seen: dict[str, str] = {}  # id -> where it came from, in this call
        for item in documents:
            if isinstance(item, DocumentError):
                report.errors.append(item)
                continue
            if item.id in seen:
                # Two versions of one work in one batch: which one wins would depend on
                # batching; the later one is refused, by name.
                report.errors.append(
                    DocumentError(
                        item.source or item.id,
                        f"duplicate id {item.id!r} in this batch (first at {seen[item.id]}): "
                        "skipped",
                    )
                )
                continue
            seen[item.id] = item.source or "an earlier item"
            batch.append(item)
            if len(batch) >= batch_size:
                self._ingest_batch(batch, eng, report)
                done += len(batch)
                batch = []
                if progress:
                    progress(done, None)
        if batch:
            self._ingest_batch(batch, eng, report)
            done += len(batch)
            if progress:
                progress(done, None)
        report.seconds = time.perf_counter() - started
        return report

    def _ingest_batch(self, docs: list[Document], eng: Engine, report: IngestReport) -> None:
        stale: list[tuple[int, np.ndarray]] = []
        fresh: list[tuple[int, np.ndarray]] = []
        for doc in docs:
            try:
                fps = eng.mother_fingerprints(doc.text)
                mother = Mother(
                    id=doc.id,
                    title=doc.title,
                    text=doc.text,
                    source=doc.source,
                    metadata=check_metadata(doc.metadata or {}, doc.source or doc.id),
                )
            except Exception as exc:  # this document's failure, not the batch's
                where = doc.source or doc.id
                message = str(exc).removeprefix(f"{where}: ")
                if not isinstance(exc, ValueError):
                    message = unexpected(exc)
                report.errors.append(DocumentError(where, message))
                continue
            try:
                old = self.store.get_mother(doc.id)
            except KeyError:
                old = None
            if old is not None:
                blob = self.store.get_fingerprints(old.seq, eng.name)
                if blob is not None:
                    stale.append((old.seq, eng.from_bytes(blob)))
                report.replaced += 1
            mother = self.store.put_mother(mother)
            self.store.put_fingerprints(mother.seq, eng.name, fps.tobytes())
            fresh.append((mother.seq, fps))
            report.ingested += 1
            report.characters += len(doc.text)
        # Store first, index second: a crash here leaves the index behind the store,
        # and `yinji index rebuild` brings it back.
        if stale:
            eng.remove(stale)
        eng.add(fresh)

    def delete_mother(self, mother_id: str) -> bool:
        try:
            mother = self.store.get_mother(mother_id)
        except KeyError:
            return False
        for name in self.indexed_engines():
            blob = self.store.get_fingerprints(mother.seq, name)
            if blob is not None:
                eng = self.engine(name)
                eng.remove([(mother.seq, eng.from_bytes(blob))])
        self.store.delete_mother(mother_id)
        return True

    def rebuild_index(
        self, engine: str | None = None, *, progress: Progress | None = None
    ) -> dict[str, Any]:
        """Recreate an engine's index from the store (fingerprints recomputed if missing)."""
        eng = self.engine(engine)
        started = time.perf_counter()
        eng.clear()
        total = self.store.count_mothers()
        done = 0
        batch: list[tuple[int, np.ndarray]] = []
        for mother in self.store.iter_mothers():
            blob = self.store.get_fingerprints(mother.seq, eng.name)
            if blob is None:
                fps = eng.mother_fingerprints(mother.text)
                self.store.put_fingerprints(mother.seq, eng.name, fps.tobytes())
            else:
                fps = eng.from_bytes(blob)
            batch.append((mother.seq, fps))
            if len(batch) >= 256:
                eng.add(batch)
                done += len(batch)
                batch = []
                if progress:
                    progress(done, total)
        if batch:
            eng.add(batch)
            done += len(batch)
            if progress:
                progress(done, total)
        self._note_engine(eng.name)
        return {"engine": eng.name, "mothers": done, "seconds": time.perf_counter() - started}

    # -- suspects -------------------------------------------------------------
    def check_text(self, text: str, *, engine: str | None = None) -> MatchResult:
        """Match a text without saving anything."""
        return self.matcher(engine).match(text)

    def check_suspect(
        self, suspect: Suspect, *, engine: str | None = None, save: bool = True
    ) -> CheckResult:
        """Match one suspect; with ``save`` the suspect and its matches are stored
        (idempotent: checking again replaces the machine results, keeps verdicts)."""
        if not suspect.domain and suspect.url:
            suspect.domain = domain_of(suspect.url)
        suspect.text, suspect.title = clean_text(suspect.text), clean_text(suspect.title)
        result = self._match(suspect, engine)
        if save:
            suspect.checked_at = utcnow()
            self.store.put_suspect(suspect)
            self.store.put_matches(suspect.id, result.matches)
        return CheckResult(suspect, result)

    def matcher(self, engine: str | None = None) -> Matcher:
        """The query path for an engine; ValueError if this library never indexed it."""
        eng = self.engine(engine)
        indexed = self.indexed_engines()
        if indexed and eng.name not in indexed:
            # Checking against an engine nobody indexed would silently find nothing.
            raise ValueError(
                f"engine {eng.name!r} has no index in this library (indexed: "
                f"{', '.join(indexed)}); run `yinji index rebuild --engine {eng.name}` first"
            )
        return Matcher(self.store, eng, policy=self.policy, cache=self._cache)

    def _match(self, suspect: Suspect, engine: str | None) -> MatchResult:
        return self.matcher(engine).match(
            suspect.text,
            suspect_id=suspect.id,
            title=suspect.title,
            url=suspect.url,
            domain=suspect.domain,
        )

    def check(
        self,
        documents: Iterable[Document | DocumentError],
        *,
        engine: str | None = None,
        save: bool = True,
        errors: list[DocumentError] | None = None,
    ) -> Iterator[CheckResult]:
        """Check documents as suspects, one result per document (errors collected)."""
        for item in documents:
            if isinstance(item, DocumentError):
                if errors is not None:
                    errors.append(item)
                continue
            url = str(item.metadata.get("url", "")) if item.metadata else ""
            suspect = Suspect(
                id=item.id,
                text=item.text,
                title=item.title,
                url=url,
                domain=domain_of(url),
                source=item.source,
                metadata=item.metadata,
            )
            yield self.check_suspect(suspect, engine=engine, save=save)

    def recheck_suspects(
        self, *, engine: str | None = None, progress: Progress | None = None
    ) -> int:
        """Check every stored suspect again against the whole index (after new mothers
        arrive: a suspect seen before a work was added may copy it). Returns how many.

        Only the results are rewritten (verdicts kept, as ``put_matches`` promises) and
        the suspect marked checked; the suspect itself is not written back, so its raw
        page, the evidence, stays as it is."""
        # Ids first: the loop writes, which must not move a store cursor under it.
        ids = [s.id for s in self.store.iter_suspects()]
        done = 0
        if progress:
            progress(0, len(ids))
        for suspect_id in ids:
            try:
                suspect = self.store.get_suspect(suspect_id)
            except NotFound:
                continue  # deleted meanwhile
            result = self._match(suspect, engine)
            self.store.put_matches(suspect.id, result.matches)
            self.store.mark_checked(suspect.id)
            done += 1
            if progress:
                progress(done, len(ids))
        return done

    def index_stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mothers": self.store.count_mothers(), "engines": {}}
        for name in self.indexed_engines():
            out["engines"][name] = self.engine(name).stats()
        return out


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
