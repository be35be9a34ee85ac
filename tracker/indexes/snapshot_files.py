"""The files of a snapshot of the inverted index (``tracker.indexes.snapshot``): where
they live, how a snapshot is read (``Snapshot``, memory-mapped) and written (``write_rows``
to a temporary folder, ``finish`` to name it and rename it into place). The files and
their format: the module docstring of ``tracker.indexes.snapshot``.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tracker.common.timefmt import iso_utc
from tracker.indexes.keys import mix64
from tracker.indexes.recording import STOP_SEQ

if TYPE_CHECKING:
    from tracker.indexes.inverted import RedisInvertedIndex

FORMAT = 1  # of the files


def folder_name(prefix: str) -> str:
    """The file-name-safe name of an index (``yinji:daguan`` -> ``yinji_daguan``)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in prefix)


def snapshot_path(folder: Path, prefix: str, version: str) -> Path:
    epoch, n = version.split("/")
    return folder / f"{folder_name(prefix)}-{epoch}-{n}"


class Snapshot:
    """One snapshot, memory-mapped: ``lookup`` answers like ``RedisInvertedIndex.lookup``
    of the index at ``version``."""

    def __init__(self, path: Path) -> None:
        meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            raise ValueError(f"{path}: snapshot format {meta.get('format')!r}, not {FORMAT}")
        self.path = path
        self.version: str = meta["version"]
        self.ident_bits: int = int(meta["ident_bits"])
        self.meta = meta
        self.ident = np.load(path / "ident.npy", mmap_mode="r")
        self.seq = np.load(path / "seq.npy", mmap_mode="r")
        self.dir = np.load(path / "dir.npy", mmap_mode="r")
        self.dir_bits = int(meta["dir_bits"])
        # The layout it was copied in (snapshots written before the overlay have none:
        # they answer only at their exact version).
        self.layout: str | None = meta.get("layout")
        self.bucket_bits: int | None = meta.get("bucket_bits")
        if self.ident.shape != self.seq.shape or self.dir.size != (1 << self.dir_bits) + 1:
            raise ValueError(f"{path}: its arrays do not fit together")

    def lookup(
        self, fps: np.ndarray, *, stop_mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """``(fp_index, seqs, stopped)`` of distinct fingerprints, as the index gives them:
        postings in fingerprint order, a field's seqs in their stored order (stop words
        marked in ``stop_mask`` when given)."""
        fps = np.asarray(fps, dtype=np.uint64)
        if fps.size == 0 or self.ident.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.uint32), 0
        wanted = mix64(fps) >> np.uint64(64 - self.ident_bits)
        # The directory narrows each search to a few rows: a plain binary search over
        # the whole array touched ~24 scattered pages a fingerprint (~4 ms a check at
        # 100 M characters); these few rows share one or two.
        slot = (wanted >> np.uint64(self.ident_bits - self.dir_bits)).astype(np.int64)
        lo = self.dir[slot].astype(np.int64)
        hi = self.dir[slot + 1].astype(np.int64)
        lo = _lower_bound(self.ident, wanted, lo, hi.copy(), strict=True)
        count = _lower_bound(self.ident, wanted, lo.copy(), hi, strict=False) - lo
        found = np.flatnonzero(count)
        stop = np.zeros(fps.size, dtype=bool)
        stop[found] = self.seq[lo[found]] == STOP_SEQ  # a stop marker is its field's one row
        count[stop] = 0
        if stop_mask is not None:
            stop_mask |= stop
        total = int(count.sum())
        fp_index = np.repeat(np.arange(fps.size, dtype=np.int64), count)
        within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
        seqs = np.asarray(self.seq[np.repeat(lo, count) + within], dtype=np.uint32)
        return fp_index, seqs, int(stop.sum())

    def dirty(self, fps: np.ndarray, bitmap: bytes) -> np.ndarray:
        """Which fingerprints live in a bucket that ``bitmap`` (SETBIT order, in this
        snapshot's layout) marks as written since the snapshot."""
        assert self.bucket_bits is not None
        marks = np.frombuffer(bitmap, dtype=np.uint8)
        wanted = mix64(np.asarray(fps, dtype=np.uint64)) >> np.uint64(64 - self.ident_bits)
        bucket = (wanted >> np.uint64(self.ident_bits - self.bucket_bits)).astype(np.int64)
        byte = bucket >> 3
        inside = byte < marks.size
        out = np.zeros(bucket.size, dtype=bool)
        out[inside] = (marks[byte[inside]] >> (7 - (bucket[inside] & 7)).astype(np.uint8)) & 1 == 1
        return out

    def bucket_bounds(self) -> np.ndarray:
        """``rows[b]``: the first row of bucket ``b`` (``2**bucket_bits + 1`` entries)."""
        assert self.bucket_bits is not None
        heads = np.arange((1 << self.bucket_bits) + 1, dtype=np.uint64) << np.uint64(
            self.ident_bits - self.bucket_bits
        )
        return np.searchsorted(self.ident, heads, side="left").astype(np.int64)


