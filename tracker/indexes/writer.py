"""Index writes of an ingest, gathered over store batches and written in a thread of
their own while the next batches are read, fingerprinted and stored (``IndexWriter``);
and where a bulk load spills (``bulk_folder``)."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import numpy as np

from tracker.engines import Engine
from tracker.engines.capabilities import BulkLoad
from tracker.plumbing.config import Settings
from tracker.store import Store

T = TypeVar("T")
#: ``(seq, fingerprints)`` of mothers, by engine name.
Writes = dict[str, list[tuple[int, np.ndarray]]]


def bulk_folder(settings: Settings) -> Path:
    """A new folder for a bulk load's spill files: under the data folder (big enough
    for the store, hence for 12 bytes a posting), else the system's temp folder. The
    folder itself is made only when a load spills."""
    base = Path(settings.data_dir)
    if not os.access(base if base.exists() else base.parent, os.W_OK):
        base = Path(tempfile.gettempdir())
    return base / f".bulk-{os.getpid()}-{time.monotonic_ns()}"


def add_current(store: Store, eng: Engine, items: list[tuple[int, np.ndarray]]) -> int:
    """Add mothers read from the store, then take back those that are no longer
    current: a writer that replaced (or deleted) one after it was read removed its
    postings before they were added here. How many stayed."""
    eng.add(items)
    return len(items) - take_back(store, eng, items)


def take_back(store: Store, eng: Engine, items: list[tuple[int, np.ndarray]]) -> int:
    """After ``items`` were written to ``eng``'s index: those no longer current in
    ``store`` removed again (they were read before a writer replaced or deleted them,
    and its removal may have come before this write). How many."""
    current = store.current_seqs(seq for seq, _ in items)
    gone = [(seq, fps) for seq, fps in items if seq not in current]
    if gone:
        eng.remove(gone)
    return len(gone)


def batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter, none empty)."""
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


#: Index writes are gathered over store batches up to about this many postings: a
#: Redis bucket then gets tens of postings per write instead of ~5 (at 2**17 buckets),
#: written by one HMGET and one HSET inside the Lua call rather than one call per
#: posting (7.2 M postings into 2**17 buckets: 9.0 µs a posting at 256 works a write,
#: 5.8 µs at 1,280, on the shared VM; docs/BENCHMARKS.md, scale section).
INDEX_FLUSH_POSTINGS = 3_000_000


class IndexWriter:
    """Index writes gathered over store batches (``collect``), then one write at a time
    in a thread of its own: while Redis adds one (its own process; the socket wait
    releases the GIL), this process reads, fingerprints and stores the next batches.
    ``finish`` (store reads and marks) runs in the caller's thread, whose store
    connection it needs."""

    def __init__(
        self,
        expected_chars: int = 0,
        flush_postings: int | None = None,
        *,
        snapshot_floor: int = 0,
    ) -> None:
        """``snapshot_floor``: the fewest characters of a library whose index a snapshot
        is taken of (``Settings.snapshot_min_chars``; ``snapshot_may_follow``)."""
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="yinji-index")
        self._pending: tuple[Future[None], Callable[[], None]] | None = None
        self.chars_left = expected_chars
        self.texts: dict[int, int] = {}  # seq -> characters, of the batch being stored
        self.flush_postings = INDEX_FLUSH_POSTINGS if flush_postings is None else flush_postings
        self.pending = 0  # postings gathered, not yet submitted
        self._stale: Writes = {}
        self._fresh: Writes = {}
        self._chars = 0
        self.loaders: dict[str, BulkLoad] = {}  # engine -> its bulk loader (an empty index)
        self._gathering: list[Future[None]] = []  # bulk loaders' gathers, in this thread
        self.gathered: dict[str, int] = {}  # engine -> characters handed to its loader
        self.snapshot_floor = snapshot_floor

    def gather_all(self, fresh: Writes) -> None:
        """Each bulk loader's share of ``fresh`` (taken out of it) ``gather``-ed."""
        for name in self.loaders:
            self.gather(name, fresh.pop(name, []))

    def snapshot_may_follow(self, name: str) -> bool:
        """Whether a snapshot may follow engine ``name``'s bulk load: it gathered at
        least ``snapshot_floor`` characters of text (a load goes into an empty index, so
        these are all its library's, and a library of fewer is not copied:
        ``IndexAdmin.refresh_snapshots``). Without one, the load keeps no rows for it
        (their sort is on the load's critical path)."""
        return self.gathered.get(name, 0) >= self.snapshot_floor

    def gather(self, name: str, items: list[tuple[int, np.ndarray]]) -> None:
        """``extend(items)`` of engine ``name``'s bulk loader in the writer's thread, in
        order (its edition groups are asked of Redis there while this process
        fingerprints and stores the next batch); its error is raised by the next
        ``submit``, ``drain`` or ``close``."""
        if items:
            # (``texts`` still holds this batch's characters: ``collect`` follows)
            chars = sum(self.texts.get(seq, 0) for seq, _ in items)
            self.gathered[name] = self.gathered.get(name, 0) + chars
            self._gathering.append(self._pool.submit(self.loaders[name].extend, items))

    def collect(
        self,
        stale: Writes,
        fresh: Writes,
    ) -> None:
        """Gather one store batch's index writes."""
        self._chars += self.take(fresh)[0]
        for into, writes in ((self._stale, stale), (self._fresh, fresh)):
            for name, items in writes.items():
                into.setdefault(name, []).extend(items)
                self.pending += sum(len(f) for _, f in items)

    def pending_writes(
        self,
    ) -> tuple[Writes, Writes, tuple[int, int]]:
        """(stale, fresh, (their characters, characters still expected)), handed over
        and forgotten here."""
        out = (self._stale, self._fresh, (self._chars, self.chars_left))
        self._stale, self._fresh, self._chars, self.pending = {}, {}, 0, 0
        return out

    def take(self, fresh: Writes) -> tuple[int, int]:
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
        gathering, self._gathering = self._gathering, []
        for gather in gathering:
            gather.result()  # a bulk loader's gather's error, raised here
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
