"""The index service's local copies and tail segments (``IndexAdmin``'s, a mixin of it):
what lookups read besides the Redis index. Snapshots (``tracker.indexes.snapshot``):
taken by ``yinji index snapshot``, after an ingest and by the workers' periodic task;
tail segments (``tracker.indexes.tail``): merged into the index when due, by
``yinji index merge-tails`` and by the same periodic task.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from tracker.engines import Engine
from tracker.engines.capabilities import BulkLoad, LocalCopies
from tracker.indexes import tail
from tracker.indexes.inverted import RedisInvertedIndex
from tracker.indexes.snapshot import (
    TakeBusy,
    drop_snapshots,
    segment_snapshots,
    take_snapshot,
)
from tracker.indexes.snapshot_floor import LibraryChars
from tracker.indexes.writer import add_current, batches
from tracker.plumbing.config import Settings
from tracker.services.engines import EngineSet
from tracker.services.results import SnapshotSkipped, SnapshotTaken, TailsMerged
from tracker.store import Store

if TYPE_CHECKING:
    from tracker.indexes.health import Health


class LocalCopiesAdmin:
    """Local copies and tail segments of a library's indexes (``IndexAdmin``)."""

    settings: Settings
    store: Store
    engines: EngineSet
    chars: LibraryChars
    repairs: list[str]  # what was done by itself (the CLI says it)

    if TYPE_CHECKING:  # IndexAdmin's

        def ensure(self, engine: str | None = None, *, wait: float = 60.0) -> Health: ...

        def grow(self, eng: Engine, extra: int = 0) -> None: ...

    def snapshot(
        self,
        engine: str | None = None,
        *,
        wait: bool = True,
        index: RedisInvertedIndex | None = None,
    ) -> SnapshotTaken:
        """Copy an engine's index into ``YINJI_SNAPSHOT_DIR`` at its current version:
        checks then look fingerprints up there (memory-mapped arrays), except those of
        the buckets written since, which Redis answers (``tracker.indexes.snapshot``).
        Refused for an index that is not in sync with the store (a copy of it would
        answer wrongly until the next write). ``index``: one of its tail segments
        instead (``tracker.indexes.tail``)."""
        eng = self.engines.get(engine)
        if not isinstance(eng, LocalCopies):
            raise ValueError(f"the {eng.name} index has no local copies (daguan's has)")
        self.ensure(eng.name)
        target = eng.index if index is None else index
        return SnapshotTaken(
            eng.name, take_snapshot(target, self.settings.snapshots_path, wait=wait)
        )

    def refresh_snapshots(
        self,
        min_chars: int | None = None,
        *,
        share: float | None = None,
        wait: bool = True,
    ) -> list[SnapshotTaken | SnapshotSkipped]:
        """Take a snapshot of each index that has local copies and had more than
        ``share`` of its buckets (default ``YINJI_SNAPSHOT_REFRESH_SHARE``) written since
        the snapshot that answers its lookups, or has none while the library holds at
        least ``min_chars`` characters of text (default ``YINJI_SNAPSHOT_MIN_CHARS``:
        the same floor for every script; an index once copied is kept fresh). After an
        ingest, and the workers' periodic task. The take copies only the buckets
        written since. With ``wait`` False, an index whose snapshot another process is
        taking is skipped. What was done, per engine."""
        floor = self.settings.snapshot_min_chars if min_chars is None else min_chars
        limit = self.settings.snapshot_refresh_share if share is None else share
        done: list[SnapshotTaken | SnapshotSkipped] = []
        chars: int | None = None  # the library's, counted once, when needed
        for name in self.engines.indexed():
            eng = self.engines.get(name)
            if not isinstance(eng, LocalCopies) or eng.snapshots is None:
                continue
            written = eng.snapshots.written_fraction(eng.index)
            if written is None and chars is None:
                chars = self.chars.count(up_to=max(floor, 1))
            if written is None and chars is not None and chars < max(floor, 1):
                done.append(SnapshotSkipped(name, f"{chars:,} characters < {floor:,}"))
            elif written is None and eng.index.fields_estimate() == 0:
                done.append(SnapshotSkipped(name, "the index holds nothing"))
            elif written == 0.0:
                done.append(SnapshotSkipped(name, "the snapshot is current"))
            elif written is not None and written <= limit:
                done.append(
                    SnapshotSkipped(
                        name,
                        f"the snapshot is current but for {written:.1%} of the buckets "
                        f"(<= {limit:.1%}: Redis answers those)",
                    )
                )
            else:
                try:
                    done.append(self.snapshot(name, wait=wait))
                except TakeBusy:
                    done.append(SnapshotSkipped(name, "another process is taking one"))
            if isinstance(done[-1], SnapshotSkipped) and written is None:
                continue  # no copy of the index: none of its tail segments either
            for segment in eng.index.tails():  # copied once loaded, again when written
                share = eng.snapshots.written_fraction(segment)
                if share is None or share > limit:
                    taken: SnapshotTaken | None = None
                    try:
                        taken = self.snapshot(name, wait=wait, index=segment)
                    except TakeBusy:
                        continue
                    except Exception:
                        if segment in eng.index.tails():
                            raise
                    if segment not in eng.index.tails():
                        # Merged and dropped meanwhile (by another process's merge):
                        # no copy of it kept (it may have copied it half deleted).
                        drop_snapshots(self.settings.snapshots_path, segment.prefix)
                    elif taken is not None:
                        done.append(taken)
        return done

    def record_writes(self, eng: Engine, *, load: BulkLoad | None = None) -> None:
        """Before an ingest's writes: keep what they write (``load``: a bulk load's rows;
        else adds, when the engine's snapshot is current), so that the snapshot after it
        is written from that, not read back (``tracker.indexes.recording``)."""
        if not isinstance(eng, LocalCopies) or eng.snapshots is None:
            return
        if load is not None:
            load.record()
        elif eng.snapshots.current(eng.index) is not None:
            eng.index.start_recording(adds=True)

    # -- tail segments (``tracker.indexes.tail``) ----------------------------------------
    def merge_tails(self, engine: str | None = None, *, refresh: bool = True) -> TailsMerged:
        """Merge an engine's tail segments into its index: their mothers' stored
        fingerprints added by the add path (those no longer current taken back), then
        each segment dropped with its local copies. A lookup meanwhile finds a mother in
        both (counted once), never in neither; an ingest meanwhile loads a segment of
        its own, untouched here. ``refresh``: the index's snapshot then refreshed from
        what the adds recorded (an ingest merging first refreshes at its end)."""
        eng = self.engines.get(engine)
        started = time.perf_counter()
        if not isinstance(eng, LocalCopies):
            return TailsMerged(eng.name, 0, 0, 0.0)
        self.reclaim_tails(eng.name, eng.index)
        segments = eng.index.tails()
        if not segments:
            return TailsMerged(eng.name, 0, 0, 0.0)
        if refresh:
            self.record_writes(eng)
        try:
            mothers = self._merge(eng, eng.index, segments)
            if refresh:
                self.refresh_snapshots(wait=False)
        finally:
            if refresh:
                self.drop_recordings()
        return TailsMerged(eng.name, len(segments), mothers, time.perf_counter() - started)

    def _merge(
        self, eng: Engine, index: RedisInvertedIndex, segments: list[RedisInvertedIndex]
    ) -> int:
        """``merge_tails`` of ``segments`` of ``index`` (``eng``'s): how many mothers
        were added."""
        items: list[tuple[int, np.ndarray]] = []
        for segment in segments:
            seqs = tail.loaded_seqs(index, segment)
            current = self.store.current_seqs(seqs)
            for seq in seqs:
                blob = self.store.get_fingerprints(seq, eng.name) if seq in current else None
                if blob is not None:
                    items.append((seq, eng.from_bytes(blob)))
        if items:
            self.grow(eng, sum(fps.size for _, fps in items))
        mothers = 0
        for batch in batches(items, tail.MERGE_BATCH):
            mothers += add_current(self.store, eng, batch)
        for segment in segments:
            tail.drop(index, segment)
            drop_snapshots(self.settings.snapshots_path, segment.prefix)
        return mothers

    def reclaim_tails(self, engine: str, index: RedisInvertedIndex) -> list[int]:
        """The keys (and local copies) of tail segments whose load or drop died
        deleted (``tracker.indexes.tail.reclaim``; a live load's stay): their numbers."""
        folder = self.settings.snapshots_path
        copied = segment_snapshots(folder, index.prefix)
        gone = tail.reclaim(index)
        # Copies of segments no longer read nor loaded: dropped by a merge that died
        # before it deleted their copies (or copied meanwhile by another process).
        keep = {tail.number_of(t) for t in index.tails()} | tail.pending(index)
        for number in sorted((copied - keep) | set(gone)):
            drop_snapshots(folder, index.tail(number).prefix)
        if gone:
            self.repairs.append(
                f"deleted what {len(gone)} tail segment load(s) or merge(s) of the "
                f"{engine} index left when they died / 已清理中断的索引尾段"
            )
        return gone

    def merge_tails_if_due(self, eng: Engine, chars: int) -> TailsMerged | None:
        """Before an ingest of about ``chars`` characters: its engine's tail segments
        merged when this ingest would make one more and they are due
        (``tracker.indexes.tail.merge_due``)."""
        if not isinstance(eng, LocalCopies) or chars < tail.MIN_TAIL_CHARS:
            return None
        self.reclaim_tails(eng.name, eng.index)
        segments = eng.index.tails()
        fields = [s.fields_estimate() for s in segments]
        if not tail.merge_due(eng.index.fields_estimate(), fields):
            return None
        done = self.merge_tails(eng.name, refresh=False)
        self.repairs.append(
            f"merged {done.segments} tail segment(s) of the {done.engine} index into it first "
            f"({done.seconds:.1f} s; with `yinji serve` its workers merge them in the "
            "background) / 已先合并索引尾段"
        )
        return done

    def drop_recordings(self) -> None:
        """What ``record_writes`` kept, dropped (used or not)."""
        for name in self.engines.indexed():
            eng = self.engines.get(name)
            if isinstance(eng, LocalCopies):
                eng.index.drop_recordings()

    def fresh_snapshots(self, warnings: list[str]) -> float:
        """After an ingest: ``refresh_snapshots`` without waiting for another process's
        take, so that checks answer from local memory at once; the seconds it took when
        it took one (else 0). A failure is a warning (checks then ask Redis for what
        changed); the ingest itself is stored."""
        started = time.perf_counter()
        try:
            taken = self.refresh_snapshots(wait=False)
        except Exception as exc:
            warnings.append(f"no fresh snapshot of the index after this ingest: {exc}")
            return 0.0
        finally:
            self.drop_recordings()
        if any(isinstance(t, SnapshotTaken) for t in taken):
            return time.perf_counter() - started
        return 0.0