def _lower_bound(
    rows: np.ndarray, wanted: np.ndarray, lo: np.ndarray, hi: np.ndarray, *, strict: bool
) -> np.ndarray:
    """Per query, the first row in ``[lo, hi)`` with ``rows >= wanted`` (``strict``) or
    ``rows > wanted``: a binary search run for all queries at once."""
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) >> 1
        value = rows[np.where(open_, mid, 0)]
        below = (value < wanted) if strict else (value <= wanted)
        go_up = open_ & below
        lo = np.where(go_up, mid + 1, lo)
        hi = np.where(open_ & ~below, mid, hi)


def directory(chunks: list[np.ndarray], ident_bits: int, dir_bits: int) -> np.ndarray:
    """``dir[s]``: the first row whose identity's top ``dir_bits`` are ``s`` or more, of
    the sorted identities ``chunks`` one after the other."""
    counts = np.zeros(1 << dir_bits, dtype=np.int64)
    for chunk in chunks:
        top = (chunk >> np.uint64(ident_bits - dir_bits)).astype(np.int64)
        counts += np.bincount(top, minlength=1 << dir_bits)
    out = np.zeros((1 << dir_bits) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out.astype(np.uint32 if out[-1] < 2**32 else np.uint64)


def directory_bits(rows: int, ident_bits: int) -> int:
    """About 8 rows a directory slot."""
    return max(1, min(ident_bits, (max(rows, 1) // 8).bit_length()))


@dataclass(frozen=True)
class Files:
    """A snapshot's arrays written to ``tmp`` (not yet named nor in place), and what
    its meta says of them."""

    tmp: Path
    rows: int
    stopped: int
    dir_bits: int


def write_rows(
    folder: Path, ident_bits: int, idents: list[np.ndarray], seqs: list[np.ndarray]
) -> Files:
    """The arrays of a snapshot in a new temporary folder under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = sum(c.size for c in idents)
    stopped = sum(int(np.count_nonzero(c == STOP_SEQ)) for c in seqs)
    tmp = folder / f".tmp-{uuid.uuid4().hex}"
    tmp.mkdir()
    try:
        # Chunks come sorted and in increasing identity ranges (buckets in order):
        # written one after the other, never all in memory twice.
        dir_bits = directory_bits(rows, ident_bits)
        np.save(tmp / "dir.npy", directory(idents, ident_bits, dir_bits))
        write_chunks(tmp / "ident.npy", idents, np.uint64, rows)
        write_chunks(tmp / "seq.npy", seqs, np.uint32, rows)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Files(tmp, rows, stopped, dir_bits)


def finish(files: Files, final: Path, index: RedisInvertedIndex, version: str, layout: str) -> None:
    """The snapshot named (its meta) and renamed into place."""
    try:
        meta = {
            "format": FORMAT,
            "index": index.prefix,
            "version": version,
            "ident_bits": index.ident_bits,
            "bucket_bits": index.bucket_bits,
            "layout": layout,
            "dir_bits": files.dir_bits,
            "postings": files.rows - files.stopped,
            "stop_fingerprints": files.stopped,
            "taken_at": iso_utc(datetime.now(UTC)),
        }
        (files.tmp / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
        os.replace(files.tmp, final)
    except BaseException:
        shutil.rmtree(files.tmp, ignore_errors=True)
        raise


def write_chunks(path: Path, chunks: list[np.ndarray], dtype: type[np.generic], rows: int) -> None:
    """Chunks into one .npy file, each chunk freed once written."""
    out = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=(rows,))
    at = 0
    chunks.reverse()
    while chunks:
        chunk = chunks.pop()
        out[at : at + chunk.size] = chunk
        at += chunk.size
    out.flush()
    del out
