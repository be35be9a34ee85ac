"""Index administration: an engine's index kept in step with the store.

The store is the truth, the index derived data (``tracker.indexes.health``). Before a
check or an ingest ``ensure`` verifies the index (at most once a second per engine),
repairs a partial one, rebuilds a lost or behind one by itself when that is at most
``Settings.auto_rebuild_max_postings`` postings of work, and otherwise raises
``IndexOutOfSync``. Here too: rebuild, reshard and growth (``Growable``), new engine
options (every fingerprint recomputed), local copies (``LocalCopies``) and stats.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import numpy as np

from tracker.common.records import JSONObject
from tracker.engines import Engine
from tracker.engines.capabilities import BulkLoading, Growable, LocalCopies
from tracker.indexes import refill as refills
from tracker.indexes.admin_copies import LocalCopiesAdmin
from tracker.indexes.health import Health, IndexOutOfSync, IndexTracker
from tracker.indexes.refill import RefillChunk, RefillDone, RefillPlan
from tracker.indexes.snapshot_floor import LibraryChars
from tracker.indexes.writer import add_current, batches, bulk_folder, take_back
from tracker.plumbing.config import Settings
from tracker.services.engines import EngineSet
from tracker.services.results import (
    RebuildResult,
    ReshardResult,
)
from tracker.store import Store

Progress = Callable[[int, int | None], None]  # (done, total or None)
VERIFY_INTERVAL = 1.0  # seconds a verified index is trusted before it is verified again


class IndexAdmin(LocalCopiesAdmin):
    """The indexes of one library's engines (``engines``) against its ``store``."""

    def __init__(
        self, settings: Settings, store: Store, engines: EngineSet, tracker: IndexTracker
    ) -> None:
        self.settings = settings
        self.store = store
        self.engines = engines
        self.tracker = tracker
        self.repairs: list[str] = []  # what was repaired by itself (the CLI says it)
        self.verified: dict[str, float] = {}  # engine -> monotonic time found usable
        self._verify_lock = threading.Lock()
        self.chars = LibraryChars(store)  # the snapshot floor's measure

    # -- health -----------------------------------------------------------------------
    def health(self, engine: str | None = None) -> Health:
        """Whether an engine's index agrees with the store."""
        return self.tracker.health(self.engines.get(engine).name)

    def ensure(self, engine: str | None = None, *, wait: float = 60.0) -> Health:
        """The engine's index, usable: verified (at most once a second per engine),
        repaired or rebuilt by itself when that is cheap, else ``IndexOutOfSync``.
        A rebuild running elsewhere is waited for up to ``wait`` seconds."""
        eng = self.engines.get(engine)
        last = self.verified.get(eng.name)
        if last is not None and time.monotonic() - last < VERIFY_INTERVAL:
            return Health(eng.name, "ok")
        with self._verify_lock:
            health, cleared = self.tracker.health_clearing_dead_lock(eng.name)
            if cleared:
                self.repairs.append(cleared)
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
            self.verified[eng.name] = time.monotonic()
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
                added += add_current(self.store, eng, batch)
                batch = []
        if batch:
            added += add_current(self.store, eng, batch)
        self.tracker.forget_writers(eng.name, health.dead_writers)
        self.repairs.append(
            f"the {eng.name} index was partial ({health.reason}): re-added {added} mothers"
        )

    def _rebuild_by_itself(self, eng: Engine, health: Health) -> None:
        _, nbytes = self.store.fingerprint_totals(eng.name)
        refusal = self._too_big(eng, health, nbytes // eng.dtype.itemsize)
        if refusal is not None:
            raise refusal
        # One step under the lock (no chunks: it is small), so that a check meanwhile
        # sees "rebuilding" from the start and waits for it.
        info = self.load(eng.name)
        self.repairs.append(
            f"the {eng.name} index was {health.state} ({health.reason}): rebuilt it from "
            f"the store ({info.mothers} mothers)"
        )

    # -- rebuild, growth, new options -------------------------------------------------
    def plan_rebuild(self, engine: str | None = None, size: int = 200) -> RefillPlan:
        """A rebuild of an engine's index as chunks of at most ``size`` mothers
        (``tracker.indexes.refill``): refilled in any order by any process, then
        ``load``-ed once every chunk is done."""
        return refills.plan(self.store, self.engines.get(engine).name, size)

    def refill(
        self,
        engine: str | None,
        chunk: RefillChunk,
        *,
        recompute: bool = False,
        progress: Progress | None = None,
    ) -> RefillDone:
        """One chunk of a rebuild: its mothers' fingerprints stored (computed where
        missing, or all of them with ``recompute``). Idempotent; the index is not touched."""
        eng = self.engines.get(engine)
        return refills.refill(self.store, eng, chunk, recompute=recompute, progress=progress)

    def rebuild(
        self,
        engine: str | None = None,
        *,
        progress: Progress | None = None,
        recompute: bool = False,
        chunk: int = 200,
    ) -> RebuildResult:
        """Recreate an engine's index from the store: the chunks of ``plan_rebuild``
        refilled one after the other (fingerprints recomputed if missing, or all with
        ``recompute``), then ``load``. The same chunks the workers share
        (``workers.tasks.index``). ``progress`` counts every mother twice (its
        fingerprints, then its load) out of twice the mothers."""
        started = time.perf_counter()
        work = self.plan_rebuild(engine, chunk)
        total = 2 * work.mothers
        done = 0
        for part in work.chunks:
            got = self.refill(work.engine, part, recompute=recompute)
            done += got.mothers
            if progress:
                progress(done, total)
        base = done

        def loading(n: int, _total: int | None) -> None:
            if progress:
                progress(min(base + n, total), total)

        info = self.load(work.engine, progress=loading if progress else None)
        return RebuildResult(info.engine, info.mothers, time.perf_counter() - started)

    def load(self, engine: str | None = None, *, progress: Progress | None = None) -> RebuildResult:
        """Recreate an engine's index from the stored fingerprints (computed and stored
        here for a mother that has none: one stored after the chunks were planned).
        One load per engine at a time (a Redis lock); checks meanwhile wait for it. The
        stored fingerprints go in batches of 256 mothers into a bulk loader (written
        once at the end, sized from their exact count) or, for an engine without one,
        straight to ``add``."""
        eng = self.engines.get(engine)
        started = time.perf_counter()
        with self.tracker.lock(eng.name) as refresh:
            dead_before = self.tracker.dead_writers(eng.name)
            self.tracker.begin_rebuild(eng.name)
            eng.clear()
            total = self.store.count_mothers()
            done = gone = 0  # mothers read; of them, replaced or deleted meanwhile
            loader = (
                eng.bulk_loader(bulk_folder(self.settings))
                if isinstance(eng, BulkLoading)
                else None
            )
            try:
                for batch in batches(self._stored_fingerprints(eng), 256):
                    if loader is not None:
                        loader.extend(batch)
                    else:
                        eng.add(batch)
                        gone += take_back(self.store, eng, batch)
                        if isinstance(eng, Growable) and eng.needs_growth():
                            eng.grow()  # we hold the lock
                    refresh()
                    done += len(batch)
                    if progress:
                        progress(done, total)
                if loader is not None:
                    loader.finish(refresh)
                    # Mothers replaced or deleted since they were read: their writers'
                    # removals may have come before this load wrote them.
                    current = self.store.current_seqs(loader.seqs)
                    late = {seq for seq in loader.seqs if seq not in current}
                    loader.take_back(late)
                    gone += len(late)
            finally:
                if loader is not None:
                    loader.close()
            self.engines.note_indexed(eng.name)
            self.tracker.finish_rebuild(eng.name, dead_before)
        self.verified[eng.name] = time.monotonic()
        return RebuildResult(eng.name, done - gone, time.perf_counter() - started)

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

    def grow(self, eng: Engine, extra: int = 0) -> None:
        """Before adding about ``extra`` fingerprints: reshard an index whose buckets
        would outgrow Redis' compact encoding (memory per posting would jump ~7x), under
        the index lock (checks wait for it meanwhile). Sized before the write, a new
        index starts at its final bucket count and moves nothing."""
        if not isinstance(eng, Growable) or not eng.needs_growth(extra):
            return
        try:
            with self.tracker.lock(eng.name):
                eng.grow(extra)
        except IndexOutOfSync:
            pass  # another process holds the lock (resharding or rebuilding): it grows

    def reshard(self, engine: str | None = None, bits: int | None = None) -> ReshardResult:
        """Move an engine's index to ``2**bits`` buckets (default: what its size calls
        for) from the index alone, every posting kept; checks wait for it meanwhile."""
        eng = self.engines.get(engine)
        if not isinstance(eng, Growable):
            raise ValueError(f"the {eng.name} index has no buckets to reshard")
        started = time.perf_counter()
        with self.tracker.lock(eng.name):
            done = eng.reshard(bits)
        return ReshardResult(eng.name, done, time.perf_counter() - started)

    def configure_engine(self, name: str, options: JSONObject) -> RebuildResult:
        """Store new options of an engine (parameters, reference distribution), then
        recompute every stored fingerprint with them and rebuild the engine's index:
        fingerprints made with the old options would never match new ones."""
        self.engines.set_options(name, dict(options))
        return self.rebuild(name, recompute=True)

    # -- local copies and stats -------------------------------------------------------
    def stats(self) -> JSONObject:
        """Sizes of the store and of each engine's index, with each index's health and
        whether checks look it up in a local copy (``snapshot``)."""
        mothers = self.store.count_mothers()
        engines: JSONObject = {}
        for name in self.engines.indexed():
            eng = self.engines.get(name)
            entry: JSONObject = {**eng.stats(), "health": self.tracker.health(name).to_dict()}
            if isinstance(eng, LocalCopies) and eng.snapshots is not None:
                entry["snapshot"] = eng.snapshots.state(eng.index)
            engines[name] = entry
        return {"mothers": mothers, "engines": engines}
