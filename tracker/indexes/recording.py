"""What a bulk load wrote, kept as snapshot rows (``tracker.indexes.snapshot``): an
ingest into an empty index leaves a local snapshot without reading the index back.

A ``Recording`` is attached to an index (``RedisInvertedIndex.start_recording``) before
a bulk load; every ``load_pairs`` adds the rows of the fields it wrote (a field's seqs
in arrival order, each once; a field of more than ``stop_df`` seqs is one ``STOP_SEQ``
row, as the snapshot stores a stop marker). It holds only if the load's writes were the
only ones: the version numbers its own writes got (``n`` of ``{prefix}:version``) must
follow each other from where it started, and any other write through the same index
object (an add, a remove, a reshard) spoils it. ``take_snapshot`` then writes these rows
instead of copying the index, if the index is still at the version of the last write.
"""

from __future__ import annotations

import threading

import numpy as np

STOP_SEQ = np.uint32(0xFFFFFFFF)  # never a mother's seq (they count up from 1)
ADDS_KEPT = 20_000_000  # postings of adds kept at most (~240 MB); past it: read back
ROWS_KEPT = 150_000_000  # rows of a bulk load kept at most (~1.8 GB, about 1 B characters)


class Recording:
    """The rows of a bulk load (``adds`` False), or the postings added to an index whose
    snapshot was current (``adds`` True), and the versions their writes got (module
    docstring)."""

    def __init__(self, start: int, *, adds: bool = False) -> None:
        self.start = start  # the version's n before the load
        self.adds = adds
        self._added: list[tuple[np.ndarray, np.ndarray]] = []
        self._held = 0
        self.spoiled = False
        self._got: list[int] = []
        self._chunks: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._lock = threading.Lock()

    def bumped(self, n: int, *, own: bool) -> None:
        """A write raised the version to ``n``; ``own``: one of the load's."""
        with self._lock:
            self._got.append(n)
            if not own:  # rows kept so far are of no use now
                self.spoiled = True
                self._chunks, self._added = [], []

    def added(self, ident: np.ndarray, seqs: np.ndarray) -> None:
        """The (identity, seq) postings of one add, in the order the add writes them."""
        with self._lock:
            self._held += ident.size
            if self.spoiled or not self.adds or self._held > ADDS_KEPT:
                self.spoiled = True
                self._added = []
                return
            self._added.append((ident, seqs.astype(np.uint32)))

    def postings_added(self) -> tuple[np.ndarray, np.ndarray]:
        """Every posting added, in arrival order."""
        with self._lock:
            if not self._added:
                return np.zeros(0, np.uint64), np.zeros(0, np.uint32)
            return (
                np.concatenate([a[0] for a in self._added]),
                np.concatenate([a[1] for a in self._added]),
            )

    def add(
        self,
        ident: np.ndarray,
        seqs: np.ndarray,
        starts: np.ndarray,
        repeated: np.ndarray,
        stop_df: int,
    ) -> None:
        """The fields of one ``load_pairs``: identities sorted (``ident``, arrival order
        within a field), ``starts`` the first row of each field, ``repeated`` the rows
        whose seq came before in their field (``bulk.fill_values`` finds them)."""
        n = ident.size
        with self._lock:
            self._held += n
            if self.spoiled or self.adds or self._held > ROWS_KEPT:
                self.spoiled = True
                self._chunks = []
                return
        if n == 0:
            return
        field = np.repeat(np.arange(starts.size), np.diff(np.append(starts, n)))
        count = np.bincount(field[~repeated], minlength=starts.size)
        stop = count > stop_df
        kept = np.flatnonzero(~repeated & ~stop[field])  # each seq once a field, in order
        rows = np.concatenate([ident[kept], ident[starts[stop]]])
        got = np.concatenate([seqs[kept], np.full(int(stop.sum()), STOP_SEQ, np.uint32)])
        if stop.any():  # (the kept rows are in identity order already)
            order = np.argsort(rows, kind="stable")
            rows, got = rows[order], got[order]
        with self._lock:
            self._chunks.append((int(rows[0]), rows, got.astype(np.uint32)))

    def holds_at(self, n: int) -> bool:
        """Whether the rows are the index at version ``n``: only the load wrote, and
        ``n`` is its last write."""
        with self._lock:
            got = sorted(self._got)
            return (
                not self.spoiled
                and bool(self._chunks or self._added)
                and got == list(range(self.start + 1, self.start + 1 + len(got)))
                and got[-1] == n
            )

    def chunks(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The rows in identity order, in chunks (as ``snapshot._copy`` gives them)."""
        with self._lock:
            ordered = sorted(self._chunks, key=lambda c: c[0])
            return [c[1] for c in ordered], [c[2] for c in ordered]
