"""Ingest: works into the store (the truth) first, then into every engine's index.

``IngestService.run`` reads documents in batches: each batch is fingerprinted by every
indexed engine and written to the store in one write, which says which stored versions
it displaced; the index writes (the displaced versions' postings out, the new ones in)
are gathered over batches and written beside the next batches (``IndexWriter``), or,
into an empty index, loaded at once at the end (``BulkLoading``). While it runs the
ingest is marked in the store (``tracker.indexes.health``), so an ingest that dies between
its store and index writes is repaired by the next check.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from tracker.common.ids import DuplicateIds
from tracker.common.rules import check_metadata
from tracker.documents.readers import Document, DocumentError, unexpected
from tracker.engines import Engine
from tracker.engines.capabilities import BulkLoad, BulkLoading
from tracker.indexes.admin import IndexAdmin
from tracker.indexes.health import IndexOutOfSync, IndexTracker
from tracker.indexes.writer import IndexWriter, Writes, bulk_folder
from tracker.plumbing.config import Settings
from tracker.services.engines import EngineSet
from tracker.services.results import IngestReport
from tracker.store import Mother, Store

Progress = Callable[[int, int | None], None]  # (done, total or None)


class IngestService:
    """Adds, replaces and deletes the works of one library."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        engines: EngineSet,
        admin: IndexAdmin,
        tracker: IndexTracker,
    ) -> None:
        self.settings = settings
        self.store = store
        self.engines = engines
        self.admin = admin
        self.tracker = tracker

    def run(
        self,
        documents: Iterable[Document | DocumentError],
        *,
        engine: str | None = None,
        batch_size: int = 256,
        progress: Progress | None = None,
        expected_chars: int | None = None,
        refresh_snapshots: bool = True,
    ) -> IngestReport:
        """Add or replace mothers (bad items reported in ``errors`` and skipped), then,
        for a big library, a fresh local snapshot (its time: ``snapshot_seconds``).

        ``expected_chars`` (about how many characters are coming, e.g. from file sizes:
        ``input_chars``) lets a growing index take its final bucket count at the first
        batch instead of resharding (moving every posting) several times on the way.

        Every engine the library has an index of gets the new mothers (an engine's
        index missing them would answer "no match" for them). An ingest is marked in
        the store while it runs (``tracker.indexes.health``), so if it dies between its
        store and index writes, the next check repairs the index."""
        started = time.perf_counter()
        eng = self.engines.get(engine)
        self.engines.note_indexed(eng.name)
        engines = [self.engines.get(name) for name in self.engines.indexed()]
        report = IngestReport()
        for e in engines:
            self._prepare_for_writes(e, report)
            if refresh_snapshots:
                self.admin.record_writes(e)
        mark = self.tracker.begin_write([e.name for e in engines])
        try:
            self._ingest_all(
                documents, engines, report, batch_size, progress, mark, expected_chars or 0
            )
        except BaseException as exc:
            self.admin.drop_recordings()
            with contextlib.suppress(Exception):
                self.tracker.fail_write(mark)
            exc.add_note(
                f"{report.ingested} documents were stored before this ({report.replaced} "
                "replaced); the rest were not: ingest them again."
            )
            raise
        self.tracker.end_write(mark)
        report.seconds = time.perf_counter() - started
        self.admin.chars.added(report.ingested, report.replaced, report.characters)
        if refresh_snapshots and report.ingested:
            report.snapshot_seconds = self.admin.fresh_snapshots(report.warnings)
        self.admin.drop_recordings()
        return report

    def _prepare_for_writes(self, eng: Engine, report: IngestReport) -> None:
        """Before an ingest: the engine's index usable (repaired if it can be), and
        marked with the store's token when it is new."""
        try:
            health = self.admin.ensure(eng.name)
        except IndexOutOfSync as exc:
            # The store takes the documents anyway (it is the truth); checks refuse
            # until the index is rebuilt.
            report.warnings.append(str(exc))
            return
        if health.state == "empty" and not self.tracker.adopt(eng.name):
            # Redis holds another store's index under this prefix (an old redis.db):
            # this store has no fingerprints yet, so clearing it is free.
            self.admin.rebuild(eng.name)
            self.admin.repairs.append(
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
        writer = IndexWriter(expected_chars, snapshot_floor=self.settings.snapshot_min_chars)
        # An empty index gets this whole ingest in one bulk load at the end (later flushes
        # would meet existing buckets: slower); a big ingest into a non-empty one, a bulk
        # load into a new tail segment (``tracker.indexes.tail``; merged in when due).
        for e in engines:
            if isinstance(e, BulkLoading):
                self.admin.merge_tails_if_due(e, expected_chars)
                loader = e.bulk_loader(bulk_folder(self.settings), chars=expected_chars)
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
        writer: IndexWriter,
    ) -> None:
        batch: list[Document] = []
        done = 0
        seen = DuplicateIds()  # ids of this call: a later item with one is refused
        for item in documents:
            if isinstance(item, DocumentError):
                report.errors.append(item)
                continue
            # Two versions of one work in one batch: which one wins would depend on
            # batching; the later one is refused, by name.
            duplicate = seen.seen(item.id, item.source or "an earlier item")
            if duplicate is not None:
                report.errors.append(DocumentError(item.source or item.id, duplicate))
                continue
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
        writer: IndexWriter | None = None,
    ) -> None:
        stale: Writes = {e.name: [] for e in engines}
        fresh: Writes = {e.name: [] for e in engines}
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
                            other = self.engines.get(name)
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
        stale: Writes,
        fresh: Writes,
        writer: IndexWriter | None = None,
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
        bulk: dict[str, BulkLoad] = {}
        if writer is not None:
            writer.gather_all(fresh)  # the bulk loaders' share, in the writer's thread
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
                    self.admin.grow(eng, extra)
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
        self, engines: list[Engine], loaders: dict[str, BulkLoad], writer: IndexWriter | None
    ) -> None:
        """The end of an ingest into an empty index: everything gathered loaded at once
        (in the writer's thread), then, as after every index write, postings of mothers
        replaced meanwhile taken back and the index's generation raised."""

        def job() -> None:
            try:
                for eng in engines:
                    if writer is None or writer.snapshot_may_follow(eng.name):
                        self.admin.record_writes(eng, load=loaders[eng.name])
                    # (grow: another writer filled the index meanwhile: resharded first)
                    loaders[eng.name].finish(grow=functools.partial(self.admin.grow, eng))
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

    def delete_mother(self, mother_id: str, *, from_book: bool = True) -> bool:
        """Delete a mother from the store, then its postings from every index (a crash
        in between leaves postings of a deleted seq, which checks ignore); a chapter
        leaves its book (``from_book``: not when ``BookService`` deletes the book)."""
        try:
            mother = self.store.get_mother(mother_id)
        except KeyError:
            return False
        blobs = {
            name: blob
            for name in self.engines.indexed()
            if (blob := self.store.get_fingerprints(mother.seq, name)) is not None
        }
        deleted = self.store.delete_mother(mother_id)
        if deleted is None:
            return False  # deleted meanwhile by someone else, who cleans up
        for name in self.engines.indexed():
            eng = self.engines.get(name)
            if deleted.seq == mother.seq:
                blob = blobs.get(name)
                if blob is not None:
                    eng.remove([(mother.seq, eng.from_bytes(blob))])
            else:
                # Replaced meanwhile by another writer, whose version went: its
                # fingerprints went with it from the store, so they are made again from
                # its text (the writer may have finished its index writes already).
                eng.remove([(deleted.seq, eng.mother_fingerprints(deleted.text))])
        if from_book:
            from tracker.books.store import leave_book

            leave_book(self.store, deleted)
        return True


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
